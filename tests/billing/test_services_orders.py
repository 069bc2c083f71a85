"""Orders: priced when submitted, approved by the item's rule or an operator, fulfilled once
(a reservation, a quota package or a dedicated pool), cancelled before fulfilment; refused on
the field when malformed or beyond what the portal can sell."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import transaction

from billing import services, tasks
from billing.models import Order
from portal import clock
from portal.errors import Conflict
from scheduling import services as scheduling
from scheduling.models import GpuClass, QuotaRequest, Reservation
from tenants.permissions import Caller

from .conftest import approved, hold, order

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/orders/"


def test_submitting_fixes_the_price_in_force_and_the_total(reserved, alice, acme):
    made = order(alice, acme)
    assert (made.state, made.unit_price, made.total) == (
        Order.State.SUBMITTED,
        Decimal("2.4650"),
        Decimal("78.88"),
    )


def test_a_later_price_change_does_not_change_a_submitted_order(reserved, alice, acme, operator):
    made = order(alice, acme)
    services.price_version_add(
        caller=Caller(user=operator), item=reserved, unit_price=Decimal("9"), effective_from=None
    )
    made.refresh_from_db()
    assert made.unit_price == Decimal("2.4650")


def test_an_order_under_the_items_ceiling_is_approved_and_queued_for_fulfilment(
    offer, cluster, alice, acme, django_capture_on_commit_callbacks
):
    offer(slug="h100-reserved", kind="reservation", auto_approve_up_to=Decimal("100"))
    with django_capture_on_commit_callbacks() as callbacks:
        made = order(alice, acme)
    queued = [(c.func, c.keywords) for c in callbacks if c.func == tasks.order_fulfil.delay]
    assert (made.state, queued) == (
        Order.State.APPROVED,
        [(tasks.order_fulfil.delay, {"order_id": str(made.pk)})],
    )


def test_fulfilling_a_reservation_order_holds_the_gpus_approved(reserved, alice, acme, operator):
    made = approved(alice, acme, operator)
    services.order_fulfil(order_id=str(made.pk))
    made.refresh_from_db()
    held = Reservation.objects.get()
    assert (made.state, held.state, held.gpus, made.fulfilled_objects) == (
        Order.State.FULFILLED,
        Reservation.State.APPROVED,
        8,
        [{"reservation": str(held.pk)}],
    )


def test_fulfilling_twice_makes_one_reservation(reserved, alice, acme, operator):
    made = approved(alice, acme, operator)
    services.order_fulfil(order_id=str(made.pk))
    services.order_fulfil(order_id=str(made.pk))
    assert Reservation.objects.count() == 1


def test_a_fulfilment_that_dies_before_its_commit_leaves_nothing_and_the_retry_makes_it_once(
    reserved, alice, acme, operator
):
    made = approved(alice, acme, operator)
    with pytest.raises(KeyboardInterrupt), transaction.atomic():
        services.order_fulfil(order_id=str(made.pk))
        raise KeyboardInterrupt  # the worker dies before the transaction commits
    left = (Reservation.objects.count(), Order.objects.get(pk=made.pk).state)
    services.order_fulfil(order_id=str(made.pk))
    assert (left, Reservation.objects.count()) == ((0, Order.State.APPROVED), 1)


def test_a_fulfilment_refused_by_scheduling_fails_with_the_reason(reserved, alice, acme, operator):
    made = approved(alice, acme, operator, quantity=64)
    hold(alice, acme, 8)  # meanwhile 8 of the pool's 64 GPUs were reserved
    failed = services.order_fulfil(order_id=str(made.pk))
    assert (failed.state, "lacks 8 of the 64 GPUs" in failed.failure_reason) == (
        Order.State.FAILED,
        True,
    )


def test_a_failed_fulfilment_retried_once_the_gpus_are_free_is_fulfilled(
    reserved, alice, acme, operator
):
    made = approved(alice, acme, operator, quantity=64)
    [blocking] = hold(alice, acme, 8)
    services.order_fulfil(order_id=str(made.pk))
    scheduling.reservation_cancel(caller=Caller(user=alice), reservation=blocking)
    services.order_fulfil_retry(caller=Caller(user=operator), order=made)
    assert services.order_fulfil(order_id=str(made.pk)).state == Order.State.FULFILLED


def test_fulfilling_a_quota_package_grants_it_for_the_period_it_was_sold_for(
    offer, cluster, alice, acme, operator
):
    offer(slug="h100-package", kind="quota_package", quantity=8, price="10000")
    made = approved(alice, acme, operator, item="h100-package", quantity=1, hours=24 * 30)
    services.order_fulfil(order_id=str(made.pk))
    increase = QuotaRequest.objects.get(organization=acme)
    assert (increase.granted_amount, increase.granted_from, increase.granted_until) == (
        8,
        made.starts_at,
        made.ends_at,
    )


def test_an_order_of_reserved_mig_instances_reserves_instances_of_its_profile(
    offer, cluster, alice, acme, operator
):
    offer(
        slug="a100-1g-reserved",
        kind="reservation",
        price="0.2500",
        gpu_class=GpuClass.objects.get(name="A100-80GB"),
        mig_profile="mig-1g.10gb",
    )
    made = approved(alice, acme, operator, item="a100-1g-reserved", quantity=14)
    services.order_fulfil(order_id=str(made.pk))
    held = Reservation.objects.get()
    assert (held.pool.name, held.mig_profile, held.gpus) == ("a100-mig", "mig-1g.10gb", 14)


@pytest.fixture
def dedicated(offer, cluster):
    return offer(slug="h100-pool", kind="dedicated_pool", price="50000")


def test_a_dedicated_pool_reserves_all_of_the_pools_gpus_for_the_period(
    dedicated, alice, acme, operator
):
    made = approved(
        alice, acme, operator, item="h100-pool", quantity=1, hours=24 * 30, pool="dgx-h100"
    )
    services.order_fulfil(order_id=str(made.pk))
    [held] = Reservation.objects.filter(organization=acme)
    assert (held.pool.name, held.gpus, held.state, held.ends_at - held.starts_at) == (
        "dgx-h100",
        64,
        Reservation.State.APPROVED,
        timedelta(days=30),
    )


def test_a_dedicated_pool_already_partly_reserved_fails_with_the_reason(
    dedicated, alice, acme, operator
):
    hold(alice, acme, 8)
    made = approved(alice, acme, operator, item="h100-pool", quantity=1, pool="dgx-h100")
    failed = services.order_fulfil(order_id=str(made.pk))
    assert (failed.state, "lacks 8 of the 64 GPUs" in failed.failure_reason) == (
        Order.State.FAILED,
        True,
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "pool"),
        ({"pool": "a100-mig"}, "pool"),
        ({"pool": "dgx-h100", "quantity": 2}, "quantity"),
    ],
)
def test_a_dedicated_pool_order_names_one_pool_of_the_items_class(
    dedicated, alice, acme, fields, field
):
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, item="h100-pool", **{"quantity": 1, **fields})
    assert (field in refused.value.message_dict, Order.objects.count()) == (True, 0)


def test_an_order_is_cancelled_before_its_fulfilment_but_not_after(reserved, alice, acme, operator):
    cancelled = services.order_cancel(caller=Caller(user=alice), order=order(alice, acme))
    made = approved(alice, acme, operator)
    services.order_fulfil(order_id=str(made.pk))
    with pytest.raises(Conflict):
        services.order_cancel(caller=Caller(user=alice), order=made)
    assert cancelled.state == Order.State.CANCELLED


def test_a_draft_is_priced_only_when_submitted(reserved, alice, acme):
    draft = order(alice, acme, submit=False)
    submitted = services.order_submit(caller=Caller(user=alice), order=draft)
    assert ((draft.state, draft.total), submitted.total) == (
        (Order.State.DRAFT, None),
        Decimal("78.88"),
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"item": "nothing"}, "item"),
        ({"starts_at": "past"}, "starts_at"),
        ({"hours": -1}, "ends_at"),
        ({"quantity": 0}, "quantity"),
        ({"project": "web"}, "project"),
    ],
)
def test_a_malformed_order_is_refused_on_its_field_and_nothing_is_saved(
    reserved, alice, acme, fields, field
):
    if fields.get("starts_at") == "past":
        fields["starts_at"] = clock.now() - timedelta(hours=1)
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, **fields)
    assert (field in refused.value.message_dict, Order.objects.count()) == (True, 0)


def test_an_item_offered_only_to_others_cannot_be_ordered(offer, cluster, globex, alice, acme):
    private = offer(slug="globex-only", kind="reservation", public=False)
    private.organizations.add(globex)
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, item="globex-only")
    assert list(refused.value.message_dict) == ["item"]


def test_a_period_shorter_than_the_minimum_commitment_is_refused(offer, cluster, alice, acme):
    offer(slug="h100-reserved", kind="reservation", minimum_commitment_hours=8)
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, hours=4)
    assert list(refused.value.message_dict) == ["ends_at"]


def test_a_period_longer_than_the_item_allows_is_refused(offer, cluster, alice, acme):
    offer(slug="h100-reserved", kind="reservation", maximum_period_hours=24)
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, hours=25)
    assert refused.value.message_dict == {"ends_at": ["At most 24 h, by the item's terms."]}


def test_a_submitted_order_is_mailed_to_its_creator_and_the_operators(
    reserved, alice, acme, operator
):
    made = order(alice, acme)
    services.order_email_send(order_id=str(made.pk))
    assert (sorted(m.to[0] for m in mail.outbox), {"78.88 EUR" in m.body for m in mail.outbox}) == (
        sorted([alice.email, operator.email]),
        {True},
    )


def test_each_step_of_an_order_past_its_draft_queues_its_mail(
    reserved, alice, acme, operator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        made = order(alice, acme)
        services.order_reject(caller=Caller(user=operator), order=made, reason="Not now.")
    mails = [c.keywords for c in callbacks if c.func == tasks.order_email_send.delay]
    assert mails == [
        {"order_id": str(made.pk), "change": change, "occurrence": ""}
        for change in ("submitted", "rejected")
    ]


def test_an_order_is_priced_at_the_organizations_own_price(reserved, operator, alice, acme):
    services.price_version_add(
        caller=Caller(user=operator), item=reserved, unit_price=Decimal("2.0000"), organization=acme
    )
    assert order(alice, acme).total == Decimal("64.00")


def test_more_reserved_gpus_than_the_largest_pool_has_are_refused_as_a_reservation_is(
    reserved, alice, acme
):
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, quantity=65)
    assert refused.value.message_dict == {
        "quantity": ["65 GPUs, but the largest pool of H100-80GB has 64."]
    }


def test_a_quota_package_for_a_thousand_years_is_refused(offer, cluster, alice, acme):
    offer(slug="h100-package", kind="quota_package", quantity=8, price="10000")
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, item="h100-package", quantity=1, hours=24 * 365 * 1000)
    assert list(refused.value.message_dict) == ["ends_at"]


def test_more_packages_than_the_cluster_has_gpus_for_are_refused(offer, cluster, alice, acme):
    offer(slug="h100-package", kind="quota_package", quantity=8, price="10000")
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, item="h100-package", quantity=9, hours=24 * 30)
    assert list(refused.value.message_dict) == ["quantity"]


def test_a_total_too_large_to_keep_is_refused_on_the_quantity(offer, cluster, alice, acme):
    offer(slug="h100-reserved", kind="reservation", price="100000000")
    with pytest.raises(ValidationError) as refused:
        order(alice, acme, quantity=64, hours=24 * 365 * 4)
    assert (list(refused.value.message_dict), Order.objects.count()) == (["quantity"], 0)
