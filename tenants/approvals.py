"""One approval workflow for what a tenant asks and an operator decides: orders (billing),
reservations and quota requests (scheduling).

    submitted --approve--> approved --fulfil--> fulfilled | failed
        '--reject (with a reason)--> rejected
    submitted (or, where the kind allows, approved) --cancel--> cancelled

One verb per step in every kind: the services ``<kind>_approve``, ``<kind>_reject``,
``<kind>_cancel`` (and ``order_fulfil``), the audit actions ``<kind>.approve``,
``<kind>.reject``, ``<kind>.cancel``, and the operators' admin actions ``approve`` and
``reject`` (``portal.admin.ApprovalAdmin``).

Each kind keeps the states its rows already store and maps them onto the workflow's in its
``Workflow``: a reservation or a quota request is submitted as "requested"; a quota request's
rejected state is stored as "denied" (the value API users read); after its approval a
reservation opens and completes with time and a quota request's grant starts and reverts with
time, while an order is fulfilled, or fails, by the worker. Quota requests are not cancelled
by their organization (there was never such a step).

A step locks the row, checks the state it leaves, writes the state it reaches with who decided
and when, and ends with ``Workflow.audited``, the one "audit and publish" step: an AuditEvent
``<kind>.<step>``, then the kind's event with the state reached (``change``), on which its
mail and other subscribers act after commit. What an approval gives in a kind (a quota
request's grant) is passed to ``approve`` as its ``effect``, and done in its transaction.

It lives in tenants, not in the kernel (``portal/``): every step is authorized for a
``Caller`` and recorded as an ``AuditEvent``, and both belong to tenants, the one app that
billing and scheduling may both import (neither may import the other). In the kernel the audit
step would have to be passed in or registered from outside, for no gain.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from portal import clock
from portal.errors import Conflict

from .models import AuditEvent
from .permissions import Action, Caller, authorize, require_operator
from .services import audit_record


@dataclass(frozen=True)
class Workflow:
    """How one kind of request goes through the workflow: its model, the states it stores for
    the workflow's, what its audit events record and what it publishes."""

    model: type[models.Model]
    # The audit actions' prefix ("order" -> "order.approve") and the noun messages use.
    name: str
    noun: str
    submitted: str
    approved: str
    rejected: str
    # What a row is loaded with when locked.
    related: tuple[str, ...]
    # What an audit event of a step records of the row.
    payload: Callable[[Any], dict]
    # Publish the kind's event for a step: (row, change, audit event); ``change`` is the
    # state reached unless the step names another.
    publish: Callable[[Any, str, AuditEvent], None]
    # The state cancelled reaches, those its organization may cancel from, and the action
    # that allows it (none: the kind is not cancelled).
    cancelled: str = ""
    cancellable: tuple[str, ...] = ()
    cancel_action: Action | None = None
    # The conflict codes API users read: of a decision on one not waiting, of a cancellation.
    decide_code: str = "not_requested"
    cancel_code: str = "not_requested"

    def lock(self, row, *states: str, code: str | None = None):
        """The row again, locked (the lock is its own, not its relations'), in one of
        ``states`` or a Conflict."""
        locked = (
            self.model.objects.select_for_update(of=("self",))
            .select_related(*self.related)
            .get(pk=row.pk)
        )
        if locked.state not in states:
            raise Conflict(f"The {self.noun} is {locked.state}.", code=code or self.decide_code)
        return locked

    def audited(
        self, caller: Caller | None, row, step: str, *, change: str = "", **payload
    ) -> AuditEvent:
        """The one "audit and publish" step: record ``<kind>.<step>`` of the row (with
        ``payload`` besides the kind's own), then publish the kind's event."""
        audited = audit_record(
            caller=caller,
            organization=row.organization,
            action=f"{self.name}.{step}",
            target=row,
            payload=self.payload(row) | payload,
        )
        self.publish(row, change or row.state, audited)
        return audited

    def approve(self, *, caller: Caller, row, effect: Callable[[Any], None] | None = None):
        """An operator approves one that waits; ``effect(locked)`` first does what the
        approval gives in the kind (a quota request's grant), in the same transaction."""
        require_operator(caller)
        with transaction.atomic():
            locked = self.lock(row, self.submitted)
            if effect is not None:
                effect(locked)
            locked.state = self.approved
            self._decided(caller, locked)
            self.audited(caller, locked, "approve")
        return locked

    def reject(self, *, caller: Caller, row, reason: str):
        """An operator rejects one that waits, saying why."""
        require_operator(caller)
        if not reason.strip():
            raise ValidationError({"reason": [f"Say why the {self.noun} is rejected."]})
        with transaction.atomic():
            locked = self.lock(row, self.submitted)
            locked.state = self.rejected
            locked.decision_reason = reason.strip()
            self._decided(caller, locked)
            self.audited(caller, locked, "reject", reason=locked.decision_reason)
        return locked

    def cancel(self, *, caller: Caller, row, **changes):
        """Its organization (an owner or admin) cancels one not yet under way; ``changes``
        are further fields to write with the state (when it was cancelled)."""
        authorize(caller=caller, organization=row.organization, action=self.cancel_action)
        with transaction.atomic():
            locked = self.lock(row, *self.cancellable, code=self.cancel_code)
            locked.state = self.cancelled
            for field, value in changes.items():
                setattr(locked, field, value)
            locked.save(update_fields=["state", *changes])
            self.audited(caller, locked, "cancel")
        return locked

    @staticmethod
    def _decided(caller: Caller, locked) -> None:
        locked.decided_by = caller.user
        locked.decided_at = clock.now()
        locked.save()
