"""Reservations: whole GPUs of a pool, or instances of one MIG profile, held for an
organization over a window of time. Each resource of a pool is booked on its own: a node's MIG
instances and its whole GPUs are separate capacity.

No overbooking, ever: a request locks the pools it may use (a row lock per pool on PostgreSQL),
then checks every instant of its windows against what requested, approved and active
reservations already hold there, and against the series' own earlier windows (a weekly window
longer than a week overlaps the next). Every window starts within the booking horizon
(``portal.bounds``). A refusal says where the window is short and by how much,
and proposes the nearest windows of the same length that fit, before and after.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from portal import clock
from portal.bounds import BOOKING_HORIZON_YEARS, booking_horizon_error
from portal.errors import Conflict
from portal.events import Event, publish
from portal.mail import mail_where_it_stands
from tenants import selectors as tenant_selectors
from tenants.approvals import Workflow
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize

from ..models import GpuClass, NodePool, Reservation, ReservationRule
from ..selectors import nearest_windows, pool_capacity, shortfalls

WEEK = timedelta(weeks=1)
WEEKS_MAX = 52


@dataclass(frozen=True)
class ReservationRequest:
    """What a tenant asks for; ``weeks`` > 1 repeats the window weekly (all or none).
    ``gpus`` counts whole GPUs, or instances of ``mig_profile``."""

    gpu_class: str
    gpus: int
    starts_at: datetime
    ends_at: datetime
    pool: str | None = None
    project: str | None = None
    weeks: int = 1
    lead_time: timedelta | None = None
    mig_profile: str | None = None


def _request_errors(
    request: ReservationRequest, *, now: datetime, limit_length: bool
) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if request.starts_at.tzinfo is None or request.ends_at.tzinfo is None:
        errors["starts_at"] = ["Give times with a time zone (UTC)."]
        return errors
    if request.starts_at < now:
        errors["starts_at"] = ["The window starts in the past."]
    elif too_far := booking_horizon_error(request.starts_at, now=now):
        errors["starts_at"] = [too_far]
    if request.ends_at <= request.starts_at:
        errors["ends_at"] = ["The window ends after it starts."]
    longest = timedelta(hours=settings.PORTAL_RESERVATION_MAX_HOURS)
    if limit_length and request.ends_at - request.starts_at > longest:
        errors["ends_at"] = [f"A window lasts at most {settings.PORTAL_RESERVATION_MAX_HOURS} h."]
    if request.gpus < 1:
        errors["gpus"] = ["Reserve at least one GPU."]
    if not 1 <= request.weeks <= WEEKS_MAX:
        errors["weeks"] = [f"Between 1 and {WEEKS_MAX} weekly windows."]
    elif "starts_at" not in errors and booking_horizon_error(
        request.starts_at + WEEK * (request.weeks - 1), now=now
    ):
        errors["weeks"] = [
            f"The series' last window would start more than {BOOKING_HORIZON_YEARS} years ahead."
        ]
    if request.lead_time is not None and request.lead_time < timedelta(0):
        errors["lead_time"] = ["A lead time cannot be negative."]
    return errors


def _targets(
    organization: Organization, request: ReservationRequest
) -> tuple[GpuClass, Project | None, list[NodePool]]:
    """The class, project and candidate pools a request names, or field errors."""
    gpu_class = GpuClass.objects.filter(name=request.gpu_class).first()
    if gpu_class is None:
        raise ValidationError({"gpu_class": [f"No GPU class {request.gpu_class!r}."]})
    errors: dict[str, list[str]] = {}
    if request.mig_profile and request.mig_profile not in gpu_class.mig_profiles:
        offered = ", ".join(gpu_class.mig_profiles) or "none"
        errors["mig_profile"] = [
            f"{gpu_class.name} has no MIG profile {request.mig_profile!r} (it has: {offered})."
        ]
    project = tenant_selectors.project_named(
        organization=organization, slug=request.project, errors=errors
    )
    if errors:
        raise ValidationError(errors)
    pools = NodePool.objects.filter(gpu_class=gpu_class).order_by("name")
    if request.pool:
        pools = pools.filter(name=request.pool)
        if not pools.exists():
            raise ValidationError({"pool": [f"No pool {request.pool!r} of {gpu_class.name}."]})
    return gpu_class, project, list(pools)


def reservations_request(
    *,
    caller: Caller,
    organization: Organization,
    request: ReservationRequest,
    now=None,
    preapproved: bool = False,
) -> list[Reservation]:
    """Hold GPUs for the organization over the request's windows (all or none), in the named
    pool or the first of the class where every window fits; they await an operator's approval
    unless the organization's reservation rule covers them or ``preapproved`` (an order an
    operator or the catalog's rule approved: billing's fulfilment, never an endpoint; its
    window may be longer than ``PORTAL_RESERVATION_MAX_HOURS``, as the order agreed). A field
    error for a malformed request; a Conflict with the shortfalls and the nearest feasible
    windows when the GPUs are not free."""
    authorize(caller=caller, organization=organization, action=Action.RESERVATION_MANAGE)
    now = now or clock.now()
    errors = _request_errors(request, now=now, limit_length=not preapproved)
    if errors:
        raise ValidationError(errors)
    gpu_class, project, pools = _targets(organization, request)
    windows = [
        (request.starts_at + WEEK * i, request.ends_at + WEEK * i) for i in range(request.weeks)
    ]
    with transaction.atomic():
        # The pools' rows are the locks: two requests for one pool check one after the other.
        locked = list(
            NodePool.objects.select_for_update().filter(pk__in=[p.pk for p in pools]).order_by("pk")
        )
        locked.sort(key=lambda p: p.name)
        profile = request.mig_profile or ""
        capacities = {pool.pk: pool_capacity(pool, profile) for pool in locked}
        largest = max(capacities.values(), default=0)
        if largest < request.gpus:
            where = f"pool {request.pool}" if request.pool else f"the largest pool of {gpu_class}"
            unit = f"{profile} instances" if profile else "GPUs"
            raise ValidationError({"gpus": [f"{request.gpus} {unit}, but {where} has {largest}."]})
        refusals = []
        for pool in locked:
            capacity = capacities[pool.pk]
            # Each window against what is held and the series' earlier windows: a window
            # longer than a week overlaps the next one.
            short = [
                s
                for index, (start, end) in enumerate(windows)
                for s in shortfalls(
                    pool,
                    start,
                    end,
                    request.gpus,
                    capacity=capacity,
                    mig_profile=profile,
                    also=tuple((s, e, request.gpus) for s, e in windows[:index]),
                )
            ]
            if not short:
                approved = preapproved or _within_rule(organization, request)
                state = Reservation.State.APPROVED if approved else Reservation.State.REQUESTED
                # An order's reservations are told of by the order's own mail.
                change = RESERVATION_ORDERED if preapproved else state
                return _hold(
                    caller, organization, project, gpu_class, pool, request, windows, state, change
                )
            refusals.append((pool, capacity, short))
    pool, capacity, short = refusals[0]
    before, after = nearest_windows(
        pool,
        request.starts_at,
        request.ends_at,
        request.gpus,
        capacity=capacity,
        now=now,
        mig_profile=request.mig_profile or "",
    )
    first = short[0]
    unit = f"{request.mig_profile} instances" if request.mig_profile else "GPUs"
    raise Conflict(
        f"{pool.name} lacks {first.gpus} of the {request.gpus} {unit} from"
        f" {first.starts_at.isoformat()} to {first.ends_at.isoformat()}"
        + (f" (and {len(short) - 1} more short periods)" if len(short) > 1 else "")
        + ".",
        code="reservation_short",
        details={
            "pool": pool.name,
            "shortfalls": [s.as_dict() for s in short],
            "nearest_before": before.isoformat() if before else None,
            "nearest_after": after.isoformat() if after else None,
        },
    )


def _within_rule(organization: Organization, request: ReservationRequest) -> bool:
    """Whether the organization's reservation rule approves the request without an operator."""
    rule = ReservationRule.objects.filter(organization=organization).first()
    hours = (request.ends_at - request.starts_at) / timedelta(hours=1)
    return rule is not None and rule.allows(gpus=request.gpus, hours=hours)


