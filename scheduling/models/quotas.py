"""Quotas: what an organization (or one of its projects) is guaranteed and may borrow, and
its asks for more."""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from portal import clock
from tenants.models import Organization, Project

from ..engine.model import quota_resource
from ..engine.quota import resource_label
from .inventory import Cluster, GpuClass
from .validators import mig_profile_validator

LIMIT_BELOW_GUARANTEE = (
    "The limit cannot be below the guarantee: the limit is the guarantee plus what may be borrowed."
)


class QuotaGrant(models.Model):
    """A quota of one GPU class for an organization, or for one of its projects: of its whole
    GPUs, of its GPU shares (in milli-GPU) or of one MIG profile (in instances), the resources
    the namespace's ResourceQuota counts."""

    class Resource(models.TextChoices):
        GPUS = "gpus", "Whole GPUs"
        SHARED = "shared", "GPU shares (milli-GPU)"
        MIG = "mig", "MIG instances of one profile"

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="quota_grants"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="quota_grants"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="quota_grants")
    resource = models.CharField(max_length=8, choices=Resource.choices, default=Resource.GPUS)
    mig_profile = models.CharField(
        max_length=20, blank=True, validators=[mig_profile_validator], help_text="MIG only."
    )
    guarantee = models.PositiveIntegerField(
        help_text="Always available to the tenant: GPUs, milli-GPU or MIG instances."
    )
    limit = models.PositiveIntegerField(help_text="Guarantee plus what may be borrowed.")
    cohort = models.CharField(max_length=40, blank=True, help_text="Tenants that lend each other.")
    # The most the organization may use in a region, by region (a cluster's); a region not
    # named is capped by the limit alone.
    region_limits = models.JSONField(
        default=dict,
        blank=True,
        help_text='At most this much in a region, e.g. {"us-east": 16}; an organization\'s grant'
        " only.",
    )

    class Meta:
        ordering = ["organization__slug", "gpu_class__name", "resource", "mig_profile"]
        constraints = [
            models.CheckConstraint(
                condition=Q(limit__gte=models.F("guarantee")),
                name="quota_limit_ge_guarantee",
                violation_error_message=LIMIT_BELOW_GUARANTEE,
            ),
            models.CheckConstraint(
                condition=Q(resource="mig", mig_profile__gt="")
                | (~Q(resource="mig") & Q(mig_profile="")),
                name="quota_mig_names_a_profile",
                violation_error_message="A MIG quota names its MIG profile, and only a MIG quota"
                " names one.",
            ),
            models.UniqueConstraint(
                fields=["organization", "gpu_class", "resource", "mig_profile"],
                condition=Q(project__isnull=True),
                name="quota_organization_resource_unique",
                violation_error_message="The organization already has a quota of this GPU class"
                " and resource: change that one.",
            ),
            models.UniqueConstraint(
                fields=["project", "gpu_class", "resource", "mig_profile"],
                condition=Q(project__isnull=False),
                name="quota_project_resource_unique",
                violation_error_message="The project already has a quota of this GPU class and"
                " resource: change that one.",
            ),
        ]

    def __str__(self) -> str:
        scope = (
            f"{self.organization.slug}/{self.project.slug}"
            if self.project_id
            else self.organization.slug
        )
        return f"{scope} {self.resource_label}: {self.guarantee}/{self.limit}"

    @property
    def engine_resource(self) -> str:
        """The key the engine counts this quota by (``engine.model.quota_resource``)."""
        return quota_resource(
            self.gpu_class.name,
            mig_profile=self.mig_profile or None,
            shared=self.resource == self.Resource.SHARED,
        )

    @property
    def usage_scope(self) -> str | None:
        """The project whose work counts against it (None: the whole organization's)."""
        return self.project.slug if self.project_id else None

    @property
    def resource_label(self) -> str:
        """ "H100-80GB", "H100-80GB shares" or "H100-80GB mig-1g.10gb", as the engine says."""
        return resource_label(self.engine_resource)

    @property
    def unit(self) -> str:
        return {"gpus": "GPUs", "shared": "milli-GPU", "mig": "instances"}[self.resource]

    def clean(self) -> None:
        super().clean()
        if self.resource == self.Resource.MIG:
            profiles = self.gpu_class.mig_profiles if self.gpu_class_id else []
            if self.mig_profile not in profiles:
                raise ValidationError(
                    {"mig_profile": f"One of the class's MIG profiles: {', '.join(profiles)}."}
                )
        elif self.mig_profile:
            raise ValidationError({"mig_profile": "Only a MIG quota names a profile."})
        self._region_limits_clean()

    def _region_limits_clean(self) -> None:
        limits = self.region_limits
        if not limits:
            return
        if self.project_id:
            raise ValidationError(
                {"region_limits": "Only an organization's quota has per-region limits."}
            )
        if not isinstance(limits, dict):
            raise ValidationError({"region_limits": 'An object: {"region": limit, ...}.'})
        regions = set(Cluster.objects.values_list("region", flat=True))
        for region, limit in limits.items():
            if region not in regions:
                known = ", ".join(sorted(regions)) or "none yet"
                raise ValidationError(
                    {"region_limits": f"Unknown region {region!r}: the clusters' are {known}."}
                )
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                raise ValidationError(
                    {"region_limits": f"{region}: a whole number of {self.unit}, 0 or more."}
                )
            if limit > self.limit:
                raise ValidationError(
                    {"region_limits": f"{region}: {limit} is over the limit of {self.limit}."}
                )


