from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model

        from portal.events import Event, subscribe

        from . import tasks
        from .accounts import user_display

        # Wherever Django names a user (admin's foreign keys and choices, its history, the
        # labels of audit events), the name is the e-mail address.
        get_user_model().__str__ = user_display

        subscribe(Event.INVITATION_CREATED, tasks.invitation_email_send.delay)
