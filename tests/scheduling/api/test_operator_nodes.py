"""The operator API's pools and nodes: listed with filters, cordoned, uncordoned and drained
through the services admin uses, each change audited with the operator's token."""

import pytest

from scheduling.models import Node, Workload
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


def names(response) -> list[str]:
    return [row["name"] for row in response.json()["results"]]


def test_nodes_are_listed_by_pool(cluster, ops):
    _, client = ops
    response = client.get(f"{OP}/nodes/?pool=l4-inference")
    assert response.status_code == 200
    assert names(response) == sorted(
        Node.objects.filter(pool__name="l4-inference").values_list("name", flat=True)
    )


def test_nodes_are_listed_by_whether_they_are_cordoned(cluster, ops):
    _, client = ops
    Node.objects.filter(name="dgx-h100-02").update(cordoned=True)
    assert names(client.get(f"{OP}/nodes/?cordoned=true")) == ["dgx-h100-02"]


def test_a_flag_that_is_neither_true_nor_false_is_a_field_error(cluster, ops):
    _, client = ops
    response = client.get(f"{OP}/nodes/?cordoned=yes")
    assert response.status_code == 400
    assert "cordoned" in response.json()["error"]["fields"]


def test_pools_count_their_nodes_and_gpus(cluster, ops):
    _, client = ops
    [pool] = client.get(f"{OP}/pools/?gpu_class=H100-80GB").json()["results"]
    assert (pool["name"], pool["nodes"], pool["gpus"]) == ("dgx-h100", 8, 64)


def test_cordoning_a_node_places_nothing_more_on_it_and_is_audited(cluster, ops):
    user, client = ops
    response = client.post(f"{OP}/nodes/dgx-h100-01/cordon/")
    assert (response.status_code, response.json()["cordoned"]) == (200, True)
    assert Node.objects.get(name="dgx-h100-01").cordoned
    event = AuditEvent.objects.get(action="node.cordon")
    assert (event.actor, event.via_token.owner, event.target_label) == (user, user, "dgx-h100-01")


def test_cordoning_a_cordoned_node_changes_nothing_and_audits_nothing_more(cluster, ops):
    _, client = ops
    client.post(f"{OP}/nodes/dgx-h100-01/cordon/")
    response = client.post(f"{OP}/nodes/dgx-h100-01/cordon/")
    assert response.status_code == 200
    assert AuditEvent.objects.filter(action="node.cordon").count() == 1


def test_uncordoning_a_node_places_work_on_it_again(cluster, ops):
    _, client = ops
    Node.objects.filter(name="dgx-h100-01").update(cordoned=True)
    response = client.post(f"{OP}/nodes/dgx-h100-01/uncordon/")
    assert response.json()["cordoned"] is False
    assert AuditEvent.objects.filter(action="node.uncordon").count() == 1


def test_draining_a_node_requeues_the_work_on_it(submit, cycle, ops):
    _, client = ops
    workload = submit(name="train", gpus=8)
    cycle()
    node = workload.placements.get().node.name
    response = client.post(f"{OP}/nodes/{node}/drain/")
    assert response.status_code == 200
    body = response.json()
    assert (body["node"]["cordoned"], [w["name"] for w in body["requeued"]]) == (True, ["train"])
    workload.refresh_from_db()
    assert workload.state == Workload.State.PENDING


def test_a_node_that_does_not_exist_is_a_404(cluster, ops):
    _, client = ops
    assert client.post(f"{OP}/nodes/nowhere/cordon/").status_code == 404
