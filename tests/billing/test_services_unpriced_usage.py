"""Use rated with no price in force (MIG instances the catalog does not price): reported to
operators (selector, admin, insight, metric), held out of issue until finance prices it, never
invoiced at zero without a word."""

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from billing import selectors, services
from billing.models import BillingRecord, Invoice
from portal import clock
from portal.errors import Conflict
from scheduling import insights
from scheduling.models import GpuClass, NodePool, Reservation
from tenants.permissions import Caller

from .conftest import DAY, at, ran

pytestmark = pytest.mark.django_db

UNPRICED_LINE = "NO PRICE IN FORCE"


@pytest.fixture
def mig_priced(offer, mig_ran):
    """The catalog prices mig-1g.10gb instances from now on, at 0.2571 an instance-hour."""
    return offer(
        slug="a100-mig-1g-on-demand",
        gpu_class=GpuClass.objects.get(name="A100-80GB"),
        mig_profile="mig-1g.10gb",
        price="0.2571",
    )


def test_mig_use_rated_with_no_price_is_listed_as_unpriced_use(mig_ran):
    [use] = selectors.usage_unpriced()
    assert (use.organization, use.project, use.resource, use.hours, use.unit) == (
        "acme",
        "vision",
        "mig",
        2,
        "instance-hours",
    )


def test_priced_use_is_not_listed_as_unpriced(on_demand, vision):
    ran(vision, start=1, end=2)
    services.usage_meter(now=at(3))
    assert selectors.usage_unpriced() == []


def test_a_draft_line_of_unpriced_use_says_it_has_no_price(held_draft):
    [line] = held_draft.lines.all()
    assert (UNPRICED_LINE in line.description, line.unit_price, line.amount) == (True, None, 0)


def test_an_invoice_with_unpriced_use_is_not_issued(held_draft, operator):
    with pytest.raises(Conflict):
        services.invoice_issue(caller=Caller(user=operator), invoice=held_draft)
    held_draft.refresh_from_db()
    assert (held_draft.state, held_draft.number) == (Invoice.State.DRAFT, None)


def test_the_refusal_to_issue_names_the_unpriced_use(held_draft, operator):
    with pytest.raises(Conflict) as refused:
        services.invoice_issue(caller=Caller(user=operator), invoice=held_draft)
    assert (
        refused.value.code,
        "acme/vision: 2.0000 instance-hours of A100-80GB mig-1g.10gb instances"
        in refused.value.message,
    ) == (
        "unpriced_usage",
        True,
    )


def test_unpriced_use_priced_later_is_charged_at_the_price_now_in_force(
    held_draft, mig_priced, operator
):
    priced = services.usage_unpriced_price(caller=Caller(user=operator))
    costs = {record.unit_price for record in BillingRecord.objects.all()}
    assert (priced, costs, selectors.usage_unpriced()) == (
        1,
        {mig_priced.prices.get().unit_price},
        [],
    )


def test_pricing_unpriced_use_makes_its_draft_again_so_that_it_may_be_issued(
    held_draft, mig_priced, operator
):
    services.usage_unpriced_price(caller=Caller(user=operator))
    issued = services.invoice_issue(caller=Caller(user=operator), invoice=held_draft)
    assert (issued.state, str(issued.subtotal)) == (Invoice.State.ISSUED, "0.51")  # 2 x 0.2571


def test_unpriced_use_stays_unpriced_while_the_catalog_has_no_price_for_it(held_draft, operator):
    assert services.usage_unpriced_price(caller=Caller(user=operator)) == 0


def test_only_operators_price_unpriced_use(held_draft, mig_priced, alice):
    with pytest.raises(Exception) as refused:
        services.usage_unpriced_price(caller=Caller(user=alice))
    assert refused.type.__name__ == "Forbidden"


def test_unpriced_use_is_an_insight_for_operators(mig_ran, operator):
    found = {i.rule: i for i in insights.insights(caller=Caller(user=operator), now=clock.now())}
    assert (
        found["unpriced_usage"]
        .subjects[0]
        .startswith(
            "acme/vision: 2.0000 instance-hours of A100-80GB mig-1g.10gb instances, on-demand use"
        )
    )


def test_a_resource_the_cluster_offers_with_no_price_is_listed(on_demand):
    unpriced = {str(resource) for resource in selectors.resources_unpriced(at=clock.now())}
    assert (
        "A100-80GB mig-1g.10gb instances: no on-demand use price" in unpriced,
        "H100-80GB: no on-demand use price" in unpriced,
    ) == (True, False)


def test_unpriced_use_is_a_metric_in_its_unit(client, settings, mig_ran):
    settings.PORTAL_METRICS_TOKEN = "metrics-token"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token")
    samples = {
        frozenset(sample.labels.items()): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        if family.name == "portal_unpriced_usage_hours"
        for sample in family.samples
    }
    labels = {
        "organization": "acme",
        "gpu_class": "A100-80GB",
        "mig_profile": "mig-1g.10gb",
        "resource": "mig",
        "charge": "on_demand",
    }
    assert samples == {frozenset(labels.items()): 2.0}


@pytest.fixture
def reserved_unpriced(on_demand, acme):
    """Two H100s reserved by acme for the two hours after DAY, no reservation item priced."""
    now = clock.now()
    Reservation.objects.create(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        pool=NodePool.objects.get(name="dgx-h100"),
        gpus=2,
        starts_at=DAY,
        ends_at=DAY + timedelta(hours=2),
        state=Reservation.State.APPROVED,
        requested_at=now,
    )
    services.usage_meter(now=at(3))


def test_reserved_capacity_no_item_prices_is_unpriced_use(reserved_unpriced):
    [use] = selectors.usage_unpriced()
    assert (use.charge, use.hours) == ("reservation", 4)


def test_reserved_capacity_priced_later_is_charged_at_the_reservation_price(
    reserved_unpriced, reserved, operator
):
    services.usage_unpriced_price(caller=Caller(user=operator))
    costs = BillingRecord.objects.filter(charge="reservation").values_list("cost", flat=True)
    assert (sum(costs), selectors.usage_unpriced()) == (
        4 * reserved.prices.get().unit_price,
        [],
    )
