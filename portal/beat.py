"""Beat's scheduler: django-celery-beat's, whose periodic tasks live in the database."""

from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler


class DefaultsOnlyDatabaseScheduler(DatabaseScheduler):
    """Installs CELERY_BEAT_SCHEDULE's entries only where the database has none of that name.

    django-celery-beat's own scheduler writes them over the stored ones at every start, which
    would undo what operators changed in admin (an interval, a disabled entry).
    """

    def setup_schedule(self) -> None:
        self.install_default_entries(self.schedule)
        stored = set(PeriodicTask.objects.values_list("name", flat=True))
        defaults = self.app.conf.beat_schedule.items()
        self.update_from_dict({name: entry for name, entry in defaults if name not in stored})
