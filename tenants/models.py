"""Organizations (tenants), their members, projects, invitations, API tokens and audit trail."""

import uuid
from datetime import UTC, tzinfo
from decimal import Decimal
from importlib import resources
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models.functions import Lower

from portal import clock

# A DNS-1123 label that starts with a letter: safe inside Kubernetes names and URLs. (\A and
# \Z, because "$" also matches before a trailing newline.)
SLUG_PATTERN = r"\A[a-z]([-a-z0-9]*[a-z0-9])?\Z"
slug_validator = RegexValidator(
    SLUG_PATTERN,
    "Use lowercase letters, digits and hyphens; start with a letter, end with a letter or digit.",
    code="invalid_slug",
)
ORGANIZATION_SLUG_MAX = 30
PROJECT_SLUG_MAX = 32
NAMESPACE_MAX = 63


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


# The IANA database's zones: those the tzdata package lists (its `zones` file) that Python can
# load. available_timezones() alone also lists what the system's zoneinfo folder holds beside
# them, such as "localtime" (whatever the server's /etc/localtime says) and "posixrules".
TIME_ZONES = sorted(
    set(resources.files("tzdata").joinpath("zones").read_text().split()) & available_timezones()
)


def time_zone_validator(value: str) -> None:
    if value not in TIME_ZONES:
        raise ValidationError(
            "Not a time zone of the IANA database, such as Europe/Berlin.", code="invalid"
        )


def zone_named(name: str) -> tzinfo:
    """An organization's time zone from its name (empty: UTC)."""
    return ZoneInfo(name) if name else UTC


class Organization(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.CharField(
        max_length=ORGANIZATION_SLUG_MAX, unique=True, validators=[slug_validator]
    )
    name = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=200, blank=True)
    fair_share_weight = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=1,
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal(1000))],
        help_text="Relative share of the cluster when tenants compete; set by operators.",
    )
    billing_email = models.EmailField(blank=True)
    time_zone = models.CharField(
        max_length=64,
        blank=True,
        validators=[time_zone_validator],
        help_text="IANA time zone of its invoice and budget months, such as Asia/Tokyo; empty:"
        " UTC.",
    )
    # Single sign-on required of its members (docs/operators/sso.md): the provider_id of one of
    # the portal's OpenID Connect providers (empty: not required), and the e-mail domains its
    # invitations may go to (empty: any).
    sso_provider = models.CharField(max_length=64, blank=True)
    sso_domains = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=clock.wall)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(fair_share_weight__gt=0),
                name="organization_weight_positive",
                violation_error_message="The fair-share weight is above zero.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def zone(self) -> tzinfo:
        """Where its months begin and end."""
        return zone_named(self.time_zone)

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def sso_allows_email(self, email: str) -> bool:
        """Whether an address may be invited: any without allowed domains, else one of them."""
        domain = email.rpartition("@")[2].lower()
        return not self.sso_domains or domain in self.sso_domains


class Membership(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=clock.wall)

    class Meta:
        ordering = ["organization__slug", "user__email"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "user"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} as {self.role}"


class Project(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="projects"
    )
    slug = models.CharField(max_length=PROJECT_SLUG_MAX, validators=[slug_validator])
    name = models.CharField(max_length=100)
    description = models.TextField(max_length=2000, blank=True)
    # The Kubernetes namespace: "<organization>-<project>", a DNS-1123 label.
    namespace = models.CharField(max_length=NAMESPACE_MAX, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.wall)
    updated_at = models.DateTimeField(auto_now=True)
    # Deleting keeps the row for the workloads' history (and billing); its namespace is removed
    # from the cluster, and its slug may be used again.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["organization__slug", "slug"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "slug"],
                condition=models.Q(deleted_at__isnull=True),
                name="project_slug_unique",
            ),
            models.UniqueConstraint(
                fields=["namespace"],
                condition=models.Q(deleted_at__isnull=True),
                name="project_namespace_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization.slug}/{self.slug}"


class Invitation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.wall)
    expires_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="accepted_invitations",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One open invitation per address and organization; accepted or revoked ones stay
            # as history.
            models.UniqueConstraint(
                "organization",
                Lower("email"),
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="invitation_open_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.organization} as {self.role}"

    def state(self, now=None) -> str:
        now = now or clock.wall()
        if self.accepted_at:
            return "accepted"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= now:
            return "expired"
        return "pending"


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Read and write"
        # The operator API (/api/v1/operator/), for a staff user: no organization's data.
        OPERATOR = "operator", "Operator API"

    # The scopes an organization's member may ask for.
    TENANT_SCOPES = [choice for choice in Scope.choices if choice[0] != "operator"]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    # None for an operator token, which reaches no organization's tenant API.
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    # The secret is shown once; only its prefix (to find it) and SHA-256 digest are kept.
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=clock.wall)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scope="operator", organization__isnull=True)
                | (~models.Q(scope="operator") & models.Q(organization__isnull=False)),
                name="token_operator_has_no_organization",
                violation_error_message="An operator token belongs to no organization; every"
                " other token belongs to one.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def state(self, now=None) -> str:
        now = now or clock.wall()
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= now:
            return "expired"
        return "active"

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE

    @property
    def is_operator(self) -> bool:
        return self.scope == self.Scope.OPERATOR


class AuditEvent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text too, so the trail still names who acted after the account is gone.
    actor_email = models.CharField(max_length=254, blank=True)
    via_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=32)
    target_id = models.CharField(max_length=64)
    target_label = models.CharField(max_length=200)
    payload = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=clock.wall, db_index=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["organization", "-at"], name="audit_org_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_email} {self.action} {self.target_label}"
