"""The demo's recorded past: five days of finished GPU work of three organizations, so that
the operators' policy replay (/staff/replay/) has a story to tell. acme trains on the H100s
all day and keeps them full; globex serves on the L4s and runs batch work that queues behind
acme's; initech experiments on MIG slices. The days are made by the engine itself (its
simulation under the demo's settings, fair share over time and the tiers' preemption contract
included), so the rows agree with what the scheduler would do.
"""

import random
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model

from portal import clock
from scheduling.engine.model import MILLI_PER_GPU, Request, mig_profile_milli
from scheduling.engine.simulation import Arrival, simulate
from scheduling.models import (
    Eviction,
    GpuClass,
    Node,
    NodePool,
    Placement,
    PriorityTier,
    QuotaGrant,
    Workload,
)
from scheduling.selectors.replay import replay_decay, replay_policy, replay_snapshot
from scheduling.selectors.replay_change import PolicyChange
from scheduling.services import quota_grant_history_record
from scheduling.specs_from_models import gpu_tolerations, placement_row
from tenants import services
from tenants.models import Organization, Project
from tenants.permissions import Caller

DAYS = 5
HISTORY_SPAN = timedelta(days=DAYS + 1)
SEED = 2026
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
# (organization, owner, project, class, resource, MIG profile, guarantee, limit): the other
# organizations' quotas, in acme's cohort so that each borrows what the others leave idle.
QUOTAS = [
    ("globex", "H100-80GB", "gpus", "", 8, 32),
    ("globex", "L4", "gpus", "", 8, 16),
    ("globex", "A100-80GB", "gpus", "", 4, 8),
    ("initech", "H100-80GB", "gpus", "", 4, 16),
    ("initech", "A100-80GB", "mig", "mig-1g.10gb", 7, 14),
]
ORGANIZATIONS = [
    ("globex", "Globex", "carol@globex.example", "search"),
    ("initech", "Initech", "dave@initech.example", "research"),
]
# (organization, project, kind, tier, classes, gpus, replicas, MIG profile, per day, hours):
# what each organization submits, at random moments of the working day.
MIX = [
    ("acme", "ai-dev", "training", "training", ("H100-80GB",), 8, 2, "", 9, (3, 9)),
    ("acme", "ai-dev", "fine-tuning", "training", ("H100-80GB",), 8, 1, "", 8, (1, 4)),
    ("acme", "ai-prod", "batch-inference", "batch", ("L4", "A100-80GB"), 1, 4, "", 6, (1, 3)),
    ("globex", "search", "inference", "inference-prod", ("L4",), 1, 2, "", 2, (8, 16)),
    ("globex", "search", "batch-inference", "batch", ("H100-80GB",), 4, 1, "", 10, (1, 3)),
    ("globex", "search", "training", "training", ("H100-80GB",), 8, 1, "", 3, (2, 6)),
    ("initech", "research", "notebook", "dev", ("A100-80GB",), 0, 1, "mig-1g.10gb", 10, (1, 3)),
    ("initech", "research", "training", "training", ("H100-80GB",), 2, 1, "", 6, (1, 4)),
]


def _organizations() -> dict[str, Organization]:
    """globex and initech with their owner, project and quotas (acme exists already). Their
    owners never sign in to the demo: no password (hashing one costs half a second)."""
    found = {"acme": Organization.objects.get(slug="acme")}
    for slug, name, email, project in ORGANIZATIONS:
        organization = Organization.objects.filter(slug=slug).first()
        if organization is None:
            owner = get_user_model().objects.filter(email=email).first() or services.user_create(
                email=email, password=None
            )
            caller = Caller(user=owner)
            organization = services.organization_create(caller=caller, slug=slug, name=name)
            services.project_create(
                caller=caller, organization=organization, slug=project, name=project.title()
            )
        found[slug] = organization
    for slug, gpu_class, resource, mig_profile, guarantee, limit in QUOTAS:
        grant, created = QuotaGrant.objects.get_or_create(
            organization=found[slug],
            project=None,
            gpu_class=GpuClass.objects.get(name=gpu_class),
            resource=resource,
            mig_profile=mig_profile,
            defaults={"guarantee": guarantee, "limit": limit, "cohort": "shared"},
        )
        if created:
            quota_grant_history_record(grant=grant, now=history_start())
    return found


def history_start():
    """Midnight UTC at the start of the recorded days: the demo's grants stand from then."""
    return (clock.now() - HISTORY_SPAN).replace(hour=0, minute=0, second=0, microsecond=0)


def _arrivals(
    *, start, rng: random.Random, tiers: dict[str, PriorityTier]
) -> list[tuple[str, Arrival]]:
    """Each submission of the recorded days, with its kind, under its tier's preemption
    contract."""
    tolerations = gpu_tolerations(NodePool.objects.select_related("gpu_class"))
    arrivals = []
    for day in range(DAYS):
        for org, project, kind, tier, classes, gpus, replicas, mig, per_day, hours in MIX:
            for n in range(per_day):
                submitted = start + timedelta(days=day, hours=rng.uniform(7, 19))
                arrivals.append(
                    (
                        kind,
                        Arrival(
                            request=Request(
                                id=f"{project}-{kind}-{day}-{n}",
                                tenant=org,
                                project=project,
                                tier=tiers[tier].value,
                                min_run_time=tiers[tier].min_run_time or timedelta(0),
                                max_evictions=tiers[tier].max_evictions,
                                gpu_classes=classes,
                                submitted_at=submitted.replace(microsecond=0),
                                gpus=gpus,
                                mig_profile=mig or None,
                                mig_count=1 if mig else 0,
                                replicas=replicas,
                                cpu_milli=4000,
                                memory_mib=16 * 1024,
                                anti_affinity=kind == "inference",
                                tolerations=tolerations,
                            ),
                            runtime=timedelta(minutes=round(rng.uniform(*hours) * 60)),
                        ),
                    )
                )
    return arrivals


