"""The audit trail: every write of every app leaves one event, inside the write's transaction."""

from ..models import AuditEvent, Organization
from ..permissions import Caller


def audit_event(
    *,
    caller: Caller | None,
    organization: Organization | None,
    action: str,
    target: object,
    payload: dict | None = None,
) -> AuditEvent:
    """An unsaved audit event, for writing many at once."""
    user = caller.user if caller else None
    return AuditEvent(
        organization=organization,
        actor=user,
        actor_email=getattr(user, "email", "") or "",
        via_token=caller.token if caller else None,
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        target_label=str(target)[:200],
        payload=payload or {},
    )


def audit_record(**event) -> AuditEvent:
    """Record one audit event (the keyword arguments of `audit_event`)."""
    audited = audit_event(**event)
    audited.save()
    return audited
