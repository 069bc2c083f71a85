"""Writes of the operator's books (operators only): cost models, only ever added as versions
from a moment not in the past, like prices; what each organization is shown of its showback;
each audited."""

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from portal import clock
from scheduling.models import Node, NodePool
from tenants.models import Organization
from tenants.permissions import Caller, require_operator
from tenants.services import audit_record

from ..models import CostModel, ShowbackSetting
from .versions import version_add


def cost_model_problems(
    *, pool: NodePool, node: Node | None, effective_from: datetime, now: datetime
) -> dict[str, list[str]]:
    """What is wrong with a new cost model's date and node (empty: nothing)."""
    errors = {}
    if effective_from < now:
        errors["effective_from"] = ["A cost model cannot start in the past."]
    if node is not None and node.pool_id != pool.pk:
        errors["node"] = [f"Node {node.name} is not in pool {pool.name}."]
    return errors


def cost_model_add(
    *,
    caller: Caller,
    pool: NodePool,
    purchase_price_per_gpu: Decimal,
    lifetime_months: int,
    nameplate_watts: int,
    price_per_kwh: Decimal,
    overhead_per_node_hour: Decimal = Decimal(0),
    node: Node | None = None,
    effective_from: datetime | None = None,
    now: datetime | None = None,
) -> CostModel:
    """A new cost model for ``pool`` (or one ``node`` of it) from ``effective_from`` on (None:
    from now), which may not lie in the past: the books of a closed period stay as they were."""
    require_operator(caller)
    now = now or clock.now()
    effective_from = effective_from or now
    version = CostModel(
        pool=pool,
        node=node,
        purchase_price_per_gpu=purchase_price_per_gpu,
        lifetime_months=lifetime_months,
        nameplate_watts=nameplate_watts,
        price_per_kwh=price_per_kwh,
        overhead_per_node_hour=overhead_per_node_hour,
        effective_from=effective_from,
        created_by=caller.user,
    )
    return version_add(
        caller=caller,
        version=version,
        problems=cost_model_problems(pool=pool, node=node, effective_from=effective_from, now=now),
        action="books.cost_model_add",
        payload=lambda saved: {
            "pool": pool.name,
            "node": node.name if node else None,
            "purchase_price_per_gpu": str(saved.purchase_price_per_gpu),
            "lifetime_months": lifetime_months,
            "nameplate_watts": nameplate_watts,
            "price_per_kwh": str(saved.price_per_kwh),
            "overhead_per_node_hour": str(saved.overhead_per_node_hour),
            "effective_from": effective_from.isoformat(),
        },
        taken="There is already a cost model from that moment.",
    )


def showback_level_set(
    *, caller: Caller, organization: Organization, level: str
) -> ShowbackSetting:
    """What the operator shows ``organization`` of its own showback from now on: ``off``,
    ``hours`` (GPU-hours only) or ``cost`` (and their cost); audited with the level before."""
    require_operator(caller)
    if level not in ShowbackSetting.Level.values:
        raise ValidationError({"level": ["Showback is off, hours or cost."]})
    with transaction.atomic():
        setting, _ = ShowbackSetting.objects.select_for_update().get_or_create(
            organization=organization, defaults={"level": settings.PORTAL_BOOKS_SHOWBACK}
        )
        before = setting.level
        setting.level = level
        setting.updated_at = clock.wall()
        setting.updated_by = caller.user
        setting.save()
        audit_record(
            caller=caller,
            organization=organization,
            action="books.showback_set",
            target=setting,
            payload={"level": level, "before": before},
        )
    return setting
