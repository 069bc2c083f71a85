"""The preemption contract's credits as invoices and the usage API show them: one line per
eviction (lost work) and per reservation (lending) over a period, its pieces summed and the
amount rounded half up to cents once."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Max, Min, Sum

from scheduling.models import Eviction, GpuClass, Reservation
from tenants.models import Project

from ..models import ContractCredit, UsageInterval
from ..pricing import SECONDS_PER_HOUR, billed_hours, to_cents

HOURS = Decimal("0.0001")
SECONDS = Decimal("0.001")

# What each eviction reason the contract credits says on an invoice.
REASONS = {
    "priority": "preempted by higher-priority work",
    "reclaim": "reclaimed by the quota's owner",
    "fair-share": "reclaimed for fair share",
    "reservation": "drained for a reservation's window",
}


# What one line sums: an eviction's pieces, or a reservation's hours.
CREDIT_KEY = ("kind", "eviction", "reservation", "project", "gpu_class", "mig_profile", "resource")


@dataclass(frozen=True)
class CreditLine:
    kind: str
    project: Project | None
    gpu_class: GpuClass
    mig_profile: str
    resource: str
    description: str
    # GPU-hours (a share's fraction counted), or MIG instance-hours.
    hours: Decimal
    unit_price: Decimal | None
    # What it takes off, positive, in cents.
    amount: Decimal


def contract_credit_lines(*, organization_id, starts_at: datetime, ends_at: datetime) -> list:
    """The organization's credits placed in [starts_at, ends_at) (``ContractCredit.at``), as
    ``CreditLine``s: the lost-work ones by eviction time, then the lending ones; those that
    come to nothing are left out."""
    groups = (
        ContractCredit.objects.filter(
            organization=organization_id, at__gte=starts_at, at__lt=ends_at
        )
        .values(*CREDIT_KEY)
        .annotate(
            seconds=Sum("quantity_seconds"),
            amount=Sum("amount"),
            lowest=Min("unit_price"),
            highest=Max("unit_price"),
        )
        .order_by("kind", "eviction", "reservation")
    )
    groups = [g for g in groups if g["seconds"]]
    if not groups:
        return []
    evictions = Eviction.objects.select_related(
        "workload__project__organization", "preempted_by__project"
    ).in_bulk({g["eviction"] for g in groups if g["eviction"]})
    reservations = Reservation.objects.select_related("pool", "gpu_class").in_bulk(
        {g["reservation"] for g in groups if g["reservation"]}
    )
    projects = Project.objects.in_bulk({g["project"] for g in groups if g["project"]})
    classes = GpuClass.objects.in_bulk({g["gpu_class"] for g in groups})
    lines = []
    for group in groups:
        hours = billed_hours(group["seconds"], group["resource"])
        if group["kind"] == ContractCredit.Kind.LOST_WORK:
            description = _lost_work(evictions[group["eviction"]], hours, group["resource"])
        else:
            description = _lending(reservations[group["reservation"]], hours)
        lines.append(
            CreditLine(
                kind=group["kind"],
                project=projects.get(group["project"]),
                gpu_class=classes[group["gpu_class"]],
                mig_profile=group["mig_profile"],
                resource=group["resource"],
                description=description,
                hours=hours.quantize(HOURS),
                # Several prices (a price change inside the lost work): the line shows none.
                unit_price=group["lowest"] if group["lowest"] == group["highest"] else None,
                amount=to_cents(group["amount"] or Decimal(0)),
            )
        )
    return lines


def _seconds(hours: Decimal, resource: str) -> str:
    unit = "instance-seconds" if resource == UsageInterval.Resource.MIG else "GPU-seconds"
    return f"{(hours * SECONDS_PER_HOUR).quantize(SECONDS).normalize():f} {unit}"


def _lost_work(eviction: Eviction, hours: Decimal, resource: str) -> str:
    workload = eviction.workload
    by = eviction.preempted_by
    if by is not None and by.project.organization_id == workload.project.organization_id:
        whom = f" for {by.project.slug}/{by.name}"
    elif by is not None:
        whom = " for another organization's work"
    else:
        whom = ""
    return (
        f"Credit for work lost: {workload.project.slug}/{workload.name} evicted"
        f" {eviction.at:%Y-%m-%d %H:%M:%S} UTC ({REASONS.get(eviction.reason, eviction.reason)}"
        f"{whom}): {_seconds(hours, resource)} since"
        f" {eviction.lost_since:%Y-%m-%d %H:%M:%S} UTC, at the price billed"
    )


def _lending(reservation: Reservation, hours: Decimal) -> str:
    lent = "instance-hours" if reservation.mig_profile else "GPU-hours"
    return (
        f"Lending credit: {reservation.gpus} {reservation.gpu_class.name} {reservation.unit}"
        f" reserved in {reservation.pool.name} from {reservation.starts_at:%Y-%m-%d %H:%M} UTC:"
        f" {hours.quantize(HOURS).normalize():f} {lent} lent to others' work while idle"
    )
