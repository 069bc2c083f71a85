from celery import shared_task

from . import services


@shared_task(autoretry_for=(OSError,), retry_backoff=True, retry_jitter=True, max_retries=8)
def order_fulfil(order_id: str) -> str | None:
    order = services.order_fulfil(order_id=order_id)
    return order.state if order else None
