"""The operator API's GPU classes and priority tiers: listed, and changed as admin changes
them, through the service that validates and audits."""

from datetime import timedelta

import pytest

from scheduling.models import GpuClass, PriorityTier
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


def test_gpu_classes_are_listed_with_what_drivers_call_them(cluster, ops):
    _, client = ops
    rows = client.get(f"{OP}/gpu-classes/").json()["results"]
    l4 = next(row for row in rows if row["name"] == "L4")
    assert l4["products"] == ["NVIDIA-L4"]


def test_a_gpu_class_changed_is_audited_with_what_changed(cluster, ops):
    _, client = ops
    response = client.patch(
        f"{OP}/gpu-classes/L4/", {"products": ["NVIDIA-L4", "NVIDIA-L4-24GB"]}, format="json"
    )
    assert response.status_code == 200
    assert GpuClass.objects.get(name="L4").products == ["NVIDIA-L4", "NVIDIA-L4-24GB"]
    event = AuditEvent.objects.get(action="gpuclass.update")
    assert event.payload == {"products": ["NVIDIA-L4", "NVIDIA-L4-24GB"]}


def test_a_field_a_gpu_class_does_not_have_is_a_field_error(cluster, ops):
    _, client = ops
    response = client.patch(f"{OP}/gpu-classes/L4/", {"name": "L5"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["error"]["fields"]


def test_a_tiers_idle_stop_is_set_in_seconds(cluster, ops):
    _, client = ops
    response = client.patch(
        f"{OP}/priority-tiers/batch/", {"idle_stop_after_seconds": 3600}, format="json"
    )
    assert response.json()["idle_stop_after_seconds"] == 3600
    assert PriorityTier.objects.get(name="batch").idle_stop_after == timedelta(hours=1)
    assert AuditEvent.objects.filter(action="prioritytier.update").count() == 1


def test_a_tier_value_another_tier_has_is_a_field_error(cluster, ops):
    _, client = ops
    taken = PriorityTier.objects.exclude(name="batch").first().value
    response = client.patch(f"{OP}/priority-tiers/batch/", {"value": taken}, format="json")
    assert response.status_code == 400
    assert "value" in response.json()["error"]["fields"]


def test_a_tier_changed_to_what_it_is_audits_nothing(cluster, ops):
    _, client = ops
    description = PriorityTier.objects.get(name="batch").description
    client.patch(f"{OP}/priority-tiers/batch/", {"description": description}, format="json")
    assert not AuditEvent.objects.filter(action="prioritytier.update").exists()


def test_a_tiers_preemption_contract_is_set_and_audited(cluster, ops):
    _, client = ops
    contract = {"min_run_time_seconds": 1800, "notice_seconds": 120, "max_evictions": 2}
    response = client.patch(f"{OP}/priority-tiers/batch/", contract, format="json")
    assert {field: response.json()[field] for field in contract} == contract
    tier = PriorityTier.objects.get(name="batch")
    assert (tier.min_run_time, tier.notice_seconds, tier.max_evictions) == (
        timedelta(minutes=30),
        120,
        2,
    )
    assert AuditEvent.objects.filter(action="prioritytier.update").count() == 1


def test_an_operator_turns_a_tiers_lost_work_credit_on_audited(cluster, ops):
    _, client = ops
    response = client.patch(
        f"{OP}/priority-tiers/batch/", {"lost_work_credited": True}, format="json"
    )
    assert response.json()["lost_work_credited"] is True
    assert PriorityTier.objects.get(name="batch").lost_work_credited
    assert AuditEvent.objects.get(action="prioritytier.update").payload


def test_a_lost_work_credit_that_is_not_a_boolean_is_a_field_error(cluster, ops):
    _, client = ops
    response = client.patch(
        f"{OP}/priority-tiers/batch/", {"lost_work_credited": "sometimes"}, format="json"
    )
    assert (response.status_code, list(response.json()["error"]["fields"])) == (
        400,
        ["lost_work_credited"],
    )


@pytest.mark.parametrize(
    "field", [("notice_seconds", 3601), ("max_evictions", 0), ("min_run_time_seconds", -1)]
)
def test_an_out_of_range_preemption_contract_is_a_field_error(cluster, ops, field):
    _, client = ops
    name, value = field
    response = client.patch(f"{OP}/priority-tiers/batch/", {name: value}, format="json")
    assert response.status_code == 400
    assert name in response.json()["error"]["fields"]