class QuotaGrantHistory(models.Model):
    """What a grant guaranteed and allowed over [valid_from, valid_to) (None: still): written
    by the quota services in the transaction that creates, changes or deletes the grant, so
    that the operator's books read the guarantees in force at each instant. The grant's key is
    kept on the row: the history outlives a deleted grant."""

    id = models.BigAutoField(primary_key=True)
    grant = models.ForeignKey(
        QuotaGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="history"
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    resource = models.CharField(max_length=8, choices=QuotaGrant.Resource.choices)
    mig_profile = models.CharField(max_length=20, blank=True)
    guarantee = models.PositiveIntegerField()
    limit = models.PositiveIntegerField()
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["valid_from", "id"]
        indexes = [
            models.Index(fields=["gpu_class", "valid_from"], name="quota_history_class_from")
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["grant"],
                condition=Q(valid_to__isnull=True),
                name="quota_history_one_open_per_grant",
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_to__gt=models.F("valid_from")),
                name="quota_history_ends_after",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.gpu_class_id}: {self.guarantee}/{self.limit}"


class QuotaRequest(models.Model):
    """An owner's or admin's ask for more of a quota resource: ``amount`` more guaranteed
    (and allowed) GPUs, milli-GPU or MIG instances, until ``until`` or for good. An operator
    approves it (possibly less, or to another date), denies it with a reason, or lets it
    expire; an approved temporary increase reverts at its end."""

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        EXPIRED = "expired", "Expired"
        REVERTED = "reverted", "Ended (reverted)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="quota_requests"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="quota_requests"
    )
    gpu_class = models.ForeignKey(GpuClass, on_delete=models.PROTECT, related_name="+")
    resource = models.CharField(
        max_length=8, choices=QuotaGrant.Resource.choices, default=QuotaGrant.Resource.GPUS
    )
    mig_profile = models.CharField(max_length=20, blank=True, validators=[mig_profile_validator])
    amount = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    reason = models.CharField(max_length=1000)
    until = models.DateTimeField(null=True, blank=True, help_text="Empty: for good.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.REQUESTED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(default=clock.wall)
    # What the operator granted: the amount and end date may differ from the ask.
    granted_amount = models.PositiveIntegerField(null=True, blank=True)
    granted_until = models.DateTimeField(null=True, blank=True)
    # When the increase starts to count (a quota package's period starts after its approval),
    # and when its grant grew: the scheduling cycle grows the grant at the start, takes the
    # increase back at ``granted_until``.
    granted_from = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True, editable=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    grant = models.ForeignKey(
        QuotaGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=1), name="quota_request_amount_positive")
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}: +{self.amount} {self.gpu_class} {self.resource}"

    @property
    def unit(self) -> str:
        return QuotaGrant(resource=self.resource).unit
