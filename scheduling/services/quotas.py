"""Quotas that operators grant to organizations, and the requests for more that owners and
admins make; their namespaces follow through the worker."""

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from portal import clock
from portal.errors import NotFound
from portal.events import Event, publish
from portal.mail import mail_where_it_stands
from tenants import selectors as tenant_selectors
from tenants.approvals import Workflow
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize, require_operator
from tenants.services import audit_record

from ..models import GpuClass, QuotaGrant, QuotaRequest
from ..models.quotas import LIMIT_BELOW_GUARANTEE
from .quota_history import quota_grant_history_record


def quota_grant_save(*, caller: Caller, grant: QuotaGrant, reason: str = "") -> QuotaGrant:
    """An operator sets a quota: validated, audited (with the ``reason`` given), and the
    organization's namespaces get their ResourceQuota updated by the worker."""
    require_operator(caller)
    return _grant_save(caller, grant, reason=reason)


@dataclass(frozen=True)
class GrantKey:
    """Which grant an operator names (the operator API): that of ``organization`` (or of its
    ``project``) for one GPU class and resource."""

    organization: str
    gpu_class: str
    resource: str = QuotaGrant.Resource.GPUS
    mig_profile: str = ""
    project: str | None = None


def _grant_key_of(
    caller: Caller, key: GrantKey, reason: str, errors: dict[str, list[str]] | None = None
) -> dict:
    """The grant's key as rows, or the field errors of what does not exist and of no reason
    (with ``errors`` already found)."""
    require_operator(caller)
    errors = errors or {}
    if not reason.strip():
        errors["reason"] = ["Say why: the reason is kept in the audit trail."]
    organization = tenant_selectors.organization_named(
        caller=caller, slug=key.organization, errors=errors
    )
    gpu_class = GpuClass.objects.filter(name=key.gpu_class).first()
    if gpu_class is None:
        errors["gpu_class"] = [f"No GPU class {key.gpu_class!r}."]
    project = organization and tenant_selectors.project_named(
        organization=organization, slug=key.project, errors=errors
    )
    if errors:
        raise ValidationError(errors)
    return {
        "organization": organization,
        "project": project,
        "gpu_class": gpu_class,
        "resource": key.resource,
        "mig_profile": key.mig_profile,
    }


def quota_grant_set(
    *,
    caller: Caller,
    key: GrantKey,
    guarantee: int,
    limit: int,
    reason: str,
    cohort: str = "",
    region_limits: dict[str, int] | None = None,
) -> tuple[QuotaGrant, bool]:
    """Create or change the grant ``key`` names, with the reason audited; the grant, and
    whether it was created. ``region_limits`` (None: as they were) caps its use per region."""
    errors = {"limit": [LIMIT_BELOW_GUARANTEE]} if limit < guarantee else {}
    rows = _grant_key_of(caller, key, reason, errors)
    with transaction.atomic():
        grant = QuotaGrant.objects.select_for_update().filter(**rows).first()
        created = grant is None
        grant = grant or QuotaGrant(**rows)
        grant.guarantee, grant.limit, grant.cohort = guarantee, limit, cohort
        if region_limits is not None:
            grant.region_limits = region_limits
        _grant_save(caller, grant, reason=reason.strip())
    return grant, created


def quota_grant_remove(*, caller: Caller, key: GrantKey, reason: str) -> None:
    """Take away the grant ``key`` names, with the reason audited."""
    grant = QuotaGrant.objects.filter(**_grant_key_of(caller, key, reason)).first()
    if grant is None:
        raise NotFound("No such quota grant.")
    quota_grant_delete(caller=caller, grant=grant, reason=reason.strip())


def _grant_save(caller: Caller, grant: QuotaGrant, *, reason: str = "") -> QuotaGrant:
    grant.full_clean()
    with transaction.atomic():
        _within_organization(grant)
        grant.save()
        quota_grant_history_record(grant=grant, now=clock.now())
        audit_record(
            caller=caller,
            organization=grant.organization,
            action="quota.set",
            target=grant,
            payload={
                "gpu_class": grant.gpu_class.name,
                "resource": grant.resource,
                "mig_profile": grant.mig_profile,
                "guarantee": grant.guarantee,
                "limit": grant.limit,
                "cohort": grant.cohort,
                "region_limits": grant.region_limits,
            }
            | ({"reason": reason} if reason else {}),
        )
        _namespaces_follow(grant.organization_id)
    return grant