def demo_history_seed() -> int:
    """Write the recorded days' workloads and placements (once); how many workloads it wrote."""
    if Workload.objects.filter(project__organization__slug="initech").exists():
        return 0
    organizations = _organizations()
    tiers = {tier.name: tier for tier in PriorityTier.objects.all()}
    now = clock.now()
    start = history_start()
    rng = random.Random(SEED)
    kinds = _arrivals(start=start, rng=rng, tiers=tiers)
    simulation = simulate(
        snapshot=replay_snapshot(PolicyChange()),
        arrivals=[arrival for _, arrival in kinds],
        policy=replay_policy(None),
        until=now - timedelta(hours=1),
        decay=replay_decay(PolicyChange()),
    )
    stints: dict[str, list] = {}
    for stint in simulation.stints:
        stints.setdefault(stint.request_id, []).append(stint)
    # Only work that ran its whole time before now: nothing of the past is left running.
    ran = {
        arrival.request.id
        for _, arrival in kinds
        if sum((s.ended_at - s.started_at for s in stints.get(arrival.request.id, ())), timedelta())
        == arrival.runtime
    }
    written = _rows(kinds, stints, ran, organizations, tiers, rng)
    Eviction.objects.bulk_create(_evictions(simulation.evictions, stints, written))
    return len(written)


def _evictions(evictions, stints, written: dict[str, Workload]) -> list[Eviction]:
    """The recorded days' evictions of the work written, each losing its stint (the demo's
    work reports no checkpoints): what the invoices credit lost work from. The simulation keeps
    no reason: a preemption by a higher tier, a reclaim by another, a drain by none."""
    rows = []
    for eviction in evictions:
        workload = written.get(eviction.victim_id)
        if workload is None:
            continue
        stint = next(s for s in stints[eviction.victim_id] if s.ended_at == eviction.at)
        by = written.get(eviction.preemptor_id or "")
        if eviction.preemptor_id is None:
            reason = "reservation"
        elif by is not None and by.tier.value > workload.tier.value:
            reason = "priority"
        else:
            reason = "reclaim"
        seconds = int((eviction.at - stint.started_at).total_seconds())
        unit = workload.gpus or workload.mig_count
        milli = workload.gpus * MILLI_PER_GPU or workload.mig_count * mig_profile_milli(
            workload.mig_profile
        )
        replicas = len(stint.placements)
        rows.append(
            Eviction(
                workload=workload,
                at=eviction.at,
                reason=reason,
                preempted_by=by,
                notice_seconds=workload.tier.notice,
                gpu_class=workload.gpu_class,
                mig_profile=workload.mig_profile,
                lost_since=stint.started_at,
                resource_seconds_lost=unit * replicas * seconds,
                gpu_seconds_lost=Decimal(milli * replicas * seconds) / MILLI_PER_GPU,
                requeued=True,
            )
        )
    return rows


def _rows(kinds, stints, ran, organizations, tiers, rng) -> dict[str, Workload]:
    """The workloads that ran their whole time in the recorded days, as rows: one in ten
    failed or was cancelled part way (its run time is what it ran), the rest succeeded. The
    written, by name."""
    projects = {
        (p.organization.slug, p.slug): p
        for p in Project.objects.select_related("organization").filter(
            organization__in=organizations.values()
        )
    }
    tier_of = {tier.value: tier for tier in tiers.values()}
    classes = {c.name: c for c in GpuClass.objects.all()}
    nodes = {n.name: n for n in Node.objects.all()}
    workloads, placements = [], []
    for kind, arrival in kinds:
        request = arrival.request
        if request.id not in ran:
            continue
        held = stints[request.id]
        ending = rng.choices(
            [Workload.State.SUCCEEDED, Workload.State.FAILED, Workload.State.CANCELLED],
            weights=[90, 5, 5],
        )[0]
        workload = Workload(
            project=projects[(request.tenant, request.project)],
            name=request.id,
            kind=kind,
            tier=tier_of[request.tier],
            gpu_classes=list(request.gpu_classes),
            gpus=request.gpus,
            mig_profile=request.mig_profile or "",
            mig_count=request.mig_count,
            replicas=request.replicas,
            cpu_milli=request.cpu_milli,
            memory_mib=request.memory_mib,
            image=IMAGE,
            state=ending,
            submitted_at=request.submitted_at,
            admitted_at=held[0].started_at,
            launched_at=held[0].started_at,
            started_at=held[0].started_at,
            finished_at=held[-1].ended_at,
            gpu_class=classes[held[0].gpu_class],
            evictions=len(held) - 1,
            objects_deleted_at=held[-1].ended_at,
        )
        workloads.append(workload)
        placements += [
            placement_row(
                workload=workload,
                replica=replica,
                placement=placement,
                node=nodes[placement.node],
                started_at=stint.started_at,
                running_at=stint.started_at,
                ended_at=stint.ended_at,
            )
            for stint in held
            for replica, placement in enumerate(stint.placements)
        ]
    Workload.objects.bulk_create(workloads)
    Placement.objects.bulk_create(placements)
    return {workload.name: workload for workload in workloads}