def _hold(
    caller, organization, project, gpu_class, pool, request, windows, state, change
) -> list[Reservation]:
    series = uuid.uuid4() if len(windows) > 1 else None
    reservations = Reservation.objects.bulk_create(
        Reservation(
            organization=organization,
            project=project,
            gpu_class=gpu_class,
            pool=pool,
            gpus=request.gpus,
            mig_profile=request.mig_profile or "",
            starts_at=start,
            ends_at=end,
            series=series,
            lead_time=request.lead_time,
            requested_by=caller.user,
            state=state,
        )
        for start, end in windows
    )
    for reservation in reservations:
        RESERVATIONS.audited(caller, reservation, "request", change=change)
    return reservations


# The events of a reservation that are not states: made by an order (told of by the order's
# mail), short of capacity after a loss, covered again.
RESERVATION_ORDERED = "ordered"
RESERVATION_SHORT = "short"
RESERVATION_COVERED = "covered"


def _payload(reservation: Reservation) -> dict:
    return {
        "gpu_class": reservation.gpu_class.name,
        "pool": reservation.pool.name,
        "gpus": reservation.gpus,
        "mig_profile": reservation.mig_profile,
        "starts_at": reservation.starts_at.isoformat(),
        "ends_at": reservation.ends_at.isoformat(),
        "state": reservation.state,
    }