def quota_grant_delete(*, caller: Caller, grant: QuotaGrant, reason: str = "") -> None:
    require_operator(caller)
    with transaction.atomic():
        audit_record(
            caller=caller,
            organization=grant.organization,
            action="quota.delete",
            target=grant,
            payload={"reason": reason} if reason else {},
        )
        organization_id = grant.organization_id
        quota_grant_history_record(grant=grant, now=clock.now(), deleted=True)
        grant.delete()
        _namespaces_follow(organization_id)


def _namespaces_follow(organization_id) -> None:
    """Every live project's namespace quota follows the organization's grants."""
    for project_id in Project.objects.filter(
        organization_id=organization_id, deleted_at__isnull=True
    ).values_list("pk", flat=True):
        publish(Event.PROJECT_CHANGED, project_id=str(project_id))


def _within_organization(grant: QuotaGrant) -> None:
    """Project grants of a resource never add up to more than the organization's grant of it."""
    if not grant.project_id:
        return
    same = QuotaGrant.objects.filter(
        organization_id=grant.organization_id,
        gpu_class_id=grant.gpu_class_id,
        resource=grant.resource,
        mig_profile=grant.mig_profile,
    )
    organization = same.filter(project__isnull=True).first()
    projects = same.filter(project__isnull=False).exclude(pk=grant.pk)
    total = grant.limit + sum(projects.values_list("limit", flat=True))
    ceiling = organization.limit if organization else 0
    if total > ceiling:
        raise ValidationError(
            {
                "limit": [
                    f"The projects' grants of {grant.resource_label} would add up to {total}"
                    f" {grant.unit}, over the organization's {ceiling}."
                ]
            }
        )


@dataclass(frozen=True)
class QuotaAsk:
    """More of a quota resource: ``amount`` more guaranteed and allowed, until ``until`` (None:
    for good), for the organization or one of its projects."""

    gpu_class: str
    amount: int
    reason: str
    resource: str = QuotaGrant.Resource.GPUS
    mig_profile: str = ""
    project: str | None = None
    until: datetime | None = None
    # When the increase starts (None: at its approval); a grant for an order's period.
    starts_at: datetime | None = None


def quota_request_create(
    *, caller: Caller, organization: Organization, ask: QuotaAsk, now=None
) -> QuotaRequest:
    """An owner or admin asks operators for more quota; validated, audited and mailed."""
    authorize(caller=caller, organization=organization, action=Action.QUOTA_REQUEST)
    quota_request = _validated_request(caller, organization, ask, now=now)
    with transaction.atomic():
        quota_request.save()
        QUOTA_REQUESTS.audited(caller, quota_request, "create")
    return quota_request


def _validated_request(
    caller: Caller, organization: Organization, ask: QuotaAsk, *, now=None
) -> QuotaRequest:
    """An unsaved request for ``ask``, or the field errors that make it impossible."""
    now = now or clock.now()
    errors: dict[str, list[str]] = {}
    gpu_class = GpuClass.objects.filter(name=ask.gpu_class).first()
    if gpu_class is None:
        errors["gpu_class"] = [f"No GPU class {ask.gpu_class!r}."]
    if ask.until is not None and ask.until <= now:
        errors["until"] = ["The end is in the past."]
    elif ask.until is not None and ask.starts_at is not None and ask.until <= ask.starts_at:
        errors["until"] = ["The end comes after the start."]
    if not ask.reason.strip():
        errors["reason"] = ["Say what the quota is for."]
    project = tenant_selectors.project_named(
        organization=organization, slug=ask.project, errors=errors
    )
    if errors:
        raise ValidationError(errors)
    quota_request = QuotaRequest(
        organization=organization,
        project=project,
        gpu_class=gpu_class,
        resource=ask.resource,
        mig_profile=ask.mig_profile,
        amount=ask.amount,
        reason=ask.reason.strip(),
        until=ask.until,
        requested_by=caller.user,
    )
    # The grant it would change must be a valid one (a MIG profile of the class, say).
    QuotaGrant(
        organization=organization,
        project=project,
        gpu_class=gpu_class,
        resource=ask.resource,
        mig_profile=ask.mig_profile,
        guarantee=0,
        limit=0,
    ).clean()
    quota_request.full_clean()
    return quota_request


