"""Fairness over time: each organization's decayed usage, kept up to date by the cycle.

The decay formula is the engine's (``scheduling.engine.fairness``). Ended placements are added
to their organization's ``TenantUsage`` once (``Placement.usage_counted``), after the totals are
moved on to the cycle's time; running placements count from their admission at each cycle, so
a cycle reads only what ended since the one before, however long the history.
"""

from __future__ import annotations

from datetime import datetime

from tenants.models import Organization

from ..engine.fairness import DecayedUsage
from ..models import Placement, TenantUsage
from ..selectors.fairness import HELD_FIELDS, held_gpu_milli, usage_decay


def tenant_usage_update(*, now: datetime) -> dict[str, float]:
    """Move every organization's decayed usage on to ``now`` and add the placements that
    ended since; the decayed GPU-seconds per organization slug as of ``now`` (empty when the
    half-life is 0: nothing is read or written)."""
    decay = usage_decay()
    if not decay.enabled:
        return {}
    organizations = list(Organization.objects.select_related("decayed_usage"))
    rows = {}
    for organization in organizations:
        row = getattr(organization, "decayed_usage", None) or TenantUsage(
            organization=organization, as_of=now
        )
        usage = DecayedUsage(decay, as_of=row.as_of, totals={"": row.gpu_seconds})
        usage.advance(now)
        row.gpu_seconds, row.as_of = usage.totals[""], now
        rows[organization.pk] = row
    ended = list(
        Placement.objects.filter(ended_at__isnull=False, usage_counted=False).values_list(
            "pk", "workload__project__organization_id", *HELD_FIELDS, "ended_at"
        )
    )
    # From admission: what fair share weighs is capacity held, whether or not the work ran.
    for _, organization_id, gpu_class, indices, milli, profile, count, started, ended_at in ended:
        rows[organization_id].gpu_seconds += decay.held(
            gpu_milli=held_gpu_milli(indices, milli, profile, count),
            gpu_class=gpu_class or "",
            started_at=started,
            ended_at=ended_at,
            now=now,
        )
    TenantUsage.objects.bulk_create(
        rows.values(),
        update_conflicts=True,
        unique_fields=["organization"],
        update_fields=["gpu_seconds", "as_of"],
    )
    # By the rows read (one ending while the cycle runs is added by the next one); never an
    # empty list, so that the cycle's statements stay the same in number.
    counted = [row[0] for row in ended] or [0]
    Placement.objects.filter(pk__in=counted).update(usage_counted=True)
    return {organization.slug: rows[organization.pk].gpu_seconds for organization in organizations}