def reservation_approve(*, caller: Caller, reservation: Reservation) -> Reservation:
    return RESERVATIONS.approve(caller=caller, row=reservation)


def reservation_reject(*, caller: Caller, reservation: Reservation, reason: str) -> Reservation:
    return RESERVATIONS.reject(caller=caller, row=reservation, reason=reason)


def reservation_cancel(*, caller: Caller, reservation: Reservation) -> Reservation:
    """An owner or admin of its organization cancels a reservation that still holds GPUs; its
    capacity is free at once. ``cancelled_at`` against ``starts_at`` is what billing charges by
    the catalog item's terms."""
    return RESERVATIONS.cancel(caller=caller, row=reservation, cancelled_at=clock.now())


RESERVATIONS = Workflow(
    model=Reservation,
    name="reservation",
    noun="reservation",
    submitted=Reservation.State.REQUESTED,
    approved=Reservation.State.APPROVED,
    rejected=Reservation.State.REJECTED,
    cancelled=Reservation.State.CANCELLED,
    related=("organization", "gpu_class", "pool"),
    payload=_payload,
    publish=lambda reservation, change, _: publish(
        Event.RESERVATION_CHANGED, reservation_id=str(reservation.pk), change=change
    ),
    cancellable=Reservation.HOLDING_STATES,
    cancel_action=Action.RESERVATION_MANAGE,
    cancel_code="not_holding",
)


def reservation_email_send(
    *, reservation_id: str, change: str = "", occurrence: str = "", short_gpus: int | None = None
) -> int:
    """Tell the requester (and, for a new request or a shortfall, the operators) of one event
    of a reservation: ``change`` is the state it reached (the current one if not given), or
    ``short``/``covered``; ``occurrence`` tells one shortfall change from the next, and
    ``short_gpus`` is what it was short then. Each is mailed once, from its template (an opening
    or an on-time completion has none: it mails nobody); the number of mails sent now."""
    reservation = (
        Reservation.objects.select_related("organization", "gpu_class", "pool", "requested_by")
        .filter(pk=reservation_id)
        .first()
    )
    if reservation is None:
        return 0
    change = change or reservation.state
    if short_gpus is not None:  # as it was at the event, not as it is now
        reservation.short_gpus = short_gpus
    return mail_where_it_stands(
        key=f"reservation:{reservation.pk}:{change}" + (f":{occurrence}" if occurrence else ""),
        requester=reservation.requested_by,
        waits_for_operators=change in (Reservation.State.REQUESTED, RESERVATION_SHORT),
        template=f"scheduling/email/reservation_{change}.txt",
        context={"reservation": reservation},
    )
