"""Webhooks: an organization's owners and admins register endpoints; each event of a type an
endpoint chose becomes one delivery to it, sent after the event's commit by the `webhooks`
queue's worker, signed, and retried with exponential backoff for most of a day (RETRY_DELAYS)
until the receiver answers 2xx. Each attempt is recorded; a delivery that ended (delivered or
failed) may be sent again on demand, as one more attempt under the same id."""

import json
import secrets
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from portal import clock
from portal.errors import Conflict
from portal.events import Event, publish
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize
from tenants.services import audit_record

from . import signing, targets
from .models import Attempt, Delivery, Endpoint, EventType
from .rendering import route_of

# After the nth automatic attempt failed, the next comes this much later: x4 each time, the
# last attempt (the 7th) 22 h 45 min after the first; then the delivery has failed.
RETRY_DELAYS = tuple(timedelta(minutes=4**n) for n in range(6))
# A delivery queued for an attempt is not queued again by the sweep before this has passed
# (a lost task is retried then).
LEASE = timedelta(minutes=5)
SECRET_PREFIX = "whsec_"
SECRET_MIN, SECRET_MAX = 16, 200
WAITING = (Delivery.State.PENDING, Delivery.State.REDELIVERING)


def _checked(
    *, url: str | None, event_types: list[str] | None, secret: str | None, errors: dict
) -> None:
    if url is not None:
        try:
            targets.target_addresses(url, allow_private=settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE)
        except targets.TargetRefused as refused:
            errors["url"] = [str(refused)]
    if event_types is not None:
        unknown = sorted(set(event_types) - set(EventType.values))
        if unknown:
            errors["event_types"] = [f"Unknown event type: {', '.join(unknown)}."]
        elif not event_types:
            errors["event_types"] = ["At least one event type."]
    spaced = secret is not None and any(character.isspace() for character in secret)
    if secret is not None and (
        spaced or not secret.isprintable() or not SECRET_MIN <= len(secret) <= SECRET_MAX
    ):
        errors["secret"] = [f"{SECRET_MIN} to {SECRET_MAX} printable characters, no spaces."]


def endpoint_create(
    *,
    caller: Caller,
    organization: Organization,
    url: str,
    event_types: list[str],
    description: str = "",
    secret: str | None = None,
    is_active: bool = True,
) -> tuple[Endpoint, str]:
    """Register an endpoint; the secret (generated unless given) is returned to be shown once."""
    authorize(caller=caller, organization=organization, action=Action.WEBHOOK_MANAGE)
    errors: dict[str, list[str]] = {}
    _checked(url=url, event_types=event_types, secret=secret, errors=errors)
    if errors:
        raise ValidationError(errors)
    secret = secret or f"{SECRET_PREFIX}{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        endpoint = Endpoint.objects.create(
            organization=organization,
            url=url,
            description=description,
            secret=secret,
            event_types=sorted(set(event_types)),
            is_active=is_active,
            created_by=caller.user,
        )
        _audited(caller, endpoint, "webhook.create")
    return endpoint, secret


def endpoint_update(*, caller: Caller, endpoint: Endpoint, **changes) -> Endpoint:
    """Change an endpoint's URL, event types, description, secret or whether it is active
    (paused, nothing is delivered to it; its waiting deliveries go on when it is resumed)."""
    authorize(caller=caller, organization=endpoint.organization, action=Action.WEBHOOK_MANAGE)
    errors: dict[str, list[str]] = {}
    _checked(
        url=changes.get("url"),
        event_types=changes.get("event_types"),
        secret=changes.get("secret"),
        errors=errors,
    )
    if errors:
        raise ValidationError(errors)
    if "event_types" in changes:
        changes["event_types"] = sorted(set(changes["event_types"]))
    with transaction.atomic():
        for field, value in changes.items():
            setattr(endpoint, field, value)
        endpoint.updated_at = clock.wall()
        endpoint.save(update_fields=[*changes, "updated_at"])
        _audited(caller, endpoint, "webhook.update", changed=sorted(changes))
    return endpoint


def endpoint_delete(*, caller: Caller, endpoint: Endpoint) -> None:
    authorize(caller=caller, organization=endpoint.organization, action=Action.WEBHOOK_MANAGE)
    with transaction.atomic():
        _audited(caller, endpoint, "webhook.delete")
        endpoint.delete()


def _audited(caller: Caller, endpoint: Endpoint, action: str, **payload) -> None:
    audit_record(
        caller=caller,
        organization=endpoint.organization,
        action=action,
        target=endpoint,
        payload={"url": endpoint.url, "event_types": endpoint.event_types, **payload},
    )


