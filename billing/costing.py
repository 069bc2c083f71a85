"""What the operator's GPUs cost it (``CostModel``): a GPU-hour's amortised purchase price,
power and share of its node's overhead; a node's cost over its availability spans, whatever
their state (a cordoned node is paid for all the same); and the measured power draw, from DCGM
readings in Prometheus, where there are any. A MIG instance or a share costs its fraction of
its GPU: a node's GPUs count its whole GPUs and its MIG instances' slices out of seven."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal, localcontext
from itertools import pairwise

from portal.prometheus import PrometheusClient
from scheduling.engine.model import mig_profile_slices

from .models import CostModel

HOURS_PER_MONTH = 30 * 24
MICROSECONDS_PER_HOUR = Decimal(3600 * 10**6)
WATTS_PER_KILOWATT = 1000
# DCGM's power draw of a GPU, in watts, labelled with its node by the exporter.
POWER_QUERY = "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_POWER_USAGE[{seconds}s] @ {end}))"


def node_gpus(gpu_count: int, mig_layout: dict) -> Decimal:
    """A node's GPUs: its whole ones and its MIG instances' slices out of seven."""
    slices = sum(count * mig_profile_slices(profile) for profile, count in mig_layout.items())
    return gpu_count + Decimal(slices) / 7


def gpu_hour_cost(version: CostModel, *, watts: Decimal | None = None) -> Decimal:
    """One GPU-hour's cost, its node's overhead left out: the purchase price written off over
    the lifetime, and the power (``watts`` measured; None: nameplate) at the price per kWh."""
    watts = version.nameplate_watts if watts is None else watts
    with localcontext(prec=40):
        return (
            version.purchase_price_per_gpu / (version.lifetime_months * HOURS_PER_MONTH)
            + watts * version.price_per_kwh / WATTS_PER_KILOWATT
        )


def node_hour_cost(version: CostModel, *, gpus: Decimal, watts: Decimal | None = None) -> Decimal:
    """One hour of a node of ``gpus`` GPUs: its GPUs' hours and its overhead."""
    with localcontext(prec=40):
        return gpus * gpu_hour_cost(version, watts=watts) + version.overhead_per_node_hour


def version_for(versions: Iterable[CostModel], node_id, at: datetime) -> CostModel | None:
    """The cost model in force for the node at ``at``: its own, else its pool's; the latest
    started."""
    started = [v for v in versions if v.effective_from <= at and v.node_id in (None, node_id)]
    return max(started, key=lambda v: (v.node_id is not None, v.effective_from), default=None)


def nodes_cost(
    *,
    spans,
    versions: list[CostModel],
    starts_at: datetime,
    ends_at: datetime,
    watts: dict[str, Decimal],
) -> Decimal:
    """What the nodes cost over [starts_at, ends_at), from their availability spans (with
    ``node``), under the cost models in force piece by piece; unpriced time costs nothing."""
    total = Decimal(0)
    moments = sorted({v.effective_from for v in versions})
    for span in spans:
        start, end = max(span.starts_at, starts_at), min(span.ends_at or ends_at, ends_at)
        cuts = [start, *(m for m in moments if start < m < end), end]
        gpus = node_gpus(span.gpu_count, span.mig_layout)
        for piece_start, piece_end in pairwise(cuts):
            version = version_for(versions, span.node_id, piece_start)
            if version is None:
                continue
            hours = Decimal((piece_end - piece_start) // timedelta(microseconds=1))
            with localcontext(prec=40):
                total += (
                    hours
                    / MICROSECONDS_PER_HOUR
                    * node_hour_cost(version, gpus=gpus, watts=watts.get(span.node.name))
                )
    return total


def measured_watts(
    *, metrics: PrometheusClient | None, starts_at: datetime, ends_at: datetime
) -> dict[str, Decimal]:
    """Each node's average power draw per GPU over [starts_at, ends_at), by node name, as
    DCGM reported it; empty without Prometheus or when it does not answer (nameplate then)."""
    if metrics is None:
        return {}
    query = POWER_QUERY.format(
        seconds=max(int((ends_at - starts_at).total_seconds()), 1), end=int(ends_at.timestamp())
    )
    samples = metrics.samples(query) or []
    return {
        labels["Hostname"]: Decimal(str(round(value, 3)))
        for labels, value in samples
        if labels.get("Hostname") and value >= 0
    }
