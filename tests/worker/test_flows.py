"""Flows end to end through a real Celery worker process: invitations mailed; workloads from
project creation to their end on the simulated cluster (the test moves the simulated clock; the
worker, with beat, does everything else).

They live in one file so that pytest-xdist runs them in one process: two workers on the same
broker queue would take each other's tasks."""

import os
import signal
import socket
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django_celery_beat.models import PeriodicTask

from billing import services as billing
from billing.models import CancellationCharge, ContractCredit, Order, UsageInterval
from portal import clock
from portal.models import WorkerHeartbeat
from scheduling import services
from scheduling.backends import simulated_backend
from scheduling.models import (
    Cluster,
    Eviction,
    GpuClass,
    Placement,
    ProvisioningRecord,
    QuotaGrant,
    Reservation,
    SchedulerState,
    SimulatedClusterState,
    SimulatedObject,
    Workload,
)
from tenants.models import Invitation
from tenants.permissions import Caller

from ..factories import (
    ProjectFactory,
    UserFactory,
    h100_on_demand_offered,
    h100_reservation_offered,
)
from .conftest import start_worker, stop_worker, wait_for

pytestmark = pytest.mark.worker

WORKLOADS = "/api/v1/organizations/acme/projects/vision/workloads/"


@pytest.fixture
def simulated(transactional_db, acme, globex):
    backend = simulated_backend(description_path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.inventory_sync(backend=backend)
    h100 = GpuClass.objects.get(name="H100-80GB")
    QuotaGrant.objects.create(organization=acme, gpu_class=h100, guarantee=64, limit=64)
    QuotaGrant.objects.create(organization=globex, gpu_class=h100, guarantee=8, limit=8)
    return backend


def state_of(name: str) -> str:
    return Workload.objects.get(name=name).state


def workloads() -> list:
    """What the worker made of the workloads, for a timeout's message."""
    return list(Workload.objects.values_list("name", "state", "pending_message"))


def submit(client, name: str, **fields):
    body = {
        "name": name,
        "kind": "training",
        "tier": "training",
        "image": "pytorch:latest",
        "gpu_classes": ["H100-80GB"],
        "gpus": 8,
        **fields,
    }
    response = client.post(WORKLOADS, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_new_project_is_provisioned_in_each_cluster_through_the_worker(
    simulated, alice, api_as, celery_worker
):
    """us-east does not answer at first: eu-west's namespace is ready, us-east's record says
    the worker retries; once us-east answers, a retry makes it ready there too."""
    SimulatedClusterState.objects.create(cluster="us-east", answering=False)
    response = api_as(alice).post(
        "/api/v1/organizations/acme/projects/", {"slug": "vision", "name": "Vision"}, format="json"
    )
    assert response.status_code == 201

    def records() -> dict:
        return dict(
            ProvisioningRecord.objects.filter(project__slug="vision").values_list(
                "cluster__name", "state"
            )
        )

    wait_for(lambda: records().get("eu-west") == "ready", state=records)
    retrying = wait_for(
        lambda: ProvisioningRecord.objects.filter(
            project__slug="vision", cluster__name="us-east", error__startswith="Retrying"
        ).first(),
        state=records,
    )
    assert retrying.state == "pending"
    SimulatedClusterState.objects.filter(cluster="us-east").update(answering=True)
    wait_for(lambda: records() == {"eu-west": "ready", "us-east": "ready"}, state=records)
    assert set(
        SimulatedObject.objects.filter(kind="Namespace", name="acme-vision").values_list(
            "cluster", flat=True
        )
    ) == {"eu-west", "us-east"}


def test_a_workload_goes_from_project_to_success_through_the_worker(
    simulated, alice, api_as, celery_worker_with_beat
):
    client = api_as(alice)
    assert (
        client.post(
            "/api/v1/organizations/acme/projects/",
            {"slug": "vision", "name": "Vision"},
            format="json",
        ).status_code
        == 201
    )
    wait_for(
        lambda: ProvisioningRecord.objects.filter(
            project__slug="vision", state=ProvisioningRecord.State.READY
        ).exists()
    )
    submit(client, "train", replicas=2, env={"SIMULATED_RUNTIME_SECONDS": "60"})
    wait_for(
        lambda: Workload.objects.filter(name="train", launched_at__isnull=False).exists(),
        state=workloads,
    )
    clock.advance(seconds=10)
    wait_for(lambda: state_of("train") == "Running", state=workloads)
    clock.advance(seconds=120)
    wait_for(lambda: state_of("train") == "Succeeded", state=workloads)
    # Its objects go right after the state commits (a delete that fails leaves it due for
    # teardown, for the reconciler).
    wait_for(lambda: not SimulatedObject.objects.filter(kind="Job", name="train").exists())


def test_preemption_cancel_and_node_failure_through_the_worker(
    simulated, acme, alice, bruno, globex, api_as, celery_worker_with_beat
):
    vision = ProjectFactory(organization=acme, slug="vision")
    services.project_provision(project_id=vision.pk, backend=simulated)
    client = api_as(alice)
    for n in range(8):
        submit(client, f"fill-{n}", env={"SIMULATED_RUNTIME_SECONDS": "100000"})
    wait_for(lambda: Workload.objects.filter(launched_at__isnull=False).count() == 8)

    # A node fails: its gang goes back to the queue.
    clock.advance(seconds=10)
    wait_for(lambda: Workload.objects.filter(state="Running").count() == 8)
    victim_node = Workload.objects.get(name="fill-0").placements.get(ended_at__isnull=True).node
    simulated.node_fail(name=victim_node.name)
    wait_for(lambda: Workload.objects.get(name="fill-0").events.filter(kind="requeued").exists())
    simulated.node_recover(name=victim_node.name)

    # A production service of another tenant evicts a training gang.
    web = ProjectFactory(organization=globex, slug="web")
    services.project_provision(project_id=web.pk, backend=simulated)
    response = api_as(bruno).post(
        f"/api/v1/organizations/globex/projects/{web.slug}/workloads/",
        {
            "name": "serve",
            "kind": "inference",
            "tier": "inference-prod",
            "image": "triton:latest",
            "gpu_classes": ["H100-80GB"],
            "gpus": 8,
        },
        format="json",
    )
    assert response.status_code == 201
    evicted = Workload.objects.filter(preempted_by__isnull=False)
    wait_for(lambda: evicted.count() == 1, state=workloads)
    wait_for(lambda: Workload.objects.filter(name="serve", launched_at__isnull=False).exists())

    # The owner cancels a running gang; its objects are deleted as Kubernetes deletes running
    # pods: gone, or terminating for their grace period.
    running = Workload.objects.filter(project__slug="vision", state="Running").first()
    assert client.post(f"{WORKLOADS}{running.name}/cancel/").status_code == 200
    wait_for(
        lambda: all(
            "deletionTimestamp" in job.manifest["metadata"]
            for job in SimulatedObject.objects.filter(kind="Job", name=running.name)
        )
    )


def test_a_batch_runs_every_workload_through_the_worker(
    simulated, acme, alice, api_as, celery_worker_with_beat
):
    vision = ProjectFactory(organization=acme, slug="vision")
    services.project_provision(project_id=vision.pk, backend=simulated)
    batch = [
        {
            "name": f"sweep-{n}",
            "kind": "training",
            "tier": "training",
            "image": "pytorch:latest",
            "gpu_classes": ["H100-80GB"],
            "gpus": 2,
            "env": {"SIMULATED_RUNTIME_SECONDS": "100000"},
        }
        for n in range(6)
    ]
    response = api_as(alice).post(
        "/api/v1/organizations/acme/projects/vision/workload-batches/",
        {"workloads": batch},
        format="json",
    )
    assert response.status_code == 201, response.content
    wait_for(lambda: Workload.objects.filter(launched_at__isnull=False).count() == 6)
    clock.advance(seconds=10)
    wait_for(lambda: Workload.objects.filter(state="Running").count() == 6, state=workloads)


def test_an_invitation_made_in_the_api_is_mailed_by_a_real_worker(
    alice, acme, api_as, celery_worker
):
    response = api_as(alice).post(
        "/api/v1/organizations/acme/invitations/", {"email": "new@acme.example"}, format="json"
    )
    assert response.status_code == 201
    invitation = wait_for(
        lambda: Invitation.objects.filter(pk=response.json()["id"], sent_at__isnull=False).first()
    )
    mailed = "".join(path.read_text() for path in celery_worker.iterdir())
    assert "To: new@acme.example" in mailed
    assert "/invitations/" in mailed
    assert invitation.state() == "pending"


def test_a_reservation_asked_for_in_the_api_is_mailed_by_a_real_worker(
    simulated, alice, acme, api_as, celery_worker
):
    start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    response = api_as(alice).post(
        "/api/v1/organizations/acme/reservations/",
        {
            "gpu_class": "H100-80GB",
            "gpus": 8,
            "starts_at": start.isoformat(),
            "ends_at": (start + timedelta(hours=2)).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 201
    mailed = wait_for(
        lambda: (
            celery_worker.exists() and "".join(path.read_text() for path in celery_worker.iterdir())
        )
    )
    assert (
        f"To: {alice.email}" in mailed,
        "Reservation of 8 H100-80GB GPUs for Acme AI: requested" in mailed,
    ) == (
        True,
        True,
    )


def test_beat_keeps_its_schedule_in_the_database_and_needs_no_file(
    simulated, tmp_path, celery_worker_with_beat
):
    wait_for(lambda: SchedulerState.objects.filter(last_cycle_at__isnull=False).exists())
    names = set(PeriodicTask.objects.values_list("name", flat=True))
    assert {
        "scheduling-cycle",
        "workloads-sync",
        "cluster-reconcile",
        "reservations-advance",
    } <= names
    # The worker ran in an empty folder, as in a fresh clone: beat wrote nothing there.
    assert [path.name for path in tmp_path.iterdir() if path.name != "mail"] == []


def test_a_real_worker_checks_in_and_the_task_side_reports_healthy(simulated, client, tmp_path):
    assert client.get("/healthz/workers").status_code == 503  # no worker has checked in yet
    worker, _ = start_worker(tmp_path, beat=True, PORTAL_WORKER_HEARTBEAT_SECONDS="1")
    try:
        wait_for(lambda: WorkerHeartbeat.objects.exists())
        wait_for(lambda: SchedulerState.objects.filter(last_cycle_at__isnull=False).exists())
        response = client.get("/healthz/workers")
    finally:
        stop_worker(worker)
    assert (response.status_code, WorkerHeartbeat.objects.get().hostname) == (
        200,
        f"celery@{socket.gethostname()}",
    )


def test_a_launch_killed_with_its_worker_is_finished_by_the_reconciler(
    simulated, acme, alice, api_as, tmp_path
):
    vision = ProjectFactory(organization=acme, slug="vision")
    # In each cluster now: the reconciler would otherwise make them at 4 s an object write.
    for cluster in Cluster.objects.all():
        services.project_provision(project_id=vision.pk, backend=simulated, cluster=cluster)
    # Each object write takes 4 s, so the launch is surely under way when the worker dies.
    slow = {"PORTAL_SIMULATED_LATENCY_SECONDS": "4", "PORTAL_RECONCILE_SECONDS": "2"}
    first, _ = start_worker(tmp_path / "first", beat=True, **slow)
    try:
        submit(api_as(alice), "train", env={"SIMULATED_RUNTIME_SECONDS": "100000"})
        wait_for(lambda: state_of("train") == "Admitted", state=workloads)
        time.sleep(2)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    assert Workload.objects.get(name="train").launched_at is None
    second, _ = start_worker(tmp_path / "second", beat=True, purge=False, **slow)
    try:
        wait_for(
            lambda: Workload.objects.filter(name="train", launched_at__isnull=False).exists(),
            state=workloads,
        )
        clock.advance(seconds=10)
        wait_for(lambda: state_of("train") == "Running", state=workloads)
    finally:
        stop_worker(second)


@pytest.fixture
def operator(transactional_db):
    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def reserved(simulated, operator):
    """Reserved H100-hours at 2.4650, free to cancel until 24 h before the window, then 50%."""
    return h100_reservation_offered(operator, name="Reserved H100")


def test_a_reservation_cancelled_in_the_api_is_charged_by_a_real_worker(
    reserved, alice, acme, api_as, celery_worker
):
    start = clock.now().replace(microsecond=0) + timedelta(hours=10)
    made = api_as(alice).post(
        "/api/v1/organizations/acme/reservations/",
        {
            "gpu_class": "H100-80GB",
            "gpus": 8,
            "starts_at": start.isoformat(),
            "ends_at": (start + timedelta(hours=4)).isoformat(),
        },
        format="json",
    )
    [reservation] = made.json()
    cancel = f"/api/v1/organizations/acme/reservations/{reservation['id']}/cancel/"
    assert api_as(alice).post(cancel).status_code == 200
    charge = wait_for(lambda: CancellationCharge.objects.first())
    assert charge.amount == Decimal("39.44")


def waiting_on_a_lock() -> int:
    """Sessions of the test database waiting for a lock (asked outside the lock's transaction,
    whose view of pg_stat_activity would stay as it first saw it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


def test_an_order_fulfilment_killed_with_its_worker_is_finished_once_by_the_reconciler(
    reserved, alice, acme, operator, tmp_path
):
    """The fulfilment waits on the pool's row lock, which the test holds, so the worker dies
    inside its transaction; the next worker's reconciler fulfils the order, once."""
    if connection.vendor != "postgresql":
        pytest.skip("the fulfilment is held inside its transaction by a PostgreSQL row lock")
    start = clock.now().replace(microsecond=0) + timedelta(days=1)
    order = billing.order_create(
        caller=Caller(user=alice),
        organization=acme,
        request=billing.OrderRequest(
            item="h100-reserved", quantity=8, starts_at=start, ends_at=start + timedelta(hours=4)
        ),
    )
    db = connection.settings_dict
    reconcile = {"PORTAL_RECONCILE_SECONDS": "2"}
    with psycopg.connect(
        host=db["HOST"] or "localhost", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
    ) as lock:
        lock.execute("SELECT 1 FROM scheduling_nodepool WHERE name = 'dgx-h100' FOR UPDATE")
        first, _ = start_worker(tmp_path / "first", beat=False, **reconcile)
        try:
            billing.order_approve(caller=Caller(user=operator), order=order)
            wait_for(waiting_on_a_lock)
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
        lock.rollback()
    order.refresh_from_db()
    assert (order.state, Reservation.objects.count()) == (Order.State.APPROVED, 0)
    second, _ = start_worker(tmp_path / "second", beat=True, purge=False, **reconcile)
    try:
        wait_for(lambda: Order.objects.filter(pk=order.pk, state="fulfilled").exists())
        time.sleep(3)  # a few more reconciler rounds, which must make nothing more
    finally:
        stop_worker(second)
    assert Reservation.objects.filter(organization=acme).count() == 1


def until_running(name: str) -> None:
    """Wait for ``name`` to run, moving the simulated clock on meanwhile (a launched pod
    starts once simulated time has passed)."""

    def started() -> bool:
        if state_of(name) == "Running":
            return True
        clock.advance(seconds=5)
        return False

    wait_for(started, state=workloads)


def test_a_preempted_and_requeued_workload_is_billed_once_for_each_second_it_ran(
    simulated, acme, alice, bruno, globex, api_as, tmp_path
):
    """acme's training gang runs, is evicted by globex's production service, waits requeued,
    runs again once the service is cancelled and succeeds; the worker's beat meters both runs:
    the invoice's line for its project bills exactly the GPU-seconds its placements held, and
    credits (its tier credits lost work) exactly those its first run lost."""
    h100_on_demand_offered(UserFactory(email="ops@example.com", is_staff=True))
    vision = ProjectFactory(organization=acme, slug="vision")
    serving = ProjectFactory(organization=acme, slug="serving")
    web = ProjectFactory(organization=globex, slug="web")
    for project in (vision, serving, web):
        services.project_provision(project_id=project.pk, backend=simulated)
    fast = {"PORTAL_METER_SECONDS": "1", "PORTAL_EVICTION_BACKOFF_SECONDS": "1"}
    worker, _ = start_worker(tmp_path, beat=True, **fast)
    try:
        client = api_as(alice)
        submit(client, "train", env={"SIMULATED_RUNTIME_SECONDS": "600"})
        for n in range(7):  # firm work fills the rest of the pool: only "train" may be evicted
            response = client.post(
                "/api/v1/organizations/acme/projects/serving/workloads/",
                {
                    "name": f"fill-{n}",
                    "kind": "inference",
                    "tier": "inference-prod",
                    "image": "triton:latest",
                    "gpu_classes": ["H100-80GB"],
                    "gpus": 8,
                },
                format="json",
            )
            assert response.status_code == 201, response.content
        wait_for(lambda: Workload.objects.filter(launched_at__isnull=False).count() == 8)
        until_running("train")
        clock.advance(seconds=120)  # "train" runs two simulated minutes, then is evicted
        serve = api_as(bruno).post(
            "/api/v1/organizations/globex/projects/web/workloads/",
            {
                "name": "serve",
                "kind": "inference",
                "tier": "inference-prod",
                "image": "triton:latest",
                "gpu_classes": ["H100-80GB"],
                "gpus": 8,
            },
            format="json",
        )
        assert serve.status_code == 201
        wait_for(lambda: Workload.objects.get(name="train").evictions == 1, state=workloads)
        until_running("serve")
        assert (
            api_as(bruno)
            .post("/api/v1/organizations/globex/projects/web/workloads/serve/cancel/")
            .status_code
            == 200
        )
        until_running("train")
        clock.advance(seconds=700)
        wait_for(lambda: state_of("train") == "Succeeded", state=workloads)
        placements = Placement.objects.filter(workload__name="train")
        wait_for(
            lambda: (
                UsageInterval.objects.filter(workload__name="train", ended_at__isnull=False).count()
                == placements.filter(running_at__isnull=False).count()
                == 2
            )
        )
        wait_for(lambda: ContractCredit.objects.filter(kind="lost_work_credit").exists())
        time.sleep(3)  # more meter passes, which must bill and credit nothing more
    finally:
        stop_worker(worker)
    placed = sum(
        (Decimal(8) * Decimal((p.ended_at - p.running_at) // timedelta(microseconds=1)) / 10**6)
        for p in placements
        if p.running_at
    )
    invoice = billing.invoice_draft(
        organization=acme, year=clock.now().year, month=clock.now().month
    )
    [line] = invoice.lines.filter(project=vision, charge="on_demand")
    assert line.hours == (placed / 3600).quantize(Decimal("0.0001"))
    eviction = Eviction.objects.get(workload__name="train")
    first = placements.filter(running_at__lt=eviction.at).get()
    lost = Decimal(8) * Decimal(
        (eviction.at - max(first.running_at, eviction.lost_since)) // timedelta(microseconds=1)
    )
    [credit] = invoice.lines.filter(project=vision, charge="lost_work_credit")
    assert credit.hours == (lost / 10**6 / 3600).quantize(Decimal("0.0001"))
