"""Submission: a user's request validated against the catalog, quotas and the cluster, then
queued for the next scheduling cycle."""

from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction

from portal.events import Event, ExtensionPoint, checks_run, publish
from tenants.models import Project
from tenants.permissions import (
    Action,
    Caller,
    authorize,
)
from tenants.services import audit_record
from tenants.services.common import insert

from .. import clock, engine
from ..models import (
    GpuClass,
    Node,
    NodePool,
    PriorityTier,
    QuotaGrant,
    Workload,
)
from ..specs_from_models import (
    engine_quotas,
    engine_request,
    node_shapes,
    topology_levels,
)
from .timeline import workload_event

# The bounds of a submission's numbers: the console form and the API both take them from here.
REQUEST_BOUNDS = {
    "gpus": (0, 64),
    "gpu_milli": (0, 999),
    "mig_count": (0, 56),
    "replicas": (1, 256),
    "min_replicas": (1, 256),
    "cpu_milli": (100, 1_000_000),
    "memory_mib": (128, 8_388_608),
    "max_runtime_seconds": (60, 30 * 24 * 3600),
}


def request_bounds(field: str) -> dict[str, int]:
    """A field's bounds as form and serializer fields take them."""
    low, high = REQUEST_BOUNDS[field]
    return {"min_value": low, "max_value": high}


@dataclass(frozen=True)
class WorkloadRequest:
    """What a user asks for: the fields of a submission, validated by `workload_submit`."""

    name: str
    kind: str
    tier: str
    image: str
    gpu_classes: tuple[str, ...] = ()
    gpus: int = 0
    gpu_milli: int = 0
    mig_profile: str = ""
    mig_count: int = 0
    replicas: int = 1
    min_replicas: int | None = None
    cpu_milli: int = 1000
    memory_mib: int = 4096
    command: tuple[str, ...] = ()
    env: dict | None = None
    max_runtime: timedelta | None = None
    required_topology: str = ""


def _name_taken(workload: Workload) -> str:
    return f"{workload.project.slug} already has a workload named {workload.name!r}."


def _submission_errors(workload: Workload) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if workload.kind in Workload.GPU_KINDS and not workload.needs_gpu:
        errors["gpus"] = [
            f"A {workload.kind} workload needs GPUs: set gpus, gpu_milli or mig_count."
        ]
    profiles = dict(
        GpuClass.objects.filter(name__in=workload.gpu_classes).values_list("name", "mig_profiles")
    )
    unknown = [name for name in workload.gpu_classes if name not in profiles]
    if unknown:
        errors["gpu_classes"] = [f"Unknown GPU class: {', '.join(unknown)}."]
    offered = {profile for offers in profiles.values() for profile in offers}
    if workload.mig_profile and workload.mig_profile not in offered:
        errors["mig_profile"] = [f"No acceptable GPU class offers {workload.mig_profile}."]
    if workload.required_topology:
        levels = topology_levels(NodePool.objects.all())
        if workload.required_topology not in levels:
            errors["required_topology"] = [f"Use one of: {', '.join(levels) or 'none'}."]
    return errors


@transaction.atomic
def workload_submit(*, caller: Caller, project: Project, request: WorkloadRequest) -> Workload:
    """Validate a request and queue it; the other apps' submission checks may refuse it."""
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_SUBMIT)
    tier = PriorityTier.objects.filter(name=request.tier).first()
    workload = Workload(
        project=project,
        tier=tier,
        preemptible=tier.preemptible if tier else False,
        submitted_by=caller.user,
        submitted_at=clock.now(),
        name=request.name,
        kind=request.kind,
        image=request.image,
        gpu_classes=list(request.gpu_classes),
        gpus=request.gpus,
        gpu_milli=request.gpu_milli,
        mig_profile=request.mig_profile,
        mig_count=request.mig_count,
        replicas=request.replicas,
        min_replicas=request.min_replicas,
        cpu_milli=request.cpu_milli,
        memory_mib=request.memory_mib,
        command=list(request.command),
        env=dict(request.env or {}),
        max_runtime=request.max_runtime,
        required_topology=request.required_topology,
    )
    errors = _submission_errors(workload)
    if tier is None:
        errors["tier"] = [f"Unknown priority tier {request.tier!r}."]
    if errors:
        raise ValidationError(errors)
    # Its project and tier are the rows just read; its name is unique by the insert below.
    workload.full_clean(
        exclude=["project", "tier", "submitted_by", "gpu_class", "preempted_by"],
        validate_unique=False,
        validate_constraints=False,
    )
    engine_errors = engine.validate_request(
        request=engine_request(workload, tolerations=()),  # no taint matters to its size
        quotas=engine_quotas(
            QuotaGrant.objects.filter(organization=project.organization).select_related(
                "organization", "project", "gpu_class"
            )
        ),
        nodes=node_shapes(Node.objects.filter(ready=True)),
    )
    if engine_errors:
        raise ValidationError(engine_errors)
    checks_run(
        ExtensionPoint.WORKLOAD_SUBMISSION, caller=caller, project=project, workload=workload
    )
    # The unique constraint decides a taken name, also between concurrent submissions.
    insert(workload, field="name", message=_name_taken(workload))
    workload_event(
        workload, "submitted", f"Submitted by {caller.user.email}.", at=workload.submitted_at
    ).save()
    audit_record(
        caller=caller,
        organization=project.organization,
        action="workload.submit",
        target=workload,
        payload={"kind": workload.kind, "tier": tier.name, "gpus": workload.gpus},
    )
    publish(Event.WORKLOAD_SUBMITTED, workload_id=str(workload.pk))
    return workload
