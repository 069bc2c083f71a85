"""What the browser tests share besides fixtures: signing in, the demo's waiting workload, and
where screenshots go."""

from pathlib import Path

# Screenshots of the pages the tests open, to look at (never compared).
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"


def signed_in(page, email: str, password: str):
    """``page`` after signing in as ``email`` on the console's sign-in form."""
    page.goto("/accounts/login/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    return page


def l4_inference_form(page, *, name: str, gpus: str):
    """The workloads page's submit form, filled in for a batch inference job on L4 (the
    filters above the table share its field names, hence the form by its image field)."""
    page.goto("/orgs/acme/projects/ai-dev/workloads/")
    form = page.locator("form:has(input[name=image])")
    form.locator("input[name=name]").fill(name)
    form.locator("input[name=image]").fill("nvcr.io/nvidia/pytorch:25.01-py3")
    form.locator("select[name=kind]").select_option("batch-inference")
    form.locator("select[name=tier]").select_option("batch")
    form.locator("select[name=gpu_class]").select_option("L4")
    form.locator("input[name=gpus]").fill(gpus)
    return form


def l4_training_submitted(*, user, organization, project, name: str, runtime_seconds: int):
    """The demo's simulated cluster, provisioned for ``project``, 4 L4 granted to
    ``organization`` and a one-GPU training ``name`` submitted by ``user``: its backend."""
    from django.conf import settings

    from scheduling import services
    from scheduling.backends import simulated_backend
    from scheduling.models import GpuClass, QuotaGrant
    from tenants.permissions import Caller

    backend = simulated_backend(description_path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.cluster_description_apply(path=Path(settings.PORTAL_SIMULATED_CLUSTER))
    services.inventory_sync(backend=backend)
    services.project_provision(project_id=project.pk, backend=backend)
    QuotaGrant.objects.create(
        organization=organization, gpu_class=GpuClass.objects.get(name="L4"), guarantee=4, limit=4
    )
    services.workload_submit(
        caller=Caller(user=user),
        project=project,
        request=services.WorkloadRequest(
            name=name,
            kind="training",
            tier="training",
            image="pytorch:latest",
            gpu_classes=("L4",),
            gpus=1,
            env={"SIMULATED_RUNTIME_SECONDS": str(runtime_seconds)},
        ),
    )
    return backend


def too_big_waits() -> None:
    """On the demo's data, after a first cycle, acme's owner submits ``too-big`` (five 8-GPU
    replicas: 40 H100s, 8 over what acme's limit leaves) and a cycle leaves it waiting on
    quota."""
    from scheduling import services
    from tenants.models import Project
    from tenants.permissions import Caller

    project = Project.objects.get(slug="ai-dev")
    services.scheduling_cycle_run()
    services.workload_submit(
        caller=Caller(user=project.organization.memberships.get(role="owner").user),
        project=project,
        request=services.WorkloadRequest(
            name="too-big",
            kind="training",
            tier="training",
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            gpu_classes=("H100-80GB",),
            gpus=8,
            replicas=5,
        ),
    )
    services.scheduling_cycle_run()
