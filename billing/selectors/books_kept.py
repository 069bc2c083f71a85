"""A month's books computed once and kept (the staff page, the operator API and /metrics read
them so): a closed month's under a key of everything its books read, so that they are
computed again only when one of those inputs changed; an open month's for at most
``PORTAL_BOOKS_REFRESH_SECONDS``.

A month is closed once it has ended. What its books read can still change after that, and
each such change changes the key: a cost model version dated back into it, an invoice drafted,
issued or voided, a credit note, a usage interval recorded late or ended back in it, a
reservation cancelled or shortened, a node's availability or a quota grant's history written
into it, a pool added. What the key does not read is frozen as it was when the month was first
computed: the nodes' power draw from Prometheus (which may since have dropped it) and the
pools' capacity now by which a class's guarantees and packages are spread over its pools."""

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum

from portal import clock
from scheduling import selectors as scheduling_selectors
from scheduling.models import NodePool, QuotaGrantHistory, Reservation
from tenants.permissions import Caller, require_operator

from ..models import CostModel, Invoice, InvoiceLine, UsageInterval
from ..pricing import month_bounds
from .books import PoolBooks, books
from .revenue import first_day_from

KEY_PREFIX = "billing:books"
# An ended month's books under a key its inputs replaced would otherwise stay in the cache for
# good; a month read again after this long is computed once more.
CLOSED_KEPT_SECONDS = 31 * 24 * 3600


@dataclass(frozen=True)
class KeptBooks:
    """A month's books (``books``) over [starts_at, ends_at), as computed at
    ``computed_at``; ``closed``: the month had ended by then."""

    pools: list[PoolBooks]
    starts_at: datetime
    ends_at: datetime
    computed_at: datetime
    closed: bool

    @property
    def revenue_drafts(self) -> int:
        return self.pools[0].revenue_drafts if self.pools else 0


def month_books(*, year: int, month: int, so_far: bool = False) -> KeptBooks:
    """The books of the UTC month: a closed month's whole, kept until its inputs change
    (``books_inputs_key``); an open month's whole (``so_far``: up to the moment they are
    computed, as /metrics gives them), kept ``PORTAL_BOOKS_REFRESH_SECONDS``."""
    now = clock.now()
    starts_at, ends_at = month_bounds(year, month)
    closed = ends_at <= now
    if closed:
        key = f"{KEY_PREFIX}:{starts_at:%Y-%m}:{books_inputs_key(starts_at, ends_at)}"
        timeout = CLOSED_KEPT_SECONDS
    else:
        key = f"{KEY_PREFIX}:{starts_at:%Y-%m}:{'so-far' if so_far else 'open'}"
        timeout = settings.PORTAL_BOOKS_REFRESH_SECONDS
    kept = cache.get(key)
    # The cache's expiry follows the machine's time; the portal's clock may run ahead of it.
    if kept is None or (
        not closed
        and (now - kept.computed_at).total_seconds() >= settings.PORTAL_BOOKS_REFRESH_SECONDS
    ):
        period_end = now if so_far and not closed else ends_at
        kept = KeptBooks(
            pools=books(starts_at=starts_at, ends_at=period_end),
            starts_at=starts_at,
            ends_at=period_end,
            computed_at=now,
            closed=closed,
        )
        cache.set(key, kept, timeout)
    return kept


def month_books_for_operator(*, caller: Caller, year: int, month: int) -> KeptBooks:
    """``month_books``, for an operator."""
    require_operator(caller)
    return month_books(year=year, month=month)


def books_inputs_key(starts_at: datetime, ends_at: datetime) -> str:
    """A digest of what the books of [starts_at, ends_at) read from the database: counts,
    sums and latest changes of each input that overlaps it, one aggregate query each."""
    invoices = Invoice.objects.filter(
        month__gte=first_day_from(starts_at), month__lt=first_day_from(ends_at)
    )
    figures = [
        scheduling_selectors.node_availability(starts_at=starts_at, ends_at=ends_at)
        .order_by()
        .aggregate(
            Count("id"),
            Max("id"),
            Max("starts_at"),
            Max("ends_at"),
            open=Count("id", filter=Q(ends_at__isnull=True)),
        ),
        Reservation.objects.filter(
            Q(state__in=Reservation.BILLED_STATES) | Q(state=Reservation.State.CANCELLED),
            starts_at__lt=ends_at,
            ends_at__gt=starts_at,
        ).aggregate(
            Count("id"), Sum("gpus"), Sum("short_gpus"), Max("decided_at"), Max("cancelled_at")
        ),
        UsageInterval.objects.filter(
            Q(ended_at__isnull=True) | Q(ended_at__gt=starts_at), started_at__lt=ends_at
        ).aggregate(
            Count("id"),
            Max("id"),
            Sum("amount"),
            Max("ended_at"),
            open=Count("id", filter=Q(ended_at__isnull=True)),
        ),
        QuotaGrantHistory.objects.filter(
            Q(valid_to__isnull=True) | Q(valid_to__gt=starts_at), valid_from__lt=ends_at
        ).aggregate(Count("id"), Max("id"), open=Count("id", filter=Q(valid_to__isnull=True))),
        CostModel.objects.filter(effective_from__lt=ends_at).aggregate(
            Count("id"), Max("created_at"), Max("effective_from")
        ),
        invoices.aggregate(
            Count("id"), Max("created_at"), Max("updated_at"), Max("issued_at"), Max("voided_at")
        ),
        InvoiceLine.objects.filter(invoice__in=invoices).aggregate(Count("id"), Sum("amount")),
        NodePool.objects.filter(gpu_class__isnull=False).aggregate(
            Count("id"), Max("id"), Sum("gpu_class_id")
        ),
    ]
    text = repr([sorted(found.items()) for found in figures])
    return hashlib.sha256(text.encode()).hexdigest()[:32]
