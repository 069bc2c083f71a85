from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.serializers import AwareDateTimeField, InputSerializer
from tenants.models import (
    ORGANIZATION_SLUG_MAX,
    PROJECT_SLUG_MAX,
    SLUG_PATTERN,
    TIME_ZONES,
    ApiToken,
    AuditEvent,
    Invitation,
    Membership,
    Organization,
    Project,
    Role,
)
from tenants.permissions import Action, role_allows
from tenants.services.sso import DOMAIN_MAX, DOMAIN_PATTERN

SLUG_HELP = (
    "Lowercase letters, digits and hyphens; starts with a letter, ends with a letter or digit."
)


def slug_field(max_length: int) -> serializers.RegexField:
    return serializers.RegexField(
        SLUG_PATTERN,
        min_length=2,
        max_length=max_length,
        help_text=SLUG_HELP,
        error_messages={"invalid": f"Not a valid slug. {SLUG_HELP}"},
    )


class UserSummarySerializer(serializers.Serializer):
    email = serializers.EmailField(read_only=True)
    name = serializers.SerializerMethodField()

    def get_name(self, user) -> str:
        return user.get_full_name()


# Organizations


class OrganizationSsoOutput(serializers.Serializer):
    provider = serializers.CharField(
        source="sso_provider",
        help_text="The provider_id its members must sign in through; empty: not required.",
    )
    domains = serializers.ListField(
        source="sso_domains",
        child=serializers.CharField(),
        help_text="The e-mail domains its invitations may go to; empty: any.",
    )


class OrganizationOutput(serializers.ModelSerializer):
    my_role = serializers.CharField(read_only=True)
    project_count = serializers.IntegerField(read_only=True)
    member_count = serializers.IntegerField(read_only=True)
    sso = serializers.SerializerMethodField(
        help_text="Its single sign-on requirement, shown to owners and admins (null to others)."
    )

    @extend_schema_field(OrganizationSsoOutput(allow_null=True))
    def get_sso(self, organization) -> dict | None:
        if not role_allows(organization.my_role, Action.ORGANIZATION_UPDATE):
            return None
        return OrganizationSsoOutput(organization).data

    class Meta:
        model = Organization
        fields = [
            "id",
            "slug",
            "name",
            "status",
            "billing_email",
            "time_zone",
            "fair_share_weight",
            "my_role",
            "project_count",
            "member_count",
            "sso",
            "created_at",
        ]


class OrganizationCreateInput(InputSerializer):
    slug = slug_field(ORGANIZATION_SLUG_MAX)
    name = serializers.CharField(max_length=100)
    billing_email = serializers.EmailField(
        max_length=254, required=False, allow_blank=True, default=""
    )


class OrganizationUpdateInput(InputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    billing_email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    time_zone = serializers.ChoiceField(
        choices=TIME_ZONES,
        required=False,
        allow_blank=True,
        help_text="IANA time zone of invoice and budget months, such as Asia/Tokyo; empty: UTC.",
    )


class OrganizationSsoInput(InputSerializer):
    provider = serializers.CharField(
        max_length=64,
        allow_blank=True,
        help_text="The provider_id of one of the portal's single sign-on providers its members"
        " must sign in through; empty: not required.",
    )
    domains = serializers.ListField(
        child=serializers.RegexField(
            DOMAIN_PATTERN,
            max_length=DOMAIN_MAX,
            error_messages={"invalid": "Not an e-mail domain, such as example.com."},
        ),
        max_length=100,
        help_text="The e-mail domains its invitations may go to, such as example.com; empty: any.",
    )


# Members and invitations


class MembershipOutput(serializers.ModelSerializer):
    user = UserSummarySerializer(read_only=True)
    organization = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "organization", "user", "role", "created_at"]


class MembershipUpdateInput(InputSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationOutput(serializers.ModelSerializer):
    organization = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    invited_by = serializers.EmailField(
        source="invited_by.email", read_only=True, default=None, allow_null=True
    )
    accepted_by = serializers.EmailField(
        source="accepted_by.email", read_only=True, default=None, allow_null=True
    )
    state = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = [
            "id",
            "organization",
            "email",
            "role",
            "state",
            "invited_by",
            "created_at",
            "expires_at",
            "sent_at",
            "accepted_at",
            "accepted_by",
            "revoked_at",
        ]

    def get_state(self, invitation) -> str:
        return invitation.state()


class InvitationCreateInput(InputSerializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class InvitationAcceptInput(InputSerializer):
    token = serializers.CharField(max_length=500)


# Projects


class ProjectOutput(serializers.ModelSerializer):
    organization = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.EmailField(
        source="created_by.email", read_only=True, default=None, allow_null=True
    )

    class Meta:
        model = Project
        fields = [
            "id",
            "organization",
            "slug",
            "name",
            "description",
            "namespace",
            "created_by",
            "created_at",
            "updated_at",
        ]


class ProjectCreateInput(InputSerializer):
    slug = slug_field(PROJECT_SLUG_MAX)
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, default=""
    )


class ProjectUpdateInput(InputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)


# API tokens


class TokenOutput(serializers.ModelSerializer):
    owner = serializers.EmailField(source="owner.email", read_only=True)
    organization = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # An organization's tokens: never an operator token, which belongs to none.
    scope = serializers.ChoiceField(choices=ApiToken.TENANT_SCOPES, read_only=True)
    state = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "organization",
            "owner",
            "scope",
            "prefix",
            "state",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]

    def get_state(self, token) -> str:
        return token.state()


class TokenIssuedOutput(TokenOutput):
    secret = serializers.CharField(read_only=True, help_text="Shown once; store it now.")

    class Meta(TokenOutput.Meta):
        fields = [*TokenOutput.Meta.fields, "secret"]


class TokenIssueInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=ApiToken.TENANT_SCOPES, default=ApiToken.Scope.READ)
    expires_at = AwareDateTimeField(required=False, allow_null=True, default=None)


# Audit


class AuditEventOutput(serializers.ModelSerializer):
    via_token = serializers.CharField(
        source="via_token.name", read_only=True, default=None, allow_null=True
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "at",
            "actor_email",
            "via_token",
            "action",
            "target_type",
            "target_id",
            "target_label",
            "payload",
        ]
