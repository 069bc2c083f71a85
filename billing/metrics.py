"""Billing's part of /metrics, read from the rated billing records at scrape time (registered
in BillingConfig.ready()): GPU-hours per organization and class never lost or counted twice,
as the records are."""

from decimal import Decimal

from prometheus_client.core import CounterMetricFamily

from . import selectors
from .pricing import billed_hours


def billing_metrics():
    """portal_gpu_hours_total (whole GPUs and GPU shares) and portal_mig_instance_hours_total."""
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
    return [gpu_hours, mig_hours]
