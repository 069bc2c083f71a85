from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        from portal.events import Event, subscribe

        from . import tasks

        subscribe(Event.ORDER_APPROVED, tasks.order_fulfil.delay)
        subscribe(Event.ORDER_CHANGED, tasks.order_email_send.delay)
        # A cancelled reservation is charged by its terms (billing_reconcile catches up if lost).
        subscribe(Event.RESERVATION_CHANGED, tasks.cancellation_charge_record.delay)
