from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        from portal.events import Event, ExtensionPoint, check_register, subscribe
        from portal.metrics import collector_register

        from . import insights, metrics, selectors, services, tasks

        subscribe(Event.ORDER_APPROVED, tasks.order_fulfil.delay)
        subscribe(Event.ORDER_CHANGED, tasks.order_email_send.delay)
        # A cancelled reservation is charged by its terms (billing_reconcile catches up if lost).
        subscribe(Event.RESERVATION_CHANGED, tasks.cancellation_charge_record.delay)
        subscribe(Event.BUDGET_THRESHOLD_CROSSED, tasks.budget_alert_email_send.delay)
        # A spent hard-stop budget refuses new work; scheduling only runs the check.
        check_register(ExtensionPoint.WORKLOAD_SUBMISSION, services.budget_submission_check)
        # ... and holds the queued work of its projects; scheduling's cycle only asks.
        check_register(ExtensionPoint.PENDING_HOLD, services.budget_pending_hold)
        # Use with no price in force, on the operators' insights page.
        check_register(ExtensionPoint.OPERATOR_INSIGHTS, insights.unpriced_usage)
        # What-ifs and replays show costs at catalog prices; scheduling only asks.
        check_register(ExtensionPoint.USAGE_PRICES, selectors.usage_prices)
        # GPU-hours per organization and class on /metrics, from the rated records.
        collector_register("billing", metrics.billing_metrics)
