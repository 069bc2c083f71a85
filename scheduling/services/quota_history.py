"""A quota grant's history: what it guaranteed and allowed over time, spans written by every
change to the grant, so the operator's books read the guarantees in force at each instant."""

from datetime import datetime

from ..models import QuotaGrant, QuotaGrantHistory


def quota_grant_history_record(*, grant: QuotaGrant, now: datetime, deleted: bool = False) -> None:
    """Close the grant's open history span and open one at ``now`` with what it guarantees
    and allows (none once ``deleted``), unless nothing changed. Call it inside the transaction
    that changed the grant: the books read the guarantees in force at each instant."""
    span = (
        QuotaGrantHistory.objects.select_for_update()
        .filter(grant=grant, valid_to__isnull=True)
        .first()
    )
    if span is not None:
        if not deleted and (span.guarantee, span.limit) == (grant.guarantee, grant.limit):
            return
        if span.valid_from < now:
            QuotaGrantHistory.objects.filter(pk=span.pk).update(valid_to=now)
        else:  # changed again within the same instant: the newer value holds it
            span.delete()
    if not deleted:
        QuotaGrantHistory.objects.create(
            grant=grant,
            organization_id=grant.organization_id,
            project_id=grant.project_id,
            gpu_class_id=grant.gpu_class_id,
            resource=grant.resource,
            mig_profile=grant.mig_profile,
            guarantee=grant.guarantee,
            limit=grant.limit,
            valid_from=now,
        )
