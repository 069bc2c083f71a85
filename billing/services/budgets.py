"""Budgets: a monthly spending limit per organization or project. Spend is what is rated
this month (in the organization's time zone) plus, for the organization, its cancellation
charges; each threshold crossed is recorded, audited and mailed to the organization's owners
and admins once per month, in threshold order; a budget with a hard stop refuses new
submissions once spent and holds the queued work of its scope (checks registered with
scheduling's submission and cycle: scheduling knows nothing of money)."""

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q

from portal import clock
from portal.errors import Conflict
from portal.events import Event, publish
from portal.mail import mail_send
from tenants import selectors as tenant_selectors
from tenants.models import Organization, Project
from tenants.permissions import Action, Caller, authorize
from tenants.services import audit_record

from .. import selectors
from ..models import Budget, BudgetAlert
from ..pricing import month_of, to_cents

THRESHOLDS_MAX = 10


def budget_save(
    *,
    caller: Caller,
    organization: Organization,
    monthly_amount: Decimal,
    project: str | None = None,
    thresholds: list[int] | None = None,
    hard_stop: bool = False,
) -> Budget:
    """An owner or admin sets the budget of the organization or of one of its projects
    (replacing the one it had). Field errors name what is wrong; nothing is written then."""
    authorize(caller=caller, organization=organization, action=Action.BUDGET_MANAGE)
    errors: dict[str, list[str]] = {}
    scope = tenant_selectors.project_named(organization=organization, slug=project, errors=errors)
    thresholds = sorted(set(thresholds if thresholds is not None else [50, 80, 100]))
    if not thresholds or len(thresholds) > THRESHOLDS_MAX:
        errors["thresholds"] = [f"Between 1 and {THRESHOLDS_MAX} thresholds."]
    elif not all(1 <= t <= 1000 for t in thresholds):
        errors["thresholds"] = ["Each threshold is a percentage from 1 to 1000."]
    if monthly_amount <= 0:
        errors["monthly_amount"] = ["A budget is a positive amount."]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        budget, _ = Budget.objects.update_or_create(
            organization=organization,
            project=scope,
            defaults={
                "monthly_amount": to_cents(monthly_amount),
                "thresholds": thresholds,
                "hard_stop": hard_stop,
                "updated_at": clock.now(),
            },
        )
        audit_record(
            caller=caller,
            organization=organization,
            action="budget.save",
            target=budget,
            payload={
                "project": project,
                "monthly_amount": str(budget.monthly_amount),
                "thresholds": thresholds,
                "hard_stop": hard_stop,
            },
        )
    return budget


def budget_delete(*, caller: Caller, budget: Budget) -> None:
    authorize(caller=caller, organization=budget.organization, action=Action.BUDGET_MANAGE)
    with transaction.atomic():
        audit_record(
            caller=caller,
            organization=budget.organization,
            action="budget.delete",
            target=budget,
            payload={"monthly_amount": str(budget.monthly_amount)},
        )
        budget.delete()


def budgets_check(*, now: datetime | None = None) -> int:
    """Record each threshold a budget's spend crossed this month and was not yet recorded for;
    each is audited and mailed once (its row is unique). The number recorded."""
    now = now or clock.now()
    recorded = 0
    for budget in Budget.objects.select_related("organization", "project"):
        start, _ = month_of(now, budget.organization.zone)
        spent = selectors.spend(
            organization=budget.organization, project_id=budget.project_id, at=now
        )
        crossed = [t for t in budget.thresholds if spent * 100 >= budget.monthly_amount * t]
        done = set(budget.alerts.filter(period_start=start).values_list("threshold", flat=True))
        for threshold in sorted(set(crossed) - done):
            try:
                with transaction.atomic():
                    alert = BudgetAlert.objects.create(
                        budget=budget, period_start=start, threshold=threshold, spend=spent
                    )
                    audit_record(
                        caller=None,
                        organization=budget.organization,
                        action="budget.threshold",
                        target=budget,
                        payload={"threshold": threshold, "spend": str(spent)},
                    )
                    publish(Event.BUDGET_THRESHOLD_CROSSED, alert_id=alert.pk)
            except IntegrityError:  # recorded meanwhile by another run
                continue
            recorded += 1
    return recorded


def budget_alert_email_send(*, alert_id: int) -> int:
    """Mail a crossed threshold to the organization's owners and admins, each once; the
    thresholds of the same budget and month below it that are not mailed yet go first, so
    that mails arrive in threshold order however the tasks of one run are picked up. The
    number of mails sent now."""
    alert = BudgetAlert.objects.filter(pk=alert_id).first()
    if alert is None:
        return 0
    alerts = BudgetAlert.objects.filter(
        budget=alert.budget_id, period_start=alert.period_start, threshold__lte=alert.threshold
    ).select_related("budget__organization", "budget__project")
    sent = 0
    for earlier in alerts.order_by("threshold"):
        sent += mail_send(
            key=f"budget_alert:{earlier.pk}",
            recipients=tenant_selectors.manager_emails(organization=earlier.budget.organization),
            template="billing/email/budget_threshold.txt",
            context={"alert": earlier, "currency": settings.PORTAL_CURRENCY},
        )
    return sent


def budget_submission_check(*, caller: Caller, project: Project, workloads) -> None:
    """Registered with scheduling's submission: a hard-stop budget of the project or its
    organization that is spent refuses new work (409) until raised or the month ends."""
    stops = list(
        Budget.objects.filter(
            Q(project__isnull=True) | Q(project=project),
            organization=project.organization_id,
            hard_stop=True,
        ).select_related("organization")
    )
    now = clock.now() if stops else None
    for budget in stops:
        spent = selectors.spend(
            organization=budget.organization, project_id=budget.project_id, at=now
        )
        if spent >= budget.monthly_amount:
            scope = f"project {project.slug}" if budget.project_id else "the organization"
            raise Conflict(
                f"The monthly budget of {budget.monthly_amount} {settings.PORTAL_CURRENCY} of"
                f" {scope} is spent ({spent} this month); new work is refused until the budget"
                " is raised or the month ends.",
                code="budget_exhausted",
            )


def budget_pending_hold(*, projects: dict) -> dict:
    """Registered with scheduling's cycle: the pending work of a project whose hard-stop
    budget (its own or its organization's) is spent is held, not admitted, until the budget is
    raised or removed or its month ends (the cycle asks again each time). ``projects`` maps
    each project with pending work to its organization; the answer maps each held project to
    its (code, reason). One query for the budgets, then one spend per spent-out candidate
    budget, however many workloads wait."""
    organizations = set(projects.values())
    stops = list(
        Budget.objects.filter(hard_stop=True, organization__in=organizations).select_related(
            "organization", "project"
        )
    )
    held: dict = {}
    now = clock.now() if stops else None
    for budget in stops:
        spent = selectors.spend(
            organization=budget.organization, project_id=budget.project_id, at=now
        )
        if spent < budget.monthly_amount:
            continue
        scope = f"project {budget.project.slug}" if budget.project_id else "the organization"
        reason = (
            f"budget: the monthly budget of {budget.monthly_amount} {settings.PORTAL_CURRENCY}"
            f" of {scope} is reached ({spent} spent this month); queued work is held until"
            " the budget is raised or removed, or the month ends."
        )
        for project_id, organization_id in projects.items():
            if organization_id == budget.organization_id and budget.project_id in (
                None,
                project_id,
            ):
                held.setdefault(project_id, ("budget_exhausted", reason))
    return held
