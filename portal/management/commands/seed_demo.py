"""Seed the demo: the simulated GPU cluster, organization "acme" with projects ai-dev and
ai-prod, its GPU quotas, an owner, a member, an operator and a few workloads. Idempotent:
running it again changes nothing and prints the same logins."""

import os
from datetime import timedelta
from decimal import Decimal
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from billing import services as billing
from billing.models import CancellationCharge, CatalogItem, Order
from portal import clock
from portal.management.demo_books import demo_books_seed
from portal.management.demo_history import HISTORY_SPAN, demo_history_seed, history_start
from scheduling import services as scheduling
from scheduling.models import GpuClass, PriorityTier, QuotaGrant, Workload
from tenants import services
from tenants.models import Organization, Project, Role
from tenants.permissions import Caller

DEMO_PASSWORD = os.environ.get("DEMO_PASSWORD", "gpu-demo-2026")
OPERATOR_EMAIL = "ops@example.com"
OWNER_EMAIL = "alice@acme.example"
MEMBER_EMAIL = "bob@acme.example"


def _user(email: str, **extra):
    existing = get_user_model().objects.filter(email__iexact=email).first()
    return existing or services.user_create(email=email, password=DEMO_PASSWORD, **extra)


class Command(BaseCommand):
    help = "Create the demo organization, users and projects (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--without-history",
            action="store_true",
            help="Leave out the recorded days of the other organizations' work (a few seconds"
            " of simulation): for tests that need acme and its cluster only.",
        )

    @transaction.atomic
    def handle(self, *args, without_history=False, **options):
        operator = _user(OPERATOR_EMAIL, is_staff=True, is_superuser=True)
        owner = _user(OWNER_EMAIL, first_name="Alice", last_name="Owner")
        member = _user(MEMBER_EMAIL, first_name="Bob", last_name="Member")
        owner_caller = Caller(user=owner)

        acme = Organization.objects.filter(slug="acme").first() or services.organization_create(
            caller=owner_caller, slug="acme", name="Acme AI", billing_email="billing@acme.example"
        )
        for slug, name in (("ai-dev", "AI development"), ("ai-prod", "AI production")):
            if not Project.objects.filter(organization=acme, slug=slug).exists():
                services.project_create(
                    caller=owner_caller, organization=acme, slug=slug, name=name
                )
        if not acme.memberships.filter(user=member).exists():
            invitation = services.member_invite(
                caller=owner_caller, organization=acme, email=MEMBER_EMAIL, role=Role.MEMBER
            )
            services.invitation_accept(user=member, token=services.invitation_token(invitation))

        self._cluster()
        self._tier_contracts(Caller(user=operator))
        self._quotas(acme)
        self._workloads(acme, member)
        if not without_history:
            demo_history_seed()
        self._reservations(acme, owner_caller, Caller(user=operator))
        self._catalog(Caller(user=operator))
        # From the first recorded day's midnight, as the history's placements.
        since = (clock.now() - HISTORY_SPAN).replace(hour=0, minute=0, second=0, microsecond=0)
        demo_books_seed(operator=Caller(user=operator), since=since)
        self._order(acme, owner_caller, Caller(user=operator))
        self._cancellation(acme, owner_caller)
        self._billing()
        if not acme.quota_requests.exists():
            scheduling.quota_request_create(
                caller=owner_caller,
                organization=acme,
                ask=scheduling.QuotaAsk(
                    gpu_class="H100-80GB", amount=16, reason="The Q1 pre-training run."
                ),
            )

        self.stdout.write(self.style.SUCCESS("Demo data ready. Sign in at /accounts/login/ with:"))
        for email, what in (
            (OWNER_EMAIL, "owner of acme"),
            (MEMBER_EMAIL, "member of acme"),
            (OPERATOR_EMAIL, "operator, /admin/"),
        ):
            self.stdout.write(f"  {email:<22} {DEMO_PASSWORD}   ({what})")

    def _cluster(self):
        call_command("cluster_sync", stdout=StringIO())

    def _tier_contracts(self, operator_caller):
        """The preemption contract of the demo's tiers (DEMO_TIER_CONTRACTS), set as an
        operator sets it in admin (audited), before the recorded days are simulated under it.
        Left alone when it already holds."""
        for name, contract in DEMO_TIER_CONTRACTS.items():
            tier = PriorityTier.objects.filter(name=name).first()
            if tier is None:
                continue
            changed = [field for field, value in contract.items() if getattr(tier, field) != value]
            if changed:
                for field in changed:
                    setattr(tier, field, contract[field])
                scheduling.setting_save(caller=operator_caller, setting=tier, changed=changed)

    def _quotas(self, acme):
        for name, resource, mig_profile, guarantee, limit in DEMO_QUOTAS:
            gpu_class = GpuClass.objects.filter(name=name).first()
            if gpu_class is not None:
                grant, created = QuotaGrant.objects.get_or_create(
                    organization=acme,
                    project=None,
                    gpu_class=gpu_class,
                    resource=resource,
                    mig_profile=mig_profile,
                    defaults={"guarantee": guarantee, "limit": limit, "cohort": "shared"},
                )
                if created:  # in force over the recorded days the books read
                    scheduling.quota_grant_history_record(grant=grant, now=history_start())

    def _reservations(self, acme, owner_caller, operator_caller):
        """Next Monday 09:00 to 17:00 UTC, 16 H100s for ai-prod and 7 A100 mig-1g.10gb
        instances, approved; and an L4 request the Tuesday after, awaiting an operator."""
        if acme.reservations.exists():
            return
        today = clock.now().replace(hour=9, minute=0, second=0, microsecond=0)
        monday = today + timedelta(days=7 - today.weekday())
        for gpu_class, gpus, mig_profile, day, project in (
            ("H100-80GB", 16, None, monday, "ai-prod"),
            ("A100-80GB", 7, "mig-1g.10gb", monday, "ai-prod"),
            ("L4", 4, None, monday + timedelta(days=1), None),
        ):
            [held] = scheduling.reservations_request(
                caller=owner_caller,
                organization=acme,
                request=scheduling.ReservationRequest(
                    gpu_class=gpu_class,
                    gpus=gpus,
                    starts_at=day,
                    ends_at=day + timedelta(hours=8),
                    project=project,
                    mig_profile=mig_profile,
                ),
            )
            if project:
                scheduling.reservation_approve(caller=operator_caller, reservation=held)

    def _catalog(self, operator_caller):
        """For each demo class: on-demand use (batch and dev at a preemptible discount), a
        reservation price, and a quota package of 8 GPUs a month; for each of its MIG
        profiles, on-demand use and reservations of an instance at the profile's share of the
        GPU's price (``mig_share``). A GPU share (milli-GPU) pays its fraction of the GPU's
        on-demand price: rating divides, no item of its own is needed. Items the demo's
        catalog lacks (an older demo database) are added; existing ones stay as they are."""
        tiers = {tier.name: tier for tier in PriorityTier.objects.all()}
        for gpu_class in GpuClass.objects.filter(name__in=DEMO_HOURLY_PRICES):
            for profile in ["", *gpu_class.mig_profiles]:
                hourly = DEMO_HOURLY_PRICES[gpu_class.name] * mig_share(profile)
                self._offers(operator_caller, gpu_class, profile, hourly, tiers)

    def _offers(self, operator_caller, gpu_class, profile, hourly, tiers):
        slug = gpu_class.name.lower() + (f"-{profile.replace('.', '-')}" if profile else "")
        name = gpu_class.name + (f" {profile} instance" if profile else "")
        offers = [
            (f"{slug}-on-demand", f"{name} on demand", "on_demand", None, hourly),
            *(
                (
                    f"{slug}-{tier}",
                    f"{name} {tier} (preemptible)",
                    "on_demand",
                    tiers.get(tier),
                    hourly * Decimal("0.6"),
                )
                for tier in ("batch", "dev")
            ),
            (f"{slug}-reserved", f"{name} reserved", "reservation", None, hourly * Decimal("0.85")),
        ]
        if not profile:
            offers.append(
                (
                    f"{slug}-package-8",
                    f"8 {gpu_class.name} GPUs, monthly",
                    "quota_package",
                    None,
                    hourly * 8 * 730 * Decimal("0.7"),
                )
            )
        since = clock.now() - HISTORY_SPAN - timedelta(days=2)
        for item_slug, item_name, kind, tier, price in offers:
            if CatalogItem.objects.filter(slug=item_slug).exists():
                continue
            item = billing.catalog_item_save(
                caller=operator_caller,
                item=CatalogItem(
                    slug=item_slug,
                    name=item_name,
                    kind=kind,
                    gpu_class=gpu_class,
                    mig_profile=profile,
                    tier=tier,
                    quantity=8 if kind == "quota_package" else 1,
                    active_from=since,
                ),
            )
            # In force since before the demo's recorded days, so that all of it is priced.
            billing.price_version_add(
                caller=operator_caller,
                item=item,
                unit_price=price.quantize(Decimal("0.0001")),
                effective_from=since,
                now=since,
            )

    def _order(self, acme, owner_caller, operator_caller):
        """4 reserved A100s next Wednesday 09:00 to 13:00 UTC, ordered, approved, fulfilled."""
        if Order.objects.filter(organization=acme).exists():
            return
        today = clock.now().replace(hour=9, minute=0, second=0, microsecond=0)
        wednesday = today + timedelta(days=7 - today.weekday() + 2)
        order = billing.order_create(
            caller=owner_caller,
            organization=acme,
            request=billing.OrderRequest(
                item="a100-80gb-reserved",
                quantity=4,
                starts_at=wednesday,
                ends_at=wednesday + timedelta(hours=4),
            ),
        )
        billing.order_approve(caller=operator_caller, order=order)
        billing.order_fulfil(order_id=str(order.pk))

    def _billing(self):
        """What beat does in time, done once so that the pages are filled from the start:
        meter, draft this month's invoices, compare yesterday's placed with billed seconds."""
        now = clock.now()
        billing.usage_meter(now=now)
        billing.invoices_draft_month(year=now.year, month=now.month)
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        billing.usage_reconcile(starts_at=today - timedelta(days=1), ends_at=today, now=now)

    def _cancellation(self, acme, owner_caller):
        """8 H100s reserved from in 6 hours and cancelled at once, within 24 hours of the
        window: charged half of its price by the catalog's terms."""
        if CancellationCharge.objects.filter(organization=acme).exists():
            return
        start = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=6)
        [held] = scheduling.reservations_request(
            caller=owner_caller,
            organization=acme,
            request=scheduling.ReservationRequest(
                gpu_class="H100-80GB", gpus=8, starts_at=start, ends_at=start + timedelta(hours=2)
            ),
        )
        scheduling.reservation_cancel(caller=owner_caller, reservation=held)
        billing.cancellation_charge_record(reservation_id=str(held.pk))

    def _workloads(self, acme, member):
        project = Project.objects.get(organization=acme, slug="ai-dev", deleted_at__isnull=True)
        for request in DEMO_WORKLOADS:
            if not Workload.objects.filter(project=project, name=request.name).exists():
                scheduling.workload_submit(
                    caller=Caller(user=member), project=project, request=request
                )


