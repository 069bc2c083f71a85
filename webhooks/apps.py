import uuid

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from portal.events import Event, subscribe

        from .rendering import ROUTES

        for event in ROUTES:
            subscribe(event, _deliveries_make_queuer(event))
        subscribe(Event.WEBHOOK_DELIVERIES_DUE, deliveries_attempt_queue)


_queuers: dict = {}


def _deliveries_make_queuer(event):
    """The subscriber of `event` (one per event, so that subscribing again adds none): it
    queues the making of the event's deliveries, under an id of this publication, when any
    endpoint is active (a statement instead of a task per event where none is)."""
    if event not in _queuers:

        def queue(**payload) -> None:
            from .selectors import endpoints_active
            from .tasks import webhook_deliveries_make

            if not endpoints_active():
                return
            webhook_deliveries_make.delay(
                event=str(event), event_id=str(uuid.uuid4()), payload=payload
            )

        _queuers[event] = queue
    return _queuers[event]


def deliveries_attempt_queue(delivery_ids: list[str]) -> None:
    from .tasks import webhook_delivery_attempt

    for delivery_id in delivery_ids:
        webhook_delivery_attempt.delay(delivery_id=delivery_id)
