"""The demo's books: what its pools cost the operator since the recorded days began, and the
nodes' availability over those days (one H100 node down for an afternoon), so that the
operators' Books page (/staff/books/) tells a story out of the box: acme's H100s sold, the
guarantees of globex and initech idle at night, an outage, and the margin per pool."""

from datetime import datetime, timedelta
from decimal import Decimal

from billing import services as billing
from billing.models import CostModel
from scheduling.models import Node, NodeAvailability, NodePool
from tenants.permissions import Caller

# Per pool: purchase price per GPU (with its share of the server), lifetime in months,
# nameplate watts per GPU (with its share of the server), price per kWh, overhead per
# node-hour (space, network, support).
COSTS = {
    "dgx-h100": ("30000.00", 48, 1275, "0.1800", "3.5000"),
    "a100-mig": ("12000.00", 48, 500, "0.1800", "1.5000"),
    "l4-inference": ("2500.00", 48, 110, "0.1800", "0.5000"),
}
DOWN_NODE = "dgx-h100-03"
# The outage, from the first recorded day's midnight: the afternoon of the second day.
DOWN_FROM, DOWN_FOR = timedelta(days=1, hours=13), timedelta(hours=5)


def demo_books_seed(*, operator: Caller, since: datetime) -> None:
    """Cost models from ``since`` (once), and the nodes' availability from then on."""
    _availability(since)
    if CostModel.objects.exists():
        return
    for name, (price, months, watts, kwh, overhead) in COSTS.items():
        pool = NodePool.objects.filter(name=name).first()
        if pool is None:
            continue
        billing.cost_model_add(
            caller=operator,
            pool=pool,
            purchase_price_per_gpu=Decimal(price),
            lifetime_months=months,
            nameplate_watts=watts,
            price_per_kwh=Decimal(kwh),
            overhead_per_node_hour=Decimal(overhead),
            effective_from=since,
            now=since,
        )


def _availability(since: datetime) -> None:
    """Each node's one span, opened by the seed's inventory sync, reaches back to ``since``;
    the down node's is cut by its outage."""
    for node in Node.objects.all():
        spans = list(NodeAvailability.objects.filter(node=node))
        if len(spans) != 1 or spans[0].starts_at <= since:
            continue  # seeded before, or a history of its own
        span = spans[0]
        NodeAvailability.objects.filter(pk=span.pk).update(starts_at=since)
        if node.name != DOWN_NODE:
            continue
        down_from = since + DOWN_FROM
        down_until = down_from + DOWN_FOR
        NodeAvailability.objects.filter(pk=span.pk).update(starts_at=down_until)
        for state, starts_at, ends_at in (
            (NodeAvailability.State.AVAILABLE, since, down_from),
            (NodeAvailability.State.NOT_READY, down_from, down_until),
        ):
            NodeAvailability.objects.create(
                node=node,
                pool=node.pool,
                state=state,
                gpu_count=node.gpu_count,
                mig_layout=node.mig_layout,
                starts_at=starts_at,
                ends_at=ends_at,
            )