# On-demand price of one GPU-hour per class, in PORTAL_CURRENCY.
DEMO_HOURLY_PRICES = {
    "H100-80GB": Decimal("2.90"),
    "A100-80GB": Decimal("1.80"),
    "L4": Decimal("0.60"),
}
# A100 and H100 GPUs split into 7 compute slices (GPCs) for MIG: a "<n>g.<mem>gb" instance
# has n of them, and the 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb and 7g.80gb profiles of an
# A100-80GB are 1/7 to 7/7 of its compute (NVIDIA, "MIG User Guide", Supported MIG Profiles:
# https://docs.nvidia.com/datacenter/tesla/mig-user-guide/). An instance-hour is priced at its
# compute share of the GPU's hour, as clouds price MIG slices by their fraction of a GPU.
MIG_SLICES = 7


def mig_share(profile: str) -> Decimal:
    """The share of a GPU a MIG profile's instance is priced at (1 for a whole GPU)."""
    if not profile:
        return Decimal(1)
    slices = int(profile.removeprefix("mig-").split("g.", 1)[0])
    return Decimal(slices) / MIG_SLICES


# The preemption contract per tier: training is the guaranteed tier (half an hour of run time
# before anything may preempt it, five minutes' notice to save a checkpoint); batch is the
# spot-like one (a short notice, but evicted twice at most, then left to finish); dev and
# inference-prod keep the defaults (inference-prod is not preemptible at all). Which tiers are
# credited their lost work is the cluster description's (deploy/clusters/demo.yaml): training
# and inference-prod are, the spot-like batch and dev are not.
DEMO_TIER_CONTRACTS = {
    "training": {"min_run_time": timedelta(minutes=30), "notice_seconds": 300},
    "batch": {"notice_seconds": 15, "max_evictions": 2},
}
# (class, resource, MIG profile, guarantee, limit): GPUs, milli-GPU or MIG instances.
DEMO_QUOTAS = [
    ("H100-80GB", "gpus", "", 32, 48),
    ("A100-80GB", "gpus", "", 8, 8),
    ("A100-80GB", "mig", "mig-1g.10gb", 4, 8),
    ("A100-80GB", "mig", "mig-3g.40gb", 1, 2),
    ("L4", "gpus", "", 8, 16),
    ("L4", "shared", "", 2000, 4000),
]
DEMO_WORKLOADS = [
    scheduling.WorkloadRequest(
        name="llama-finetune",
        kind="fine-tuning",
        tier="training",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=("torchrun", "--nproc-per-node=8", "finetune.py"),
        gpu_classes=("H100-80GB",),
        gpus=8,
        replicas=2,
        cpu_milli=64000,
        memory_mib=512 * 1024,
        max_runtime=timedelta(hours=12),
        # Memory full, compute a fifth busy: the insights page explains it.
        env={
            "SIMULATED_RUNTIME_SECONDS": "900",
            "SIMULATED_GPU_UTIL": "0.22",
            "SIMULATED_GPU_MEMORY": "0.96",
        },
    ),
    scheduling.WorkloadRequest(
        name="resnet-eval",
        kind="batch-inference",
        tier="batch",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=("python", "eval.py"),
        gpu_classes=("L4", "A100-80GB"),
        gpus=1,
        replicas=4,
        max_runtime=timedelta(hours=2),
        env={"SIMULATED_RUNTIME_SECONDS": "300"},
    ),
    scheduling.WorkloadRequest(
        name="bob-notebook",
        kind="notebook",
        tier="dev",
        image="jupyter/pytorch-notebook:latest",
        gpu_classes=("A100-80GB",),
        mig_profile="mig-1g.10gb",
        mig_count=1,
        gpus=0,
        env={"SIMULATED_GPU_UTIL": "0.01"},  # left open: idle
    ),
    # CPU-only work runs on the CPU pool (no GPU asked, none held, nothing billed).
    scheduling.WorkloadRequest(
        name="data-prep",
        kind="notebook",
        tier="dev",
        image="jupyter/scipy-notebook:latest",
        cpu_milli=8000,
        memory_mib=32 * 1024,
    ),
]
