"""Submission: a user's request validated against the catalog, quotas and the cluster, then
queued for the next scheduling cycle."""

import copy
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from portal import clock
from portal.db import rows_insert
from portal.events import Event, ExtensionPoint, checks_run, publish
from tenants.models import Project
from tenants.permissions import (
    Action,
    Caller,
    authorize,
)
from tenants.services import audit_event

from .. import engine
from ..models import PriorityTier, Workload
from ..specs_from_models import engine_request
from .submission_catalog import SubmissionCatalog
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
    "checkpoint_interval_seconds": (60, 30 * 24 * 3600),
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
    region: str = ""
    requeue_on_eviction: bool = True
    checkpoint_interval: timedelta | None = None


def request_default(field: str):
    """A field's default, ``WorkloadRequest``'s: the one the API and the console's form share."""
    return next(f.default for f in dataclasses.fields(WorkloadRequest) if f.name == field)


# A name no workload takes: …/workloads/what-if/ is the what-if, not a workload.
RESERVED_NAME = "what-if"

# Workloads per batch submission (a job array): a sweep of 10,000 is accepted in seconds, in
# one validation pass, one quota check and one insert (bench/RESULTS.md, api_load).
BATCH_MAX = 10_000


def _workload_of(
    request: WorkloadRequest, *, caller: Caller, project: Project, tier: PriorityTier | None, now
) -> Workload:
    return Workload(
        project=project,
        tier=tier,
        preemptible=tier.preemptible if tier else False,
        submitted_by=caller.user,
        submitted_at=now,
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
        region=request.region,
        requeue_on_eviction=request.requeue_on_eviction,
        checkpoint_interval=request.checkpoint_interval,
    )


def _catalog_errors(
    workload: Workload, request: WorkloadRequest, catalog: SubmissionCatalog
) -> dict[str, list[str]]:
    """What the catalog refuses of the request, its name aside."""
    errors: dict[str, list[str]] = {}
    if workload.tier_id is None:
        errors["tier"] = [f"Unknown priority tier {request.tier!r}."]
    if workload.kind in Workload.GPU_KINDS and not workload.needs_gpu:
        errors["gpus"] = [
            f"A {workload.kind} workload needs GPUs: set gpus, gpu_milli or mig_count."
        ]
    if workload.kind == Workload.Kind.NOTEBOOK and workload.replicas != 1:
        # Its object is one Pod: more replicas would hold GPUs that nothing runs on.
        errors["replicas"] = ["A notebook is a single pod: 1 replica."]
    cluster = catalog.cluster
    unknown = [name for name in workload.gpu_classes if name not in cluster.mig_profiles]
    if unknown:
        errors["gpu_classes"] = [f"Unknown GPU class: {', '.join(unknown)}."]
    offered = {
        profile for name in workload.gpu_classes for profile in cluster.mig_profiles.get(name, ())
    }
    if workload.mig_profile and workload.mig_profile not in offered:
        errors["mig_profile"] = [f"No acceptable GPU class offers {workload.mig_profile}."]
    if workload.required_topology and workload.required_topology not in cluster.topology_levels:
        errors["required_topology"] = [
            f"Use one of: {', '.join(cluster.topology_levels) or 'none'}."
        ]
    if workload.region and workload.region not in cluster.regions:
        errors["region"] = [
            f"Unknown region {workload.region!r}: use one of {', '.join(cluster.regions)}."
        ]
    return errors


@dataclass(frozen=True)
class _ShapeCheck:
    """What the checks find of a request apart from its name, from the first check it fails:
    the catalog, the fields' own validators, then the engine. The same for every workload of
    a batch that differs only by its name (a job array), so it is found once for them all."""

    catalog: dict[str, list[str]]
    fields: dict[str, list[str]]
    refused: dict[str, list[str]]


def _shape_check(
    workload: Workload, request: WorkloadRequest, catalog: SubmissionCatalog
) -> _ShapeCheck:
    errors = _catalog_errors(workload, request, catalog)
    if errors:
        return _ShapeCheck(catalog=errors, fields={}, refused={})
    try:
        # Its project and tier are the rows just read; its name is checked on its own.
        workload.full_clean(
            exclude=["project", "tier", "submitted_by", "gpu_class", "preempted_by", "name"],
            validate_unique=False,
            validate_constraints=False,
        )
    except ValidationError as error:
        return _ShapeCheck(catalog={}, fields=error.message_dict, refused={})
    return _ShapeCheck(catalog={}, fields={}, refused=_engine_refusal(workload, catalog))


def _renamed(workload: Workload, *, name: str) -> Workload:
    """A copy of an unsaved workload under another name and id: a job array's members are
    copies of one (a twentieth of the cost of building each field by field)."""
    twin = copy.copy(workload)
    twin.pk = Workload._meta.pk.get_default()
    twin.name = name
    # Its own lists and mapping: nothing written to one member's reaches another's.
    twin.gpu_classes, twin.command, twin.env = (
        list(workload.gpu_classes),
        list(workload.command),
        dict(workload.env),
    )
    return twin


def _shape_of(request: WorkloadRequest) -> tuple:
    return dataclasses.replace(request, name="", env=None), json.dumps(request.env, sort_keys=True)


_NAME_FIELD = Workload._meta.get_field("name")


def _input_errors(workload: Workload, shape: _ShapeCheck) -> dict[str, list[str]]:
    """What is wrong with the input, field by field, from the first check it fails: the
    catalog, then the fields' own validators (its name is unique by the insert)."""
    if workload.name == RESERVED_NAME or shape.catalog:
        errors = {}
        if workload.name == RESERVED_NAME:
            errors["name"] = [f"{RESERVED_NAME!r} is the what-if's address: choose another name."]
        return {**errors, **shape.catalog}
    try:
        _NAME_FIELD.clean(workload.name, workload)
    except ValidationError as error:
        return {"name": error.messages, **shape.fields}
    return dict(shape.fields)