def quota_request_approve(
    *,
    caller: Caller,
    quota_request: QuotaRequest,
    amount: int | None = None,
    until: datetime | None = None,
) -> QuotaRequest:
    """An operator grants the request, or ``amount`` instead, until ``until`` instead: the
    grant grows by it (created if need be), the namespaces follow, the next cycle counts it."""

    def grant(locked: QuotaRequest) -> None:
        granted = amount if amount is not None else locked.amount
        if granted < 1:
            raise ValidationError({"amount": ["Grant at least 1."]})
        _grant(caller, locked, granted, until if until is not None else locked.until)

    return QUOTA_REQUESTS.approve(caller=caller, row=quota_request, effect=grant)


def quota_grant_for_period(
    *, caller: Caller, organization: Organization, ask: QuotaAsk
) -> QuotaRequest:
    """Grow a grant by ``ask.amount`` from ``ask.starts_at`` until ``ask.until`` without an
    operator's decision: for an order that was approved (billing's fulfilment of a quota
    package, never an endpoint). It is kept as an approved request, so that it starts and
    reverts on time like any other: a period that starts later grows the grant only then."""
    quota_request = _validated_request(caller, organization, ask)
    with transaction.atomic():
        quota_request.state = QuotaRequest.State.APPROVED
        quota_request.save()
        _grant(caller, quota_request, ask.amount, ask.until, starts_at=ask.starts_at)
        quota_request.decided_at = clock.now()
        quota_request.save()
        QUOTA_REQUESTS.audited(caller, quota_request, "approve", change=QUOTA_PACKAGE_GRANTED)
    return quota_request


def _grant(
    caller: Caller,
    quota_request: QuotaRequest,
    granted: int,
    until,
    *,
    starts_at: datetime | None = None,
) -> None:
    """Grow (or create) the grant the request is about by ``granted``; the namespaces follow.
    An increase that starts later is checked as if it applied now, and grows the grant at its
    start (``quota_increases_apply``)."""
    now = clock.now()
    quota_request.state = QuotaRequest.State.APPROVED
    quota_request.granted_amount = granted
    quota_request.granted_until = until
    quota_request.granted_from = max(starts_at or now, now)
    key = _grant_key(quota_request)
    if quota_request.granted_from > now:
        grant = QuotaGrant.objects.select_for_update().filter(**key).first()
        grant = grant or QuotaGrant(**key, guarantee=0, limit=0)
        grant.guarantee += granted
        grant.limit += granted
        grant.full_clean(validate_unique=False)
        _within_organization(grant)
        return
    grant, _ = QuotaGrant.objects.select_for_update().get_or_create(
        **key, defaults={"guarantee": 0, "limit": 0}
    )
    grant.guarantee += granted
    grant.limit += granted
    _grant_save(caller, grant)
    quota_request.grant = grant
    quota_request.applied_at = now


def _grant_key(quota_request: QuotaRequest) -> dict:
    return {
        "organization": quota_request.organization,
        "project": quota_request.project,
        "gpu_class": quota_request.gpu_class,
        "resource": quota_request.resource,
        "mig_profile": quota_request.mig_profile,
    }


def quota_request_reject(
    *, caller: Caller, quota_request: QuotaRequest, reason: str
) -> QuotaRequest:
    return QUOTA_REQUESTS.reject(caller=caller, row=quota_request, reason=reason)


def quota_requests_advance(*, now=None) -> dict[str, int]:
    """The beat task: requests left undecided past their end expire; approved increases whose
    start or end has come grow or leave their grant (as the scheduling cycle also does)."""
    now = now or clock.now()
    with transaction.atomic():
        expired = QuotaRequest.objects.filter(
            state=QuotaRequest.State.REQUESTED, until__lte=now
        ).update(state=QuotaRequest.State.EXPIRED)
        changed = quota_increases_apply(now=now)
    return {"expired": expired, **changed}


def quota_increases_apply(*, now: datetime) -> dict[str, int]:
    """Approved increases whose start has come grow their grant; those whose end has come are
    taken back off it (never below zero). The requests are locked first, then each change
    locks and re-reads its grant: increases of one grant that start or end together all
    count, and an approval racing with them is never overwritten. Run by every scheduling
    cycle before it reads the grants, so that they count exactly over their period."""
    due = list(
        QuotaRequest.objects.select_for_update(of=("self",))
        .filter(state=QuotaRequest.State.APPROVED)
        .filter(
            Q(applied_at__isnull=True, granted_from__lte=now)
            | Q(applied_at__isnull=False, granted_until__lte=now)
        )
        .select_related("organization", "project", "gpu_class")
        .order_by("pk")
    )
    started = reverted = 0
    for quota_request in due:
        ended = quota_request.granted_until is not None and quota_request.granted_until <= now
        if quota_request.applied_at is None and not ended:
            _increase_start(quota_request, now=now)
            started += 1
            continue
        if quota_request.applied_at is not None and quota_request.grant_id is not None:
            _increase_end(quota_request, now=now)
        # (an increase whose whole period passed before it was applied never counted)
        quota_request.state = QuotaRequest.State.REVERTED
        quota_request.save(update_fields=["state"])
        # A package's grant (no operator decided it) ends with the period its order bought.
        package = quota_request.decided_by_id is None
        change = QUOTA_PACKAGE_ENDED if package else QuotaRequest.State.REVERTED
        QUOTA_REQUESTS.audited(None, quota_request, "revert", change=change)
        reverted += 1
    return {"started": started, "reverted": reverted}


