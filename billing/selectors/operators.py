"""Operators' reads across every tenant, for the operator API: orders, invoices and credit
notes, credit grants, cost models. Each requires an operator."""

from django.db.models import QuerySet

from portal.db import one_or_not_found
from tenants.permissions import Caller, require_operator

from ..models import CostModel, Credit, Invoice, Order


def orders_for_operator(*, caller: Caller) -> QuerySet[Order]:
    """Every organization's orders, the newest first."""
    require_operator(caller)
    return Order.objects.select_related("organization", "item", "project", "created_by").order_by(
        "-created_at", "pk"
    )


def invoices_for_operator(*, caller: Caller) -> QuerySet[Invoice]:
    """Every organization's invoices and credit notes, the latest period first."""
    require_operator(caller)
    return (
        Invoice.objects.select_related("organization", "corrects")
        .prefetch_related("lines__project", "lines__gpu_class")
        .order_by("-period_start", "organization__slug", "number", "pk")
    )


def invoice_for_operator(*, caller: Caller, pk) -> Invoice:
    return one_or_not_found(invoices_for_operator(caller=caller), pk, "invoice")


def credits_for_operator(*, caller: Caller) -> QuerySet[Credit]:
    """Every organization's credit grants, the newest first."""
    require_operator(caller)
    return Credit.objects.select_related("organization", "granted_by").order_by("-granted_at", "pk")


def cost_models_for_operator(*, caller: Caller) -> QuerySet[CostModel]:
    """Every cost model, pool by pool, node's after the pool's, each in order of start."""
    require_operator(caller)
    return CostModel.objects.select_related("pool", "node", "created_by").order_by(
        "pool__name", "node__name", "effective_from"
    )