def _engine_refusal(workload: Workload, catalog: SubmissionCatalog) -> dict[str, list[str]]:
    """Why the engine would never admit a well-formed request (quota limits, node sizes)."""
    return engine.validate_request(
        # As the cycle builds it: GPU work tolerates the GPU pools' taints, CPU-only work none,
        # so that what no node of the cluster could ever take is refused now.
        request=engine_request(workload, tolerations=catalog.cluster.tolerations),
        quotas=catalog.quotas,
        nodes=catalog.cluster.node_shapes,
    )


def _insert(workloads: list[Workload], *, field_of: Callable[[int, str], str]) -> None:
    """Insert them all; names taken meanwhile (the unique constraint decides, also between
    concurrent submissions) are field errors and nothing is inserted."""
    try:
        with transaction.atomic():
            rows_insert(workloads)
    except IntegrityError as error:
        project = workloads[0].project
        taken = set(
            Workload.objects.filter(
                project=project, name__in=[w.name for w in workloads]
            ).values_list("name", flat=True)
        )
        raise ValidationError(
            {
                field_of(index, "name"): [
                    f"{project.slug} already has a workload named {workload.name!r}."
                ]
                for index, workload in enumerate(workloads)
                if workload.name in taken
            }
            or {field_of(0, "name"): ["A name was taken by a concurrent submission."]}
        ) from error


@dataclass(frozen=True)
class Checked:
    """A submission's workloads, well-formed, and what the engine refuses of them (field errors
    under their submission's field names)."""

    workloads: list[Workload]
    refusals: dict[str, list[str]]
    at: datetime


def submission_checked(
    *,
    caller: Caller,
    project: Project,
    requests: Sequence[WorkloadRequest],
    field_of: Callable[[int, str], str],
) -> Checked:
    """Authorize and validate a submission without writing: bad input raises a field-level
    ValidationError; what the engine would refuse comes back as refusals."""
    authorize(caller=caller, organization=project.organization, action=Action.WORKLOAD_SUBMIT)
    catalog = SubmissionCatalog.load(project=project, tiers={r.tier for r in requests})
    now = clock.now()
    workloads: list[Workload] = []
    errors: dict[str, list[str]] = {}
    refusals: dict[str, list[str]] = {}
    names: set[str] = set()
    shapes: dict[tuple, tuple[Workload, _ShapeCheck]] = {}
    for index, request in enumerate(requests):
        key = _shape_of(request)
        if key in shapes:
            alike, shape = shapes[key]
            workload = _renamed(alike, name=request.name)
        else:
            tier = catalog.tiers.get(request.tier)
            workload = _workload_of(request, caller=caller, project=project, tier=tier, now=now)
            alike = _renamed(workload, name="")  # before the checks, which clean it in place
            shape = _shape_check(workload, request, catalog)
            shapes[key] = alike, shape
        problems = _input_errors(workload, shape)
        if request.name in names:
            twice = f"{request.name!r} is asked for twice."
            problems["name"] = [*problems.get("name", []), twice]
        names.add(request.name)
        errors.update({field_of(index, field): messages for field, messages in problems.items()})
        if not problems:
            refusals.update({field_of(index, f): texts for f, texts in shape.refused.items()})
        workloads.append(workload)
    if errors:
        raise ValidationError(errors)
    return Checked(workloads=workloads, refusals=refusals, at=now)


def _submit(
    *,
    caller: Caller,
    project: Project,
    requests: Sequence[WorkloadRequest],
    field_of: Callable[[int, str], str],
) -> list[Workload]:
    """Validate every request and queue them all, or none: one read of the catalog, quotas
    and nodes, and one insert of the workloads, their timeline and audit events, however
    many. The other apps' submission checks may refuse any of them."""
    checked = submission_checked(
        caller=caller, project=project, requests=requests, field_of=field_of
    )
    if checked.refusals:
        raise ValidationError(checked.refusals)
    workloads, now = checked.workloads, checked.at
    checks_run(
        ExtensionPoint.WORKLOAD_SUBMISSION, caller=caller, project=project, workloads=workloads
    )
    _insert(workloads, field_of=field_of)
    rows_insert(
        [
            workload_event(workload, "submitted", f"Submitted by {caller.user.email}.", at=now)
            for workload in workloads
        ]
    )
    rows_insert(
        [
            audit_event(
                caller=caller,
                organization=project.organization,
                action="workload.submit",
                target=workload,
                payload={"kind": workload.kind, "tier": workload.tier.name, "gpus": workload.gpus},
            )
            for workload in workloads
        ]
    )
    publish(Event.WORKLOADS_SUBMITTED, workload_ids=[str(workload.pk) for workload in workloads])
    return workloads


@transaction.atomic
def workload_submit(*, caller: Caller, project: Project, request: WorkloadRequest) -> Workload:
    """Validate a request and queue it; the other apps' submission checks may refuse it."""
    (workload,) = _submit(
        caller=caller, project=project, requests=[request], field_of=lambda _, field: field
    )
    return workload


@transaction.atomic
def workloads_submit(
    *, caller: Caller, project: Project, requests: Sequence[WorkloadRequest]
) -> list[Workload]:
    """A batch (a job array): all of them queued, or none, with each refusal under
    `workloads.<index>.<field>`."""
    if not 1 <= len(requests) <= BATCH_MAX:
        raise ValidationError({"workloads": [f"Submit 1 to {BATCH_MAX} workloads at once."]})
    return _submit(
        caller=caller,
        project=project,
        requests=requests,
        field_of=lambda index, field: f"workloads.{index}.{field}",
    )
