import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal import clock
from scheduling import services
from scheduling.models import (
    Node,
    Placement,
    QuotaGrant,
    SimulatedObject,
    Workload,
    WorkloadEvent,
)
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory
from .conftest import minutes

pytestmark = pytest.mark.django_db


def test_a_submitted_workload_waits_pending(submit):
    assert submit().state == Workload.State.PENDING


def test_the_cycle_admits_a_workload_onto_free_gpus(submit, cycle):
    workload = submit(gpus=8, replicas=2)
    cycle()
    workload.refresh_from_db()
    assert workload.state == Workload.State.ADMITTED
    assert workload.gpu_class.name == "H100-80GB"
    assert Placement.objects.filter(workload=workload, ended_at__isnull=True).count() == 2


def test_an_admitted_training_gang_becomes_an_indexed_job_on_the_chosen_nodes(submit, cycle):
    workload = submit(gpus=8, replicas=2)
    cycle()
    job = SimulatedObject.objects.get(kind="Job", namespace="acme-ai-dev", name=workload.name)
    nodes = set(Placement.objects.filter(workload=workload).values_list("node__name", flat=True))
    spec = job.manifest["spec"]
    affinity = spec["template"]["spec"]["affinity"]["nodeAffinity"]
    chosen = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert (spec["completions"], spec["parallelism"], spec["completionMode"]) == (2, 2, "Indexed")
    assert set(chosen["matchExpressions"][0]["values"]) == nodes


def test_a_launched_workload_runs_then_succeeds_and_releases_its_gpus(submit, cycle, advance):
    workload = submit(env={"SIMULATED_RUNTIME_SECONDS": "120"})
    cycle()
    advance(10)
    workload.refresh_from_db()
    assert workload.state == Workload.State.RUNNING
    advance(200)
    workload.refresh_from_db()
    assert workload.state == Workload.State.SUCCEEDED
    assert not Placement.objects.filter(workload=workload, ended_at__isnull=True).exists()
    assert not SimulatedObject.objects.filter(name=workload.name).exists()


def test_a_failing_job_ends_failed_with_the_clusters_reason(submit, cycle, advance):
    workload = submit(env={"SIMULATED_RUNTIME_SECONDS": "30", "SIMULATED_EXIT": "fail"})
    cycle()
    advance(60)
    workload.refresh_from_db()
    assert workload.state == Workload.State.FAILED
    assert "BackoffLimitExceeded" in workload.status_reason


def test_a_job_past_its_deadline_ends_expired(submit, cycle, advance):
    workload = submit(max_runtime=minutes(5), env={"SIMULATED_RUNTIME_SECONDS": "3600"})
    cycle()
    advance(10)
    advance(400)
    workload.refresh_from_db()
    assert workload.state == Workload.State.EXPIRED


def test_a_request_beyond_free_capacity_waits_with_the_reason_and_numbers(submit, cycle):
    # A quota above the cluster's 64 H100s, so that capacity, not the quota, is what is short.
    QuotaGrant.objects.filter(gpu_class__name="H100-80GB").update(guarantee=128, limit=128)
    submit(name="big", gpus=8, replicas=7)
    submit(name="half", gpus=4)
    waiting = submit(name="next", gpus=8)
    cycle()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.pending_code) == (Workload.State.PENDING, "capacity")
    assert waiting.pending_message == (
        "H100-80GB: 4 H100-80GB free on eligible nodes, 8 H100-80GB needed per replica."
    )


def test_a_request_beyond_the_quota_waits_with_the_quota_in_use_and_requested(submit, cycle):
    submit(name="big", gpus=8, replicas=8)
    waiting = submit(name="next", gpus=8)
    cycle()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.pending_code) == (Workload.State.PENDING, "quota")
    assert waiting.pending_message == "H100-80GB: 64 of 64 in use by acme, 8 more requested"


def test_a_runtime_check_stops_a_workload_past_its_max_runtime(submit, cycle, advance):
    workload = submit(kind="inference", max_runtime=minutes(5), gpus=1, gpu_classes=("L4",))
    cycle()
    advance(10)
    advance(400)
    workload.refresh_from_db()
    assert workload.state == Workload.State.EXPIRED
    assert "maximum runtime" in workload.status_reason


def test_cpu_only_work_never_lands_on_tainted_gpu_nodes(submit, cycle):
    notebook = submit(kind="notebook", tier="dev", gpus=0, gpu_classes=())
    cycle()
    notebook.refresh_from_db()
    assert notebook.state == Workload.State.ADMITTED
    assert [p.node.pool.gpu_class for p in notebook.placements.all()] == [None]


def submit_unprovisioned(*, user, project, gpus: int) -> Workload:
    """Submit to a project whose namespace is not made yet (the `submit` fixture makes it)."""
    return services.workload_submit(
        caller=Caller(user=user),
        project=project,
        request=services.WorkloadRequest(
            name="early",
            kind="training",
            tier="training",
            image="pytorch",
            gpus=gpus,
            gpu_classes=("H100-80GB",),
        ),
    )


