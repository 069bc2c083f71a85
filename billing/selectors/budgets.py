"""Reads of budgets, each with what its scope spent this month."""

from datetime import datetime

from portal import clock
from portal.db import one_or_not_found
from tenants.models import Organization
from tenants.permissions import Action, Caller, authorize

from ..models import Budget
from .usage import spend, spends


def budget_get(*, caller: Caller, organization: Organization, pk) -> Budget:
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    budgets = Budget.objects.filter(organization=organization).select_related("organization")
    return one_or_not_found(budgets, pk, "budget")


def budget_list(*, caller: Caller, organization: Organization) -> list[Budget]:
    """The organization's budgets, each with ``spent`` this month, for its owners and
    admins."""
    authorize(caller=caller, organization=organization, action=Action.INVOICE_VIEW)
    now = clock.now()
    budgets = list(
        Budget.objects.filter(organization=organization).select_related("organization", "project")
    )
    spent = spends(organization=organization, scopes={b.project_id for b in budgets}, at=now)
    for budget in budgets:
        budget.spent = spent[budget.project_id]
    return budgets


def budget_spent(budget: Budget, *, at: datetime) -> Budget:
    """``budget`` with ``spent``: its scope's spend in ``at``'s month."""
    budget.spent = spend(organization=budget.organization, project_id=budget.project_id, at=at)
    return budget
