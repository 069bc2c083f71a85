"""The money lifecycle as a state machine: workloads submitted, run, cancelled, preempted and
lost with their node on the simulated cluster, prices changed, the time zone changed, quota
packages and reserved GPUs ordered (approved at once, later, or rejected) for periods that may
start later and cross a month's end, GPUs reserved and reservations cancelled (with their
cancellation charges), invoices drafted (as the beat does), issued, voided and credited, credit
granted, in any order across month boundaries. After every step:

- every GPU-second a placement held is rated exactly once (running ones to the last whole hour);
- once a period has ended, each of its rated records (use and reserved capacity), each month of
  a quota package that begins in it and each cancellation charge recorded in it is on exactly
  one issued or draft invoice of that month (no two invoices' periods overlap, and none leaves
  a gap);
- an invoice's subtotal is the sum of its lines, its total the subtotal less credit plus tax;
- credit is never spent twice nor below zero;
- the usage API's figures equal the invoices to the cent (the month to date the current draft's
  subtotal, a past period's cost its invoice's use lines).

Everything goes through the services and the simulated cluster's clock. Marked slow: its
number of examples comes from the hypothesis profile (tests/conftest.py), a few in `make test`,
many in CI.
"""

import re
from datetime import timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from billing import selectors, services, tasks
from billing.models import (
    BillingRecord,
    CancellationCharge,
    CatalogItem,
    Credit,
    Invoice,
    Order,
    UsageInterval,
)
from billing.pricing import MONTH, hour_floor, month_of
from billing.services import OrderRequest
from portal import clock
from portal.errors import Conflict
from scheduling import services as scheduling
from scheduling.backends import simulated_backend
from scheduling.models import GpuClass, Node, Placement, QuotaGrant, Reservation, Workload
from tenants import services as tenant_services
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CLUSTER_FILE = Path(django_settings.PORTAL_SIMULATED_CLUSTER)
ZONES = ["UTC", "Pacific/Kiritimati", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Niue"]
USE_CHARGES = ("on_demand", "reserved_use", "reservation")
MICRO = timedelta(microseconds=1)
# How far ahead a period ordered or reserved starts: within the hour, tomorrow (inside the free
# cancellation's 24 h or not), or weeks on (across a month's end).
STARTS_IN = st.sampled_from([0.5, 20, 30, 24 * 17])
REFUSED = (ValidationError, Conflict)


def placed_seconds(placement: Placement, horizon) -> Decimal:
    """What the placement held, in its resource's unit-seconds, up to its end (a running one:
    up to ``horizon``, the last whole hour, as rating goes)."""
    end = placement.ended_at or horizon
    if placement.running_at is None or end <= placement.running_at:
        return Decimal(0)
    amount = (
        placement.mig_count
        or (placement.gpu_milli if placement.workload.gpu_milli else 0)
        or len(placement.gpu_indices or [])
        or placement.workload.gpus
    )
    return (amount * Decimal((end - placement.running_at) // MICRO) / 10**6).quantize(
        Decimal("0.000001")
    )


class MoneyLifecycle(RuleBasedStateMachine):
    """One organization (acme, its owner alice) on the demo cluster; finance is ``operator``."""

    workloads = Bundle("workloads")

    def __init__(self):
        super().__init__()
        self.savepoint = transaction.savepoint()
        self.backend = simulated_backend(
            description_path=Path(django_settings.PORTAL_SIMULATED_CLUSTER)
        )
        self.operator = Caller(user=FIXTURES["operator"])
        self.owner = Caller(user=FIXTURES["alice"])
        self.organization = FIXTURES["acme"]
        self.projects = FIXTURES["projects"]
        self.item = FIXTURES["item"]
        self.count = 0

    def teardown(self):
        transaction.savepoint_rollback(self.savepoint)

    # Steps.

    @initialize(
        gpus=st.sampled_from([2, 8]),
        before_the_month_ends=st.sampled_from([2.5, 20, 70]),
        zone=st.sampled_from(ZONES),
        then=st.sampled_from([3.5, 30, 24 * 10]),
        later_zone=st.sampled_from(ZONES),
        package_starts_in=st.sampled_from([0.5, 30]),
        package_approved=st.sampled_from(["at once", "after the month is issued"]),
        reserved_by=st.sampled_from(["order", "request"]),
        cancelled_after=st.sampled_from([None, 6, 30]),
    )
    def work_runs_near_a_months_end(
        self,
        gpus,
        before_the_month_ends,
        zone,
        then,
        later_zone,
        package_starts_in,
        package_approved,
        reserved_by,
        cancelled_after,
    ):
        """Work is running and rated from the start, a few hours before a month (UTC) ends, a
        quota package bought for a month from soon (approved at once, or only once the
        month it begins in is invoiced), 8 H100 reserved for 30 h from tomorrow (by
        an order or a request an operator approves) and perhaps cancelled (6 h later: before
        its window, within the 24 h the terms charge; or 30 h later: inside it), and the time
        zone changes after a while, so that every example has use, reserved capacity, a
        package and perhaps a cancellation charge, and crosses a month boundary under two
        zones."""
        self.time_zone_changes(zone=zone)
        _, month_end = month_of(clock.now())
        if month_end - clock.now() < timedelta(days=4):
            _, month_end = month_of(month_end)
        start = month_end - timedelta(hours=before_the_month_ends)
        clock.advance(seconds=(start - clock.now()).total_seconds())
        self.submit(gpus=gpus, runtime=400 * 3600, shared=False)
        self.time_passes(hours=0.01)  # it starts running
        self.order_a_package(
            starts_in=package_starts_in,
            months=1,
            short_by=0,
            packages=1,
            decided="now" if package_approved == "at once" else "later",
        )
        if reserved_by == "order":
            self.order_reserved_gpus(starts_in=20, hours=30, gpus=8, decided="now")
        else:
            self.reserve(starts_in=20, hours=30, gpus=8, approve=True)
        if cancelled_after is not None:
            self.time_passes(hours=cancelled_after)
            self.cancel_a_reservation(data=None)
        self.time_passes(hours=then)
        self.time_zone_changes(zone=later_zone)  # from the next period on
        self.time_passes(hours=24 * 12)
        if package_approved != "at once":  # its first month's invoice issued before
            for draft in Invoice.objects.filter(
                state=Invoice.State.DRAFT, period_end__lte=clock.now()
            ):
                services.invoice_issue(caller=self.operator, invoice=draft)
            self.decide_an_order(data=None, approve=True)

    @rule(
        target=workloads,
        gpus=st.sampled_from([1, 2, 4, 8]),
        runtime=st.sampled_from([600, 3600, 5 * 3600, 40 * 3600, 400 * 3600]),
        shared=st.booleans(),
    )
    def submit(self, gpus, runtime, shared):
        self.count += 1
        request = scheduling.WorkloadRequest(
            name=f"w{self.count}",
            kind="training",
            tier="training",
            image="pytorch:latest",
            gpu_classes=("H100-80GB",),
            gpus=0 if shared else gpus,
            gpu_milli=min(125 * gpus, 750) if shared else 0,
            env={"SIMULATED_RUNTIME_SECONDS": str(runtime)},
        )
        workload = scheduling.workload_submit(
            caller=self.owner, project=self.projects[self.count % 2], request=request
        )
        self.cycle()
        return workload.pk

    @rule(hours=st.sampled_from([0.01, 0.7, 3.5, 26, 24 * 9, 24 * 19]))
    def time_passes(self, hours):
        clock.advance(seconds=hours * 3600)
        self.beat()

    @rule(workload=workloads)
    def cancel(self, workload):
        found = Workload.objects.get(pk=workload)
        if found.state in Workload.ACTIVE_STATES or found.state == Workload.State.PENDING:
            scheduling.workload_cancel(caller=self.owner, workload=found)

    @rule(workload=workloads)
    def preempt(self, workload):
        """Evicted and requeued (as a preemption or a drain does)."""
        found = Workload.objects.get(pk=workload)
        if found.placements.filter(ended_at__isnull=True).exists():
            scheduling.workload_requeue_by_operator(caller=self.operator, workload=found)
            self.cycle()

    @precondition(lambda self: Placement.objects.filter(ended_at__isnull=True).exists())
    @rule(data=st.data())
    def node_fails(self, data):
        held = list(
            Placement.objects.filter(ended_at__isnull=True)
            .values_list("node__name", flat=True)
            .distinct()
            .order_by("node__name")
        )
        if held:
            name = data.draw(st.sampled_from(held))
            self.backend.node_fail(name=name)
            clock.advance(seconds=5)
            scheduling.workloads_sync(backend=self.backend)
            self.backend.node_recover(name=name)
            scheduling.inventory_sync(backend=self.backend)
            self.cycle()

    @rule(price=st.decimals(min_value="0.0001", max_value="9.9999", places=4))
    def price_changes(self, price):
        services.price_version_add(caller=self.operator, item=self.item, unit_price=price)

    @rule(zone=st.sampled_from(ZONES))
    def time_zone_changes(self, zone):
        tenant_services.organization_update(
            caller=self.owner, organization=self.organization, time_zone=zone
        )
        self.organization.refresh_from_db()

    @precondition(lambda self: Invoice.objects.filter(state=Invoice.State.DRAFT).exists())
    @rule(data=st.data())
    def issue(self, data):
        drafts = list(Invoice.objects.filter(state=Invoice.State.DRAFT).order_by("month"))
        if drafts:
            invoice = data.draw(st.sampled_from(drafts))
            ended = invoice.period_end <= clock.now()
            try:
                services.invoice_issue(caller=self.operator, invoice=invoice)
            except Conflict as refusal:
                assert not ended and refusal.code == "period_not_ended"
            else:
                assert ended

    @precondition(lambda self: Invoice.objects.filter(state=Invoice.State.ISSUED).exists())
    @rule(data=st.data())
    def void_and_draft_again(self, data):
        issued = list(Invoice.objects.filter(state=Invoice.State.ISSUED, corrects__isnull=True))
        if issued:
            invoice = data.draw(st.sampled_from(sorted(issued, key=lambda i: i.month)))
            services.invoice_void(caller=self.operator, invoice=invoice, reason="Wrong")
            services.invoice_draft(
                organization=self.organization, year=invoice.month.year, month=invoice.month.month
            )

    @precondition(lambda self: Invoice.objects.filter(state=Invoice.State.ISSUED).exists())
    @rule(data=st.data(), cents=st.integers(min_value=1, max_value=5000))
    def credit_note(self, data, cents):
        issued = list(Invoice.objects.filter(state=Invoice.State.ISSUED, corrects__isnull=True))
        if issued:
            invoice = data.draw(st.sampled_from(sorted(issued, key=lambda i: i.month)))
            left = (
                invoice.subtotal
                - invoice.credits
                + sum(note.subtotal for note in invoice.credit_notes.all())
            )
            amount = min(Decimal(cents) / 100, left)
            if amount > 0:
                services.credit_note_issue(
                    caller=self.operator, invoice=invoice, amount=amount, reason="Outage"
                )

    @rule(cents=st.integers(min_value=1, max_value=20000))
    def credit_granted(self, cents):
        services.credit_grant(
            caller=self.operator,
            organization=self.organization,
            amount=Decimal(cents) / 100,
            reason="Goodwill",
        )

    @rule(
        starts_in=STARTS_IN,
        months=st.sampled_from([1, 2]),
        short_by=st.sampled_from([0, 5]),
        packages=st.sampled_from([1, 2]),
        decided=st.sampled_from(["now", "later"]),
    )
    def order_a_package(self, starts_in, months, short_by, packages, decided):
        """A quota package (8 H100 a month) for whole or started months (30 days each) from
        ``starts_in`` hours on: approved and fulfilled at once, or left to an operator."""
        self.order(
            "h100-package",
            quantity=packages,
            starts_in=starts_in,
            length=MONTH * months - timedelta(hours=short_by),
            decided=decided,
        )

    @rule(
        starts_in=STARTS_IN,
        hours=st.sampled_from([4, 30, 24 * 10]),
        gpus=st.sampled_from([4, 8]),
        decided=st.sampled_from(["now", "later"]),
    )
    def order_reserved_gpus(self, starts_in, hours, gpus, decided):
        """Reserved H100 bought by an order: its fulfilment holds them (a reservation)."""
        self.order(
            "h100-reserved",
            quantity=gpus,
            starts_in=starts_in,
            length=timedelta(hours=hours),
            decided=decided,
        )

    def order(self, slug, *, quantity, starts_in, length, decided):
        starts_at = clock.now().replace(microsecond=0) + timedelta(hours=starts_in)
        made = services.order_create(
            caller=self.owner,
            organization=self.organization,
            request=OrderRequest(
                item=slug, quantity=quantity, starts_at=starts_at, ends_at=starts_at + length
            ),
        )
        if decided == "now":
            self.approved(made)

    def approved(self, order):
        """An operator approves; the task queued on commit fulfils (here: at once)."""
        services.order_approve(caller=self.operator, order=order)
        services.order_fulfil(order_id=str(order.pk))

    @precondition(lambda self: Order.objects.filter(state=Order.State.SUBMITTED).exists())
    @rule(data=st.data(), approve=st.booleans())
    def decide_an_order(self, data, approve):
        """An operator decides a submitted order, perhaps after its period began (or ended)."""
        waiting = list(Order.objects.filter(state=Order.State.SUBMITTED).order_by("created_at"))
        if waiting:
            order = data.draw(st.sampled_from(waiting)) if data else waiting[0]
            if approve:
                self.approved(order)
            else:
                services.order_reject(caller=self.operator, order=order, reason="No")

    @rule(
        starts_in=STARTS_IN,
        hours=st.sampled_from([4, 30, 24 * 10]),
        gpus=st.sampled_from([4, 8, 16]),
        approve=st.booleans(),
    )
    def reserve(self, starts_in, hours, gpus, approve):
        """GPUs reserved through scheduling (no order), approved by an operator or not (then
        they expire unapproved at the window's start); refused when the pool is booked."""
        starts_at = clock.now().replace(microsecond=0) + timedelta(hours=starts_in)
        try:
            held = scheduling.reservations_request(
                caller=self.owner,
                organization=self.organization,
                request=scheduling.ReservationRequest(
                    gpu_class="H100-80GB",
                    gpus=gpus,
                    starts_at=starts_at,
                    ends_at=starts_at + timedelta(hours=hours),
                    pool="dgx-h100",
                ),
            )
        except REFUSED:
            return
        if approve:
            for reservation in held:
                if reservation.state == Reservation.State.REQUESTED:
                    scheduling.reservation_approve(caller=self.operator, reservation=reservation)

    @precondition(
        lambda self: Reservation.objects.filter(state__in=Reservation.HOLDING_STATES).exists()
    )
    @rule(data=st.data())
    def cancel_a_reservation(self, data):
        """The owner cancels a reservation that still holds GPUs (ordered or not); the task
        queued on commit records what it costs (here: at once)."""
        holding = list(
            Reservation.objects.filter(state__in=Reservation.HOLDING_STATES).order_by(
                "requested_at", "pk"
            )
        )
        if holding:
            reservation = data.draw(st.sampled_from(holding)) if data else holding[0]
            scheduling.reservation_cancel(caller=self.owner, reservation=reservation)
            services.cancellation_charge_record(reservation_id=str(reservation.pk))

    # What the worker's beat does, in order.

    def cycle(self):
        result = scheduling.scheduling_cycle_run()
        for workload_id in result.preempted:
            scheduling.workload_objects_delete(workload_id=workload_id, backend=self.backend)
        for workload_id in result.admitted:
            scheduling.workload_launch(workload_id=workload_id, backend=self.backend)

    def beat(self):
        scheduling.reservations_advance()
        scheduling.quota_requests_advance()
        scheduling.workloads_sync(backend=self.backend)
        self.cycle()
        scheduling.workloads_sync(backend=self.backend)
        services.usage_meter()
        tasks.invoices_draft()

    # Properties.

    @invariant()
    def every_placed_second_is_rated_exactly_once(self):
        horizon = hour_floor(clock.now())
        for placement in Placement.objects.filter(running_at__isnull=False).select_related(
            "workload"
        ):
            interval = UsageInterval.objects.filter(placement_id=placement.pk).first()
            if interval is None or (interval.ended_at is None and placement.ended_at):
                continue  # not yet seen by the meter: the next beat's
            rated_to = interval.ended_at or interval.rated_until or interval.started_at
            expected = placed_seconds(placement, min(rated_to, placement.ended_at or horizon))
            rated = interval.records.aggregate(total=Sum("quantity_seconds"))["total"] or 0
            assert rated == expected, (placement.pk, rated, expected)

    @invariant()
    def an_ended_periods_records_are_on_exactly_one_invoice_of_it(self):
        now = clock.now()
        invoices = list(
            Invoice.objects.filter(corrects__isnull=True)
            .exclude(state=Invoice.State.VOID)
            .order_by("month")
        )
        for before, after in pairwise(invoices):
            assert before.month < after.month  # one per month
            if (after.month.year * 12 + after.month.month) - (
                before.month.year * 12 + before.month.month
            ) == 1:
                assert before.period_end == after.period_start  # no overlap, no gap
        ended = [invoice for invoice in invoices if invoice.period_end <= now]
        for invoice in ended:
            in_period = BillingRecord.objects.filter(
                starts_at__gte=invoice.period_start, starts_at__lt=invoice.period_end
            )
            on_lines = sum(
                (line.amount for line in invoice.lines.all() if line.charge in USE_CHARGES),
                Decimal(0),
            )
            assert selectors.charged(in_period) == on_lines, invoice

    @invariant()
    def an_ended_periods_packages_and_cancellations_are_on_exactly_one_invoice_of_it(self):
        """Each month of a quota package (by order and amount) that begins in an ended period,
        and each cancellation charge recorded in it, is on that period's invoice, once."""
        now = clock.now()
        for invoice in (
            Invoice.objects.filter(corrects__isnull=True, period_end__lte=now)
            .exclude(state=Invoice.State.VOID)
            .prefetch_related("lines")
        ):
            packages = selectors.package_charges(
                organization_id=self.organization.pk,
                starts_at=invoice.period_start,
                ends_at=invoice.period_end,
            )
            on_lines = [
                (re.search(r"\(order ([0-9a-f-]+)\)", line.description)[1], line.amount)
                for line in invoice.lines.all()
                if line.charge == "quota_package"
            ]
            assert sorted(on_lines) == sorted(
                (str(charge.order.pk), charge.amount) for charge in packages
            ), invoice
            cancellations = CancellationCharge.objects.filter(
                organization=self.organization,
                cancelled_at__gte=invoice.period_start,
                cancelled_at__lt=invoice.period_end,
                amount__gt=0,
            ).values_list("amount", flat=True)
            assert sorted(
                line.amount for line in invoice.lines.all() if line.charge == "cancellation"
            ) == sorted(cancellations), invoice

    @invariant()
    def every_cancelled_reservation_is_charged_once(self):
        assert CancellationCharge.objects.count() == (
            Reservation.objects.filter(state=Reservation.State.CANCELLED).count()
        )

    @invariant()
    def an_ended_month_without_invoice_has_no_charges(self):
        """Every package month and cancellation charge before the current period's start lies
        in some invoice's period."""
        now = clock.now()
        start, _ = selectors.period_of(organization=self.organization, at=now)
        periods = list(
            Invoice.objects.filter(corrects__isnull=True)
            .exclude(state=Invoice.State.VOID)
            .values_list("period_start", "period_end")
        )
        earliest = min((a for a, _ in periods), default=start)
        moments = [
            max(charge.starts_at, charge.order.fulfilled_at)  # a month approved late: then
            for charge in selectors.package_charges(
                organization_id=self.organization.pk, starts_at=earliest - MONTH * 3, ends_at=start
            )
        ] + list(
            CancellationCharge.objects.filter(cancelled_at__lt=start, amount__gt=0).values_list(
                "cancelled_at", flat=True
            )
        )
        for moment in moments:
            assert any(a <= moment < b for a, b in periods), moment

    @invariant()
    def an_ended_month_without_invoice_has_no_records(self):
        """Every record before the current period's start lies in some invoice's period."""
        now = clock.now()
        start, _ = selectors.period_of(organization=self.organization, at=now)
        periods = list(
            Invoice.objects.filter(corrects__isnull=True)
            .exclude(state=Invoice.State.VOID)
            .values_list("period_start", "period_end")
        )
        for moment in BillingRecord.objects.filter(starts_at__lt=start).values_list(
            "starts_at", flat=True
        ):
            assert any(a <= moment < b for a, b in periods), moment

    @invariant()
    def totals_are_the_sums_of_lines(self):
        for invoice in Invoice.objects.prefetch_related("lines"):
            subtotal = sum((line.amount for line in invoice.lines.all()), Decimal(0))
            assert invoice.subtotal == subtotal
            assert invoice.total == invoice.subtotal - invoice.credits + invoice.tax

    @invariant()
    def credit_is_never_spent_twice_nor_below_zero(self):
        granted = Credit.objects.aggregate(total=Sum("amount"))["total"] or Decimal(0)
        spent = Invoice.objects.filter(
            corrects__isnull=True, state__in=[Invoice.State.ISSUED, Invoice.State.PAID]
        ).aggregate(total=Sum("credits"))["total"] or Decimal(0)
        assert Decimal(0) <= spent <= granted
        assert selectors.credit_balance(organization=self.organization) >= 0
        for invoice in Invoice.objects.filter(corrects__isnull=True):
            assert Decimal(0) <= invoice.credits <= max(invoice.subtotal, Decimal(0))

    @invariant()
    def the_usage_api_equals_the_invoices(self):
        """The month to date is what the current draft's subtotal is when built at the same
        moment (built here and rolled back: the beat builds it); a past period's cost is what
        its invoice's use lines say."""
        now = clock.now()
        start, end = selectors.period_of(organization=self.organization, at=now)
        summary = selectors.usage_summary(
            caller=self.owner, organization=self.organization, starts_at=start, ends_at=end
        )
        local = start.astimezone(self.organization.zone) + timedelta(days=15)
        moment = transaction.savepoint()
        draft = services.invoice_draft(
            organization=self.organization, year=local.year, month=local.month
        )
        transaction.savepoint_rollback(moment)
        if draft.state == Invoice.State.DRAFT:
            assert (draft.period_start, draft.period_end) == (start, end)
            assert summary.month_to_date == draft.subtotal
        for invoice in Invoice.objects.filter(corrects__isnull=True).exclude(
            state=Invoice.State.VOID
        ):
            if invoice.period_end > now:
                continue
            past = selectors.usage_summary(
                caller=self.owner,
                organization=self.organization,
                starts_at=invoice.period_start,
                ends_at=invoice.period_end,
            )
            use = sum(
                (line.amount for line in invoice.lines.all() if line.charge in USE_CHARGES),
                Decimal(0),
            )
            assert past.cost == use, invoice


FIXTURES: dict = {}


@pytest.fixture
def money_world(acme, alice):
    """The demo's cluster, acme with every H100 (whole or shared) and an on-demand price."""
    scheduling.cluster_description_apply(path=Path(django_settings.PORTAL_SIMULATED_CLUSTER))
    backend = simulated_backend(description_path=Path(django_settings.PORTAL_SIMULATED_CLUSTER))
    scheduling.inventory_sync(backend=backend)
    h100 = GpuClass.objects.get(name="H100-80GB")
    for resource, amount in (("gpus", 64), ("shared", 64000)):
        QuotaGrant.objects.create(
            organization=acme, gpu_class=h100, resource=resource, guarantee=amount, limit=amount
        )
    projects = [ProjectFactory(organization=acme, slug=slug) for slug in ("vision", "web")]
    for project in projects:
        scheduling.project_provision(project_id=project.pk, backend=backend)
    operator = UserFactory(email="finance@example.com", is_staff=True, is_superuser=True)
    item = services.catalog_item_save(
        caller=Caller(user=operator),
        item=CatalogItem(
            slug="h100-on-demand",
            name="H100 on demand",
            kind="on_demand",
            gpu_class=h100,
            active_from=clock.now() - timedelta(days=1),
        ),
    )
    services.price_version_add(caller=Caller(user=operator), item=item, unit_price=Decimal("2.9"))
    for slug, kind, quantity, price in (
        ("h100-package", "quota_package", 8, "10000"),
        ("h100-reserved", "reservation", 1, "2.4650"),
    ):
        offered = services.catalog_item_save(
            caller=Caller(user=operator),
            item=CatalogItem(
                slug=slug,
                name=slug,
                kind=kind,
                gpu_class=h100,
                quantity=quantity,
                active_from=clock.now() - timedelta(days=1),
            ),
        )
        services.price_version_add(
            caller=Caller(user=operator), item=offered, unit_price=Decimal(price)
        )
    FIXTURES.update(acme=acme, alice=alice, operator=operator, projects=projects, item=item)
    assert Node.objects.exists()
    yield
    FIXTURES.clear()


@pytest.mark.slow
def test_money_is_exact_through_any_lifecycle(money_world):
    run_state_machine_as_test(
        MoneyLifecycle,
        settings=settings(
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            # Bounded: a failing run prints its steps without minutes of shrinking.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )
