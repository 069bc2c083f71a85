"""Run what the events of a test's steps would queue, as a busy worker would.

The callbacks each step registers on commit are captured (nothing goes to a broker); the
tasks named in ``at_once`` run as soon as they are queued (the fulfilment of an approved
order, say), the mail tasks wait until `deliver`: so a mail is sent after every step has
moved its object on, as when the mail queue lags behind, and may be delivered twice, as a
retried task is."""

from collections.abc import Callable

MAIL_TASKS = frozenset(
    {
        "billing.tasks.order_email_send",
        "billing.tasks.budget_alert_email_send",
        "scheduling.tasks.reservation_email_send",
        "scheduling.tasks.quota_request_email_send",
        "tenants.tasks.invitation_email_send",
    }
)


class Worker:
    def __init__(
        self, capture: Callable, *, at_once: tuple[str, ...] = ("billing.tasks.order_fulfil",)
    ):
        self.capture = capture
        self.at_once = frozenset(at_once)
        self.mails: list[tuple[object, dict]] = []
        self.delivered: list[tuple[object, dict]] = []

    def step(self, service: Callable, /, **kwargs):
        """Call ``service`` and take what its commit queues."""
        with self.capture() as callbacks:
            result = service(**kwargs)
        self._take(callbacks)
        return result

    def _take(self, callbacks) -> None:
        for callback in callbacks:
            task = getattr(callback.func, "__self__", None)
            name = getattr(task, "name", "")
            if name in MAIL_TASKS:
                self.mails.append((task, dict(callback.keywords)))
            elif name in self.at_once:
                with self.capture() as more:
                    task(**callback.keywords)
                self._take(more)

    def deliver(self) -> int:
        """Run the mail tasks queued so far (each as the worker would), in queue order."""
        queued, self.mails = self.mails, []
        for task, kwargs in queued:
            task(**kwargs)
        self.delivered += queued
        return len(queued)

    def redeliver(self) -> int:
        """Run every mail task delivered so far once more: a retried task."""
        for task, kwargs in self.delivered:
            task(**kwargs)
        return len(self.delivered)
