"""An elastic gang admitted short (fewer replicas than it asked for, at least its minimum) gets
Kubernetes objects for the replicas the engine placed, and no more, in every kind."""

import kubernetes_validate
import pytest
from django.core.exceptions import ValidationError

from scheduling import services
from scheduling.models import Placement, SimulatedObject, Workload
from tenants.permissions import Caller

from ..k8s.test_manifests import KUBERNETES_VERSIONS

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_h100_node_free(submit, cycle):
    """Seven one-node training gangs hold seven of the eight DGX H100 nodes."""
    fillers = [submit(name=f"fill-{n}", gpus=8) for n in range(7)]
    cycle()
    return fillers


def _admitted_short(submit, cycle, *, kind: str) -> Workload:
    """A gang of 4 one-node replicas (at least 1) where only one node is free: on a lower tier
    than the work holding the others, so that nothing is preempted for it."""
    workload = submit(name="elastic", kind=kind, tier="batch", gpus=8, replicas=4, min_replicas=1)
    cycle()
    workload.refresh_from_db()
    assert workload.state == Workload.State.ADMITTED
    assert Placement.objects.filter(workload=workload, ended_at__isnull=True).count() == 1
    return workload


def _objects(workload: Workload) -> dict[str, dict]:
    return {
        item.kind: item.manifest
        for item in SimulatedObject.objects.filter(
            namespace=workload.project.namespace, name=workload.name
        )
    }


def _validate(manifests: dict[str, dict]) -> None:
    for manifest in manifests.values():
        for version in KUBERNETES_VERSIONS:
            kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("kind", ["training", "fine-tuning", "batch-inference"])
def test_an_elastic_gang_admitted_with_one_replica_gets_a_job_of_one_pod(
    one_h100_node_free, submit, cycle, kind
):
    workload = _admitted_short(submit, cycle, kind=kind)
    objects = _objects(workload)
    job = objects["Job"]["spec"]
    assert (job["parallelism"], job["completions"]) == (1, 1)
    # A single pod has no members to find: no headless service, the single-pod retry rule.
    assert "Service" not in objects
    assert job["backoffLimit"] > 0
    _validate(objects)


def test_an_elastic_gang_admitted_with_two_of_four_gets_a_job_of_two_pods(submit, cycle):
    fillers = [submit(name=f"fill-{n}", gpus=8) for n in range(6)]
    cycle()
    workload = submit(name="elastic", tier="batch", gpus=8, replicas=4, min_replicas=1)
    cycle()
    objects = _objects(workload)
    job = objects["Job"]["spec"]
    assert len(fillers) == 6
    assert (job["parallelism"], job["completions"]) == (2, 2)
    assert job["backoffLimit"] == 0
    assert "Service" in objects
    _validate(objects)


def test_an_elastic_inference_service_admitted_with_one_replica_gets_a_deployment_of_one(
    one_h100_node_free, submit, cycle
):
    workload = _admitted_short(submit, cycle, kind="inference")
    objects = _objects(workload)
    assert objects["Deployment"]["spec"]["replicas"] == 1
    _validate(objects)


def test_the_objects_of_an_elastic_gang_admitted_short_are_all_deleted_when_it_ends(
    one_h100_node_free, submit, cycle, cluster
):
    workload = _admitted_short(submit, cycle, kind="training")
    services.workload_cancel(caller=Caller(user=workload.submitted_by), workload=workload)
    services.workload_objects_delete(workload_id=workload.pk, backend=cluster)
    assert _objects(workload) == {}


def test_a_notebook_of_more_than_one_replica_is_refused_at_submission(submit):
    with pytest.raises(ValidationError) as refused:
        submit(name="nb", kind="notebook", tier="dev", gpus=1, replicas=2, min_replicas=1)
    assert "replicas" in refused.value.message_dict