def deliveries_make(*, event: str, event_id: str, payload: dict) -> list[str]:
    """One delivery per active endpoint that chose the event's type, of each object the event
    tells of in the endpoint's organization; its body fixed now. Run again for the same
    publication (`event_id`), it makes none twice. The deliveries made, queued for their first
    attempt after commit."""
    route = route_of(event, payload)
    if route is None:
        return []
    active = Endpoint.objects.filter(is_active=True)
    if not active.exists():
        return []
    rendered_all = route.render(payload[route.key])
    endpoints = [
        endpoint
        for endpoint in active.filter(organization__in={r.organization_id for r in rendered_all})
        if route.event_type in endpoint.event_types
    ]
    now = clock.wall()
    made = []
    for rendered in rendered_all:
        for endpoint in endpoints:
            if endpoint.organization_id != rendered.organization_id:
                continue
            delivery_id = uuid.uuid4()
            envelope = {
                "id": str(delivery_id),
                "type": route.event_type,
                "created_at": now.isoformat().replace("+00:00", "Z"),
                "organization": rendered.organization_slug,
                "data": rendered.data,
            }
            made.append(
                Delivery(
                    id=delivery_id,
                    endpoint=endpoint,
                    event_type=route.event_type,
                    event_id=event_id,
                    object_id=rendered.object_id,
                    body=json.dumps(envelope, cls=DjangoJSONEncoder, separators=(",", ":")),
                    created_at=now,
                    next_attempt_at=now + LEASE,
                )
            )
    with transaction.atomic():
        Delivery.objects.bulk_create(made, ignore_conflicts=True)
        due = [
            str(pk)
            for pk in Delivery.objects.filter(event_id=event_id, attempts=0).values_list(
                "pk", flat=True
            )
        ]
        if due:
            publish(Event.WEBHOOK_DELIVERIES_DUE, delivery_ids=due)
    return due


def _answer(delivery: Delivery, *, at: datetime) -> targets.Answer:
    """Send the delivery, signed for `at`, if its URL still resolves to an allowed address."""
    endpoint = delivery.endpoint
    try:
        addresses = targets.target_addresses(
            endpoint.url, allow_private=settings.PORTAL_WEBHOOKS_ALLOW_PRIVATE
        )
    except targets.TargetRefused as refused:
        return targets.Answer(error=f"refused: {refused}"[:500])
    body = delivery.body.encode()
    headers = signing.signed_headers(
        delivery_id=str(delivery.pk),
        event_type=delivery.event_type,
        secret=endpoint.secret,
        timestamp=int(at.timestamp()),
        body=body,
    )
    return targets.post(
        endpoint.url,
        address=addresses[0],
        body=body,
        headers=headers,
        timeout=settings.PORTAL_WEBHOOKS_TIMEOUT_SECONDS,
    )


def delivery_attempt(*, delivery_id) -> Delivery | None:
    """One attempt at a waiting delivery of an active endpoint, recorded; on a failure the
    next is scheduled (RETRY_DELAYS) unless the schedule is spent or this was a redelivery:
    then the delivery has failed. None when there was nothing to attempt."""
    delivery = (
        Delivery.objects.select_related("endpoint")
        .filter(pk=delivery_id, state__in=WAITING, endpoint__is_active=True)
        .first()
    )
    if delivery is None:
        return None
    at = clock.wall()
    answer = _answer(delivery, at=at)
    with transaction.atomic():
        locked = Delivery.objects.select_for_update().filter(pk=delivery.pk).first()
        if locked is None or locked.state not in WAITING:
            return locked  # its endpoint was deleted, or another attempt finished it meanwhile
        manual = locked.state == Delivery.State.REDELIVERING
        locked.attempts += 1
        Attempt.objects.create(
            delivery=locked,
            number=locked.attempts,
            at=at,
            manual=manual,
            status_code=answer.status_code,
            response_body=answer.body,
            error=answer.error,
            duration_ms=answer.duration_ms,
        )
        locked.last_attempt_at = at
        locked.last_status_code = answer.status_code
        locked.last_response_body = answer.body
        locked.last_error = answer.error
        automatic = Attempt.objects.filter(delivery=locked, manual=False).count()
        if answer.ok:
            locked.state, locked.delivered_at = Delivery.State.DELIVERED, at
            locked.next_attempt_at = None
        elif manual or automatic > len(RETRY_DELAYS):
            locked.state, locked.next_attempt_at = Delivery.State.FAILED, None
        else:
            locked.state = Delivery.State.PENDING
            locked.next_attempt_at = at + RETRY_DELAYS[automatic - 1]
        locked.save()
    return locked


def deliveries_due(*, now: datetime | None = None, limit: int = 500) -> list[str]:
    """Queue the waiting deliveries of active endpoints whose attempt is due (a retry, or one
    whose task was lost), each leased so that it is not queued again meanwhile."""
    now = now or clock.wall()
    with transaction.atomic():
        due = list(
            Delivery.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(state__in=WAITING, next_attempt_at__lte=now, endpoint__is_active=True)
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[:limit]
        )
        Delivery.objects.filter(pk__in=due).update(next_attempt_at=now + LEASE)
        if due:
            publish(Event.WEBHOOK_DELIVERIES_DUE, delivery_ids=[str(pk) for pk in due])
    return [str(pk) for pk in due]


def delivery_redeliver(*, caller: Caller, delivery: Delivery) -> Delivery:
    """Send a delivery that was delivered or failed once more, under the same id (an attempt
    more: a failure is not retried); one still waiting is a Conflict."""
    endpoint = delivery.endpoint
    authorize(caller=caller, organization=endpoint.organization, action=Action.WEBHOOK_MANAGE)
    if not endpoint.is_active:
        raise Conflict("The endpoint is paused; resume it first.", code="endpoint_paused")
    with transaction.atomic():
        locked = Delivery.objects.select_for_update().get(pk=delivery.pk)
        if locked.state in WAITING:
            raise Conflict("The delivery is still waiting for an attempt.", code="delivery_waiting")
        locked.state = Delivery.State.REDELIVERING
        locked.next_attempt_at = clock.wall() + LEASE
        locked.save(update_fields=["state", "next_attempt_at"])
        _audited(caller, endpoint, "webhook.redeliver", delivery=str(locked.pk))
        publish(Event.WEBHOOK_DELIVERIES_DUE, delivery_ids=[str(locked.pk)])
    locked.endpoint = endpoint
    return locked
