"""Billing's part of /metrics, read from the rated billing records at scrape time (registered
in BillingConfig.ready()): GPU-hours per organization and class never lost or counted twice,
as the records are."""

from decimal import Decimal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from portal import clock

from . import selectors
from .pricing import billed_hours


def billing_metrics():
    """portal_gpu_hours_total (whole GPUs and GPU shares), portal_mig_instance_hours_total, and
    what no price covers: portal_unpriced_usage_hours and portal_unpriced_resources."""
    gpu_hours = CounterMetricFamily(
        "portal_gpu_hours",
        "GPU-hours of use rated into billing records (a GPU share counts its fraction).",
        labels=["organization", "gpu_class"],
    )
    mig_hours = CounterMetricFamily(
        "portal_mig_instance_hours",
        "MIG instance-hours of use rated into billing records.",
        labels=["organization", "gpu_class", "mig_profile"],
    )
    hours: dict[tuple[str, str], Decimal] = {}
    for organization, gpu_class, resource, mig_profile, seconds in selectors.gpu_seconds_rated():
        if resource == "mig":
            mig_hours.add_metric(
                [organization, gpu_class, mig_profile], float(billed_hours(seconds, resource))
            )
            continue
        key = (organization, gpu_class)
        hours[key] = hours.get(key, Decimal(0)) + billed_hours(seconds, resource)
    for labels, value in sorted(hours.items()):
        gpu_hours.add_metric(list(labels), float(value))
    return [gpu_hours, mig_hours, *unpriced_metrics(), *books_metrics()]


def unpriced_metrics():
    """Use rated with no price in force (billed at nothing; its invoices are held), in the
    resource's unit, and what the cluster offers that no list price covers now."""
    usage = GaugeMetricFamily(
        "portal_unpriced_usage_hours",
        "Use rated with no price in force, in its unit (GPU-hours, or MIG instance-hours):"
        " billed at nothing until finance prices it.",
        labels=["organization", "gpu_class", "mig_profile", "resource", "charge"],
    )
    summed: dict[tuple[str, ...], Decimal] = {}
    for use in selectors.usage_unpriced():
        key = (use.organization, use.gpu_class, use.mig_profile, use.resource, use.charge)
        summed[key] = summed.get(key, Decimal(0)) + use.hours
    for labels, hours in sorted(summed.items()):
        usage.add_metric(list(labels), float(hours))
    resources = GaugeMetricFamily(
        "portal_unpriced_resources",
        "Resources the cluster offers with no list price in force (1 each).",
        labels=["gpu_class", "mig_profile", "kind"],
    )
    for resource in selectors.resources_unpriced(at=clock.now()):
        resources.add_metric([resource.gpu_class, resource.mig_profile, resource.kind], 1)
    return [usage, resources]


def books_metrics():
    """The month so far of the operator's books, per pool: GPU-hours by category, cost,
    revenue, margin and utilisation (``selectors.month_books``: at most
    ``PORTAL_BOOKS_REFRESH_SECONDS`` old)."""
    now = clock.now()
    kept = selectors.month_books(year=now.year, month=now.month, so_far=True)
    hours = GaugeMetricFamily(
        "portal_books_gpu_hours",
        "GPU-hours of each pool this month so far, by category of the books (each hour once).",
        labels=["pool", "gpu_class", "category"],
    )
    money = {
        name: GaugeMetricFamily(
            f"portal_books_{name}",
            f"The {name} of each pool this month so far, in the catalog's currency.",
            labels=["pool", "gpu_class"],
        )
        for name in ("cost", "revenue", "margin")
    }
    utilisation = GaugeMetricFamily(
        "portal_books_utilisation",
        "The share of each pool's hours this month so far that work used (0 to 1).",
        labels=["pool", "gpu_class"],
    )
    for pool in kept.pools:
        labels = [pool.pool_label, pool.gpu_class_name]
        for category, value in pool.hours.items():
            hours.add_metric([*labels, category], float(value))
        money["cost"].add_metric(labels, float(pool.cost))
        money["revenue"].add_metric(labels, float(pool.revenue))
        money["margin"].add_metric(labels, float(pool.margin))
        if pool.utilisation is not None:
            utilisation.add_metric(labels, float(pool.utilisation))
    return [hours, *money.values(), utilisation]
