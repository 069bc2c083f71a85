"""Cost models: operators add versions, audited, never from the past; and what a GPU-hour and a
node's hours cost under them, with power measured by DCGM where Prometheus reports it."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing import costing, services
from billing.models import CostModel
from portal import clock
from portal.errors import Forbidden
from portal.prometheus import PrometheusClient
from scheduling.models import Node, NodeAvailability, NodePool
from tenants.models import AuditEvent
from tenants.permissions import Caller

from .conftest import at
from .histories import availability_recorded

pytestmark = pytest.mark.django_db

TERMS = {
    "purchase_price_per_gpu": Decimal("36000.00"),  # over 50 months of 720 h: 1.00 an hour
    "lifetime_months": 50,
    "nameplate_watts": 700,  # at 0.20 per kWh: 0.14 an hour
    "price_per_kwh": Decimal("0.2000"),
    "overhead_per_node_hour": Decimal("0.8000"),
}


@pytest.fixture
def pool(cluster):
    return NodePool.objects.get(name="dgx-h100")


def add(operator, pool, **changes) -> CostModel:
    return services.cost_model_add(
        caller=Caller(user=operator), pool=pool, **{"effective_from": at(0), **TERMS, **changes}
    )


def test_an_operator_adds_a_cost_model_audited(operator, pool):
    version = add(operator, pool)
    assert (version.created_by, version.effective_from) == (operator, at(0))
    event = AuditEvent.objects.get(action="books.cost_model_add")
    assert event.payload["purchase_price_per_gpu"] == "36000.00"


def test_a_cost_model_cannot_start_in_the_past(operator, pool):
    with pytest.raises(ValidationError) as raised:
        add(operator, pool, effective_from=clock.now() - timedelta(hours=1))
    assert "effective_from" in raised.value.message_dict


def test_a_second_cost_model_from_the_same_moment_is_a_field_error(operator, pool):
    add(operator, pool)
    with pytest.raises(ValidationError) as raised:
        add(operator, pool)
    assert "effective_from" in raised.value.message_dict


def test_a_node_of_another_pool_is_a_field_error(operator, pool):
    elsewhere = Node.objects.exclude(pool=pool).first()
    with pytest.raises(ValidationError) as raised:
        add(operator, pool, node=elsewhere)
    assert "node" in raised.value.message_dict


def test_only_operators_add_cost_models(alice, pool):
    with pytest.raises(Forbidden):
        add(alice, pool)


def test_a_gpu_hour_is_its_amortised_price_and_its_power(operator, pool):
    assert costing.gpu_hour_cost(add(operator, pool)) == Decimal("1.14")


def test_measured_power_replaces_the_nameplate(operator, pool):
    assert costing.gpu_hour_cost(add(operator, pool), watts=Decimal(350)) == Decimal("1.07")


def test_a_mig_nodes_gpus_count_its_instances_slices_out_of_seven():
    assert costing.node_gpus(4, {"mig-1g.10gb": 14, "mig-3g.40gb": 4}) == 4 + Decimal(26) / 7


def test_a_node_costs_its_gpus_hours_and_its_overhead_whatever_its_state(operator, pool):
    version = add(operator, pool)
    node = Node.objects.filter(pool=pool).first()
    spans = availability_recorded(node, [(at(0), NodeAvailability.State.CORDONED)], until=at(2))
    cost = costing.nodes_cost(
        spans=spans, versions=[version], starts_at=at(0), ends_at=at(10), watts={}
    )
    assert cost == 2 * (8 * Decimal("1.14") + Decimal("0.80"))


def test_a_nodes_own_cost_model_overrides_its_pools(operator, pool):
    node = Node.objects.filter(pool=pool).first()
    versions = [add(operator, pool), add(operator, pool, node=node, overhead_per_node_hour=0)]
    spans = availability_recorded(node, [(at(0), NodeAvailability.State.AVAILABLE)])
    cost = costing.nodes_cost(
        spans=spans, versions=versions, starts_at=at(0), ends_at=at(1), watts={}
    )
    assert cost == 8 * Decimal("1.14")


def test_time_before_any_cost_model_costs_nothing(operator, pool):
    version = add(operator, pool, effective_from=at(1))
    node = Node.objects.filter(pool=pool).first()
    spans = availability_recorded(node, [(at(0), NodeAvailability.State.AVAILABLE)])
    cost = costing.nodes_cost(
        spans=spans, versions=[version], starts_at=at(0), ends_at=at(2), watts={}
    )
    assert cost == 8 * Decimal("1.14") + Decimal("0.80")


def test_the_power_each_node_drew_is_read_from_dcgm(httpserver):
    httpserver.expect_request("/api/v1/query").respond_with_json(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": {"Hostname": "dgx-h100-01"}, "value": [0, "412.5"]}],
            },
        }
    )
    metrics = PrometheusClient(url=httpserver.url_for("/"))
    watts = costing.measured_watts(metrics=metrics, starts_at=at(0), ends_at=at(24))
    assert watts == {"dgx-h100-01": Decimal("412.5")}
    [(request, _)] = httpserver.log
    assert "DCGM_FI_DEV_POWER_USAGE[86400s]" in request.args["query"]


def test_without_an_answer_from_prometheus_the_nameplate_stands(httpserver):
    httpserver.expect_request("/api/v1/query").respond_with_data("down", status=503)
    metrics = PrometheusClient(url=httpserver.url_for("/"))
    assert costing.measured_watts(metrics=metrics, starts_at=at(0), ends_at=at(1)) == {}
