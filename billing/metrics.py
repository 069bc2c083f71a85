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
    return [gpu_hours, mig_hours, *unpriced_metrics()]


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
