"""The `webhooks` queue's tasks: thin, ids in, a service called."""

from celery import shared_task

from . import services

RETRY = {"autoretry_for": (OSError,), "retry_backoff": True, "retry_jitter": True, "max_retries": 8}


@shared_task(**RETRY)
def webhook_deliveries_make(event: str, event_id: str, payload: dict) -> int:
    return len(services.deliveries_make(event=event, event_id=event_id, payload=payload))


# An attempt waits for its receiver at most PORTAL_WEBHOOKS_TIMEOUT_SECONDS to connect and as
# much for each read; the time limit bounds a receiver that trickles its answer.
@shared_task(time_limit=60, soft_time_limit=50)
def webhook_delivery_attempt(delivery_id: str) -> str | None:
    delivery = services.delivery_attempt(delivery_id=delivery_id)
    return delivery.state if delivery else None


@shared_task(**RETRY)
def webhook_deliveries_due() -> int:
    return len(services.deliveries_due())
