from datetime import timedelta

from celery import shared_task

from portal import clock

from . import services

RETRY = {"autoretry_for": (OSError,), "retry_backoff": True, "retry_jitter": True, "max_retries": 8}


@shared_task(**RETRY)
def order_fulfil(order_id: str) -> str | None:
    order = services.order_fulfil(order_id=order_id)
    return order.state if order else None


@shared_task(**RETRY)
def order_email_send(order_id: str, change: str = "", occurrence: str = "") -> int:
    return services.order_email_send(order_id=order_id, change=change, occurrence=occurrence)


@shared_task(**RETRY)
def cancellation_charge_record(reservation_id: str, **_event) -> str | None:
    charge = services.cancellation_charge_record(reservation_id=reservation_id)
    return str(charge.amount) if charge else None


@shared_task(**RETRY)
def billing_reconcile() -> dict:
    return services.billing_reconcile()


@shared_task(**RETRY)
def usage_meter() -> dict:
    return services.usage_meter()


@shared_task(**RETRY)
def metering_partitions_ensure() -> list[str]:
    return services.metering_partitions_ensure()


@shared_task(**RETRY)
def usage_reconcile_yesterday() -> bool:
    """Meter first, then compare yesterday (UTC) placed with billed; True when they agree."""
    services.usage_meter()
    today = clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return services.usage_reconcile(starts_at=today - timedelta(days=1), ends_at=today).balanced


@shared_task(**RETRY)
def invoices_draft() -> int:
    return services.invoices_draft_recent()


@shared_task(**RETRY)
def budgets_check() -> int:
    return services.budgets_check()


@shared_task(**RETRY)
def budget_alert_email_send(alert_id: int) -> bool:
    return services.budget_alert_email_send(alert_id=alert_id)