def test_a_workload_waits_to_launch_until_its_namespace_exists(cluster, quotas, mia, ai_dev):
    from scheduling.cluster import ClusterError
    from scheduling.models import ProvisioningRecord

    workload = submit_unprovisioned(user=mia, project=ai_dev, gpus=8)
    services.scheduling_cycle_run()
    with pytest.raises(ClusterError) as error:
        services.workload_launch(workload_id=workload.pk, backend=cluster)
    assert error.value.retryable
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    services.workload_launch(workload_id=workload.pk, backend=cluster)
    workload.refresh_from_db()
    assert workload.launched_at is not None
    assert ProvisioningRecord.objects.get(project=ai_dev).state == "ready"


def test_launching_twice_changes_nothing(submit, cycle, cluster):
    from scheduling import services

    workload = submit(kind="inference", gpus=1, replicas=2, gpu_classes=("L4",))
    cycle()
    before = list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest"))
    workload.refresh_from_db()
    Workload.objects.filter(pk=workload.pk).update(launched_at=None)
    services.workload_launch(workload_id=workload.pk, backend=cluster)
    assert list(SimulatedObject.objects.order_by("pk").values_list("pk", "manifest")) == before


def test_a_launch_repeated_after_it_succeeded_does_nothing(submit, cycle, cluster):
    from scheduling import services

    workload = submit()
    cycle()  # launched once
    services.workload_launch(workload_id=workload.pk, backend=cluster)
    assert workload.events.filter(kind="launched").count() == 1


def _sync_statements(cluster) -> int:
    with CaptureQueriesContext(connection) as queries:
        services.workloads_sync(backend=cluster)
    return len(queries)


def test_following_running_workloads_costs_the_same_statements_for_few_as_for_many(
    submit, cycle, advance, cluster
):
    for n in range(2):
        submit(name=f"few-{n}", gpus=1)
    cycle()
    advance(10)  # running: a pass that moves nothing
    few = _sync_statements(cluster)
    for n in range(12):
        submit(name=f"many-{n}", gpus=1)
    cycle()
    advance(10)
    assert Workload.objects.filter(state=Workload.State.RUNNING).count() == 14
    assert _sync_statements(cluster) == few


def _started_statements(submit, cycle, cluster, *, prefix: str, count: int) -> int:
    """The statements of the sync that sees `count` newly launched workloads run."""
    for n in range(count):
        submit(name=f"{prefix}-{n}", gpus=1)
    cycle()
    clock.advance(seconds=10)
    statements = _sync_statements(cluster)
    assert Workload.objects.filter(name__startswith=prefix, state="Running").count() == count
    return statements


def test_recording_workloads_running_costs_the_same_statements_for_few_as_for_many(
    submit, cycle, cluster
):
    few = _started_statements(submit, cycle, cluster, prefix="few", count=2)
    many = _started_statements(submit, cycle, cluster, prefix="many", count=12)
    assert many == few


def test_a_launch_of_many_launches_the_provisioned_and_leaves_the_others_for_the_retry(
    submit, cluster, acme
):
    from scheduling.cluster import ClusterError

    ready = [submit(name=f"ready-{n}", gpus=1) for n in range(3)]
    fresh = ProjectFactory(organization=acme, slug="fresh")  # its namespace is not made yet
    waiting = submit_unprovisioned(user=ready[0].submitted_by, project=fresh, gpus=1)
    services.scheduling_cycle_run()
    with pytest.raises(ClusterError, match="acme-fresh is not provisioned yet") as error:
        services.workloads_launch(workload_ids=[w.pk for w in [*ready, waiting]], backend=cluster)
    assert error.value.retryable
    launched = Workload.objects.filter(launched_at__isnull=False)
    assert set(launched.values_list("name", flat=True)) == {"ready-0", "ready-1", "ready-2"}
    assert WorkloadEvent.objects.filter(kind="launched").count() == 3


def test_a_workload_no_node_left_can_hold_waits_as_never_fits(submit, cycle):
    workload = submit(gpus=8)
    operator = Caller(user=UserFactory(is_staff=True))
    for node in Node.objects.filter(pool__gpu_class__name="H100-80GB"):  # taken out for good
        services.node_cordon(caller=operator, node=node)
    cycle()
    workload.refresh_from_db()
    assert (workload.state, workload.pending_code) == (Workload.State.PENDING, "never_fits")
    assert "8 GPUs per replica, but the largest node has 0" in workload.pending_message


def _launch_statements(cluster, workloads) -> int:
    with CaptureQueriesContext(connection) as queries:
        launched = services.workloads_launch(
            workload_ids=[w.pk for w in workloads], backend=cluster
        )
    assert len(launched) == len(workloads)
    return len(queries)


def test_launching_costs_five_statements_an_object_beside_eleven_for_them_all(submit, cluster):
    one = [submit(name="one", gpus=1)]
    three = [submit(name=f"three-{n}", gpus=1) for n in range(3)]
    services.scheduling_cycle_run()
    # Each workload here is one Job. An object: whether the cluster answers, the simulated
    # clock, the object itself, the terminating objects, the upsert. Before: twelve a workload,
    # one of them a read of every object of the cluster.
    assert (_launch_statements(cluster, one), _launch_statements(cluster, three)) == (16, 26)
