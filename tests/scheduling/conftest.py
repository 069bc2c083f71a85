"""The demo's simulated cluster (deploy/clusters/demo.yaml: 8 DGX H100 in two racks, 2 A100 with
MIG, 4 L4, 2 CPU nodes) with acme's quotas, and helpers that drive it the way the Celery tasks
do."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings

from portal import clock
from scheduling import services
from scheduling.backends import simulated_backend
from scheduling.models import GpuClass, QuotaGrant, Workload
from tenants.permissions import Caller

from ..factories import ProjectFactory


def demo_backend():
    return simulated_backend(description_path=Path(settings.PORTAL_SIMULATED_CLUSTER))


def cluster_sync(backend) -> None:
    """The demo cluster's classes and pools, then its nodes from ``backend``."""
    services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.inventory_sync(backend=backend)


def quotas_grant(organization) -> None:
    """``organization`` may use every GPU of the demo cluster: whole, shared, or as any MIG
    instance."""
    for name, gpus in (("H100-80GB", 64), ("A100-80GB", 8), ("L4", 16)):
        gpu_class = GpuClass.objects.get(name=name)
        forms = [("gpus", "", gpus), ("shared", "", gpus * 1000)]
        forms += [("mig", profile, gpus * 7) for profile in gpu_class.mig_profiles]
        for resource, mig_profile, amount in forms:
            QuotaGrant.objects.create(
                organization=organization,
                gpu_class=gpu_class,
                resource=resource,
                mig_profile=mig_profile,
                guarantee=amount,
                limit=amount,
            )


def submitted(backend, *, user, project, name="train", **fields) -> Workload:
    """A workload submitted to ``project`` by ``user``: 8 H100s of training unless ``fields``
    say otherwise."""
    # As the worker does on project creation: its namespace exists before work launches.
    services.project_provision(project_id=project.pk, backend=backend)
    request = {
        "kind": "training",
        "tier": "training",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "gpu_classes": ("H100-80GB",),
        "gpus": 8,
        **fields,
    }
    return services.workload_submit(
        caller=Caller(user=user),
        project=project,
        request=services.WorkloadRequest(name=name, **request),
    )


@pytest.fixture
def backend(db):
    return demo_backend()


@pytest.fixture
def cluster(backend):
    cluster_sync(backend)
    return backend


@pytest.fixture
def quotas(cluster, acme):
    """acme may use every GPU of the demo cluster: whole, shared, or as any MIG instance."""
    quotas_grant(acme)


@pytest.fixture
def submit(cluster, quotas, mia, ai_dev):
    """Submit a workload to acme/ai-dev as mia; keyword arguments override the defaults."""

    def make(name="train", user=None, project=None, **fields) -> Workload:
        return submitted(cluster, user=user or mia, project=project or ai_dev, name=name, **fields)

    return make


@pytest.fixture
def cycle(cluster):
    """One scheduling cycle, then what its tasks do: stop the preempted, launch the admitted."""

    def run() -> services.CycleResult:
        result = services.scheduling_cycle_run()
        for workload_id in result.preempted:
            services.workload_objects_delete(workload_id=workload_id, backend=cluster)
        for workload_id in result.admitted:
            services.workload_launch(workload_id=workload_id, backend=cluster)
        return result

    return run


@pytest.fixture
def advance(cluster):
    """Move the simulated time forward, then follow the workloads like the beat tasks do."""

    def run(seconds: float) -> None:
        clock.advance(seconds=seconds)
        services.workloads_sync(backend=cluster)
        services.idle_and_runtime_check(backend=cluster)

    return run


def minutes(n: int) -> timedelta:
    return timedelta(minutes=n)


@pytest.fixture
def full_h100(submit, cycle):
    """Eight one-node training gangs fill all 64 H100 GPUs."""
    workloads = [submit(name=f"fill-{n}", gpus=8) for n in range(8)]
    cycle()
    return workloads


def h100_guarantee(organization, gpus: int) -> None:
    """Guarantee the organization `gpus` H100s, its limit too."""
    QuotaGrant.objects.create(
        organization=organization,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        guarantee=gpus,
        limit=gpus,
    )


@pytest.fixture
def globex_serving(globex, bruno, submit):
    """globex, guaranteed 8 H100, starts a production inference service."""
    h100_guarantee(globex, 8)
    project = ProjectFactory(organization=globex, slug="web")
    return lambda: submit(
        name="serve",
        user=bruno,
        project=project,
        kind="inference",
        tier="inference-prod",
        gpus=8,
    )


@pytest.fixture
def signed_in(client, quotas, ai_dev):
    """The console's client, signed in as the user given."""

    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in


@pytest.fixture
def operator_client(client, django_user_model):
    """The console's client signed in as a staff operator."""
    client.force_login(
        django_user_model.objects.create_user(
            username="ops", email="ops@example.com", password="x", is_staff=True
        )
    )
    return client


@pytest.fixture
def waiting_for_h100(quotas, actors, full_h100, submit, cycle):
    """Every H100 is taken: a 4-GPU job ``waits``, while the A100 nodes have room for it."""
    submit(name="waits", gpus=4)
    cycle()
    return actors


@pytest.fixture
def over_quota(quotas, actors, submit, cycle, acme):
    """acme may hold 8 H100s and holds them (``first``): ``second``, 8 more, waits on quota."""
    QuotaGrant.objects.filter(
        organization=acme, gpu_class__name="H100-80GB", resource=QuotaGrant.Resource.GPUS
    ).update(guarantee=8, limit=8)
    submit(name="first", gpus=8)
    submit(name="second", gpus=8)
    cycle()
    return actors


def simulated_runtime(seconds: int) -> dict:
    return {"env": {"SIMULATED_RUNTIME_SECONDS": str(seconds)}}


@pytest.fixture
def recorded_history(submit, cycle, advance):
    """Six 8-GPU jobs of an hour on 64 H100s, then two of 48 GPUs each that queue: the
    second waits for the first."""
    for n in range(6):
        submit(name=f"short-{n}", gpus=8, **simulated_runtime(3600))
    submit(name="big-1", gpus=8, replicas=6, **simulated_runtime(7200))
    submit(name="big-2", gpus=8, replicas=6, **simulated_runtime(3600))
    for _ in range(16):
        cycle()
        advance(1200)
    assert not Workload.objects.exclude(state=Workload.State.SUCCEEDED).exists()
