from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        from portal.events import Event, subscribe

        from . import tasks

        subscribe(Event.ORDER_APPROVED, tasks.order_fulfil.delay)
        subscribe(Event.ORDER_CHANGED, tasks.order_email_send.delay)
