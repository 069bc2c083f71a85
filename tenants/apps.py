from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        from portal.events import Event, subscribe

        from . import tasks

        subscribe(Event.INVITATION_CREATED, tasks.invitation_email_send.delay)