def _increase_start(quota_request: QuotaRequest, *, now: datetime) -> None:
    # Not through _grant_save: the increase was checked against the organization's grants when
    # it was approved, and a refusal here would stop the scheduling cycle that runs this.
    grant, _ = QuotaGrant.objects.select_for_update().get_or_create(
        **_grant_key(quota_request), defaults={"guarantee": 0, "limit": 0}
    )
    grant.guarantee += quota_request.granted_amount
    grant.limit += quota_request.granted_amount
    grant.save(update_fields=["guarantee", "limit"])
    quota_grant_history_record(grant=grant, now=now)
    _namespaces_follow(grant.organization_id)
    quota_request.grant = grant
    quota_request.applied_at = now
    quota_request.save(update_fields=["grant", "applied_at"])
    # Audited, not mailed: its approval was.
    audit_record(
        caller=None,
        organization=quota_request.organization,
        action="quota_request.start",
        target=quota_request,
        payload={
            "gpu_class": quota_request.gpu_class.name,
            "resource": quota_request.resource,
            "mig_profile": quota_request.mig_profile,
            "amount": quota_request.granted_amount,
            "guarantee": grant.guarantee,
            "limit": grant.limit,
        },
    )


def _increase_end(quota_request: QuotaRequest, *, now: datetime) -> None:
    grant = QuotaGrant.objects.select_for_update().filter(pk=quota_request.grant_id).first()
    if grant is None:  # deleted meanwhile
        return
    grant.guarantee = max(grant.guarantee - quota_request.granted_amount, 0)
    grant.limit = max(grant.limit - quota_request.granted_amount, grant.guarantee)
    grant.save(update_fields=["guarantee", "limit"])
    quota_grant_history_record(grant=grant, now=now)
    _namespaces_follow(grant.organization_id)


# The events of a quota request that are not its states: the grant of a quota package an order
# bought, and its end (told of by the order's mail: the tenant made no request).
QUOTA_PACKAGE_GRANTED = "package_granted"
QUOTA_PACKAGE_ENDED = "package_ended"


def quota_request_email_send(*, quota_request_id: str, change: str = "") -> int:
    """Tell the requester (and, for a new request, the operators) of one event of a request:
    ``change`` is the state it reached (the current one if not given). Each is mailed once, from
    its template (a package's grant or end, told of by the order's mail, has none); the number
    of mails sent now."""
    quota_request = (
        QuotaRequest.objects.select_related("organization", "gpu_class", "requested_by")
        .filter(pk=quota_request_id)
        .first()
    )
    if quota_request is None:
        return 0
    change = change or quota_request.state
    return mail_where_it_stands(
        key=f"quota_request:{quota_request.pk}:{change}",
        requester=quota_request.requested_by,
        waits_for_operators=change == QuotaRequest.State.REQUESTED,
        template=f"scheduling/email/quota_request_{change}.txt",
        context={"request": quota_request},
    )


def _payload(quota_request: QuotaRequest) -> dict:
    until = quota_request.granted_until or quota_request.until
    return {
        "gpu_class": quota_request.gpu_class.name,
        "resource": quota_request.resource,
        "mig_profile": quota_request.mig_profile,
        "amount": quota_request.granted_amount or quota_request.amount,
        "until": until.isoformat() if until else None,
        "state": quota_request.state,
    }


QUOTA_REQUESTS = Workflow(
    model=QuotaRequest,
    name="quota_request",
    noun="request",
    submitted=QuotaRequest.State.REQUESTED,
    approved=QuotaRequest.State.APPROVED,
    rejected=QuotaRequest.State.DENIED,
    related=("organization", "project", "gpu_class"),
    payload=_payload,
    publish=lambda quota_request, change, _: publish(
        Event.QUOTA_REQUEST_CHANGED, quota_request_id=str(quota_request.pk), change=change
    ),
)
