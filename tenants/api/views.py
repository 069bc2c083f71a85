"""REST endpoints of tenancy: each method parses input, calls one service or selector, renders."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from portal.api.views import ApiView, CollectionApiView, list_response, validated
from tenants import selectors, services
from tenants.lookups import organization_of, project_of
from tenants.models import ApiToken, AuditEvent, Invitation, Membership, Organization, Project
from tenants.permissions import caller_of

from . import filters
from .serializers import (
    AuditEventOutput,
    InvitationAcceptInput,
    InvitationCreateInput,
    InvitationOutput,
    MembershipOutput,
    MembershipUpdateInput,
    OrganizationCreateInput,
    OrganizationOutput,
    OrganizationSsoInput,
    OrganizationUpdateInput,
    ProjectCreateInput,
    ProjectOutput,
    ProjectUpdateInput,
    TokenIssuedOutput,
    TokenIssueInput,
    TokenOutput,
)

NO_CONTENT = {204: OpenApiResponse(description="Done.")}


class OrganizationCollectionApi(CollectionApiView):
    filterset_class = filters.OrganizationFilter
    ordering_fields = ["slug", "name", "created_at"]
    queryset = Organization.objects.none()

    @extend_schema(operation_id="organizations_list", responses=OrganizationOutput(many=True))
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.organization_list(caller=caller_of(request)),
            serializer_class=OrganizationOutput,
        )

    @extend_schema(
        operation_id="organizations_create",
        request=OrganizationCreateInput,
        responses={201: OrganizationOutput},
    )
    def post(self, request):
        caller = caller_of(request)
        organization = services.organization_create(
            caller=caller, **validated(OrganizationCreateInput, request).validated_data
        )
        organization = selectors.organization_get(caller=caller, slug=organization.slug)
        return Response(OrganizationOutput(organization).data, status=status.HTTP_201_CREATED)


class OrganizationDetailApi(ApiView):
    @extend_schema(operation_id="organizations_retrieve", responses=OrganizationOutput)
    def get(self, request, org_slug: str):
        return Response(OrganizationOutput(organization_of(request, org_slug)).data)

    @extend_schema(
        operation_id="organizations_update",
        request=OrganizationUpdateInput,
        responses=OrganizationOutput,
    )
    def patch(self, request, org_slug: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        services.organization_update(
            caller=caller,
            organization=organization,
            **validated(OrganizationUpdateInput, request).validated_data,
        )
        return Response(OrganizationOutput(organization_of(request, org_slug)).data)

    @extend_schema(operation_id="organizations_destroy", responses=NO_CONTENT)
    def delete(self, request, org_slug: str):
        services.organization_delete(
            caller=caller_of(request), organization=organization_of(request, org_slug)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class OrganizationSsoApi(ApiView):
    @extend_schema(
        operation_id="organizations_sso_update",
        request=OrganizationSsoInput,
        responses=OrganizationOutput,
        description="Require single sign-on of the organization's members, and the e-mail"
        " domains its invitations may go to (owners). A session that requires it must have"
        " signed in through that provider.",
    )
    def put(self, request, org_slug: str):
        services.organization_sso_set(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            **validated(OrganizationSsoInput, request).validated_data,
        )
        return Response(OrganizationOutput(organization_of(request, org_slug)).data)


class MemberCollectionApi(CollectionApiView):
    filterset_class = filters.MembershipFilter
    ordering_fields = ["role", "created_at", "user__email"]
    queryset = Membership.objects.none()

    @extend_schema(operation_id="members_list", responses=MembershipOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.member_list(caller=caller_of(request), organization=organization),
            serializer_class=MembershipOutput,
        )


class MemberDetailApi(ApiView):
    def _membership(self, request, org_slug, member_id):
        return selectors.member_get(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            membership_id=member_id,
        )

    @extend_schema(operation_id="members_retrieve", responses=MembershipOutput)
    def get(self, request, org_slug: str, member_id):
        return Response(MembershipOutput(self._membership(request, org_slug, member_id)).data)

    @extend_schema(
        operation_id="members_update", request=MembershipUpdateInput, responses=MembershipOutput
    )
    def patch(self, request, org_slug: str, member_id):
        membership = self._membership(request, org_slug, member_id)
        membership = services.member_role_change(
            caller=caller_of(request),
            membership=membership,
            role=validated(MembershipUpdateInput, request).validated_data["role"],
        )
        return Response(MembershipOutput(membership).data)

    @extend_schema(operation_id="members_destroy", responses=NO_CONTENT)
    def delete(self, request, org_slug: str, member_id):
        membership = self._membership(request, org_slug, member_id)
        services.member_remove(caller=caller_of(request), membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationCollectionApi(CollectionApiView):
    filterset_class = filters.InvitationFilter
    ordering_fields = ["created_at", "email", "expires_at"]
    queryset = Invitation.objects.none()

    @extend_schema(operation_id="invitations_list", responses=InvitationOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.invitation_list(
                caller=caller_of(request), organization=organization
            ),
            serializer_class=InvitationOutput,
        )

    @extend_schema(
        operation_id="invitations_create",
        request=InvitationCreateInput,
        responses={201: InvitationOutput},
    )
    def post(self, request, org_slug: str):
        invitation = services.member_invite(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            **validated(InvitationCreateInput, request).validated_data,
        )
        return Response(InvitationOutput(invitation).data, status=status.HTTP_201_CREATED)


def _invitation(request, org_slug: str, invitation_id):
    return selectors.invitation_get(
        caller=caller_of(request),
        organization=organization_of(request, org_slug),
        invitation_id=invitation_id,
    )


class InvitationDetailApi(ApiView):
    @extend_schema(operation_id="invitations_retrieve", responses=InvitationOutput)
    def get(self, request, org_slug: str, invitation_id):
        return Response(InvitationOutput(_invitation(request, org_slug, invitation_id)).data)


class InvitationRevokeApi(ApiView):
    @extend_schema(
        operation_id="invitations_revoke",
        request=None,
        responses=InvitationOutput,
        description="Revoke a pending invitation; its link stops working. It stays listed,"
        " revoked (409 if it is not pending).",
    )
    def post(self, request, org_slug: str, invitation_id):
        invitation = services.invitation_revoke(
            caller=caller_of(request), invitation=_invitation(request, org_slug, invitation_id)
        )
        return Response(InvitationOutput(invitation).data)


class InvitationAcceptApi(ApiView):
    @extend_schema(
        operation_id="invitations_accept",
        request=InvitationAcceptInput,
        responses={201: MembershipOutput},
        description="Join the organization of an invitation sent to the caller's e-mail address.",
    )
    def post(self, request):
        membership = services.invitation_accept(
            user=request.user,
            token=validated(InvitationAcceptInput, request).validated_data["token"],
        )
        return Response(MembershipOutput(membership).data, status=status.HTTP_201_CREATED)


class ProjectCollectionApi(CollectionApiView):
    filterset_class = filters.ProjectFilter
    ordering_fields = ["slug", "name", "created_at"]
    queryset = Project.objects.none()

    @extend_schema(operation_id="projects_list", responses=ProjectOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.project_list(caller=caller_of(request), organization=organization),
            serializer_class=ProjectOutput,
        )

    @extend_schema(
        operation_id="projects_create", request=ProjectCreateInput, responses={201: ProjectOutput}
    )
    def post(self, request, org_slug: str):
        project = services.project_create(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            **validated(ProjectCreateInput, request).validated_data,
        )
        return Response(ProjectOutput(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(ApiView):
    @extend_schema(operation_id="projects_retrieve", responses=ProjectOutput)
    def get(self, request, org_slug: str, project_slug: str):
        return Response(ProjectOutput(project_of(request, org_slug, project_slug)).data)

    @extend_schema(
        operation_id="projects_update", request=ProjectUpdateInput, responses=ProjectOutput
    )
    def patch(self, request, org_slug: str, project_slug: str):
        project = services.project_update(
            caller=caller_of(request),
            project=project_of(request, org_slug, project_slug),
            **validated(ProjectUpdateInput, request).validated_data,
        )
        return Response(ProjectOutput(project).data)

    @extend_schema(operation_id="projects_destroy", responses=NO_CONTENT)
    def delete(self, request, org_slug: str, project_slug: str):
        services.project_delete(
            caller=caller_of(request), project=project_of(request, org_slug, project_slug)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenCollectionApi(CollectionApiView):
    filterset_class = filters.TokenFilter
    ordering_fields = ["created_at", "name", "last_used_at", "expires_at"]
    queryset = ApiToken.objects.none()

    @extend_schema(operation_id="tokens_list", responses=TokenOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.token_list(caller=caller_of(request), organization=organization),
            serializer_class=TokenOutput,
        )

    @extend_schema(
        operation_id="tokens_issue", request=TokenIssueInput, responses={201: TokenIssuedOutput}
    )
    def post(self, request, org_slug: str):
        token, secret = services.token_issue(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            **validated(TokenIssueInput, request).validated_data,
        )
        token.secret = secret
        return Response(TokenIssuedOutput(token).data, status=status.HTTP_201_CREATED)


def _token(request, org_slug: str, token_id):
    return selectors.token_get(
        caller=caller_of(request),
        organization=organization_of(request, org_slug),
        token_id=token_id,
    )


class TokenDetailApi(ApiView):
    @extend_schema(operation_id="tokens_retrieve", responses=TokenOutput)
    def get(self, request, org_slug: str, token_id):
        return Response(TokenOutput(_token(request, org_slug, token_id)).data)


class TokenRevokeApi(ApiView):
    @extend_schema(
        operation_id="tokens_revoke",
        request=None,
        responses=TokenOutput,
        description="Revoke a token: it authenticates nothing from now on. It stays listed,"
        " revoked; revoking it again changes nothing.",
    )
    def post(self, request, org_slug: str, token_id):
        token = services.token_revoke(
            caller=caller_of(request), token=_token(request, org_slug, token_id)
        )
        return Response(TokenOutput(token).data)


class AuditEventCollectionApi(CollectionApiView):
    filterset_class = filters.AuditEventFilter
    ordering_fields = ["at", "action"]
    queryset = AuditEvent.objects.none()

    @extend_schema(operation_id="audit_events_list", responses=AuditEventOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.audit_event_list(
                caller=caller_of(request), organization=organization
            ),
            serializer_class=AuditEventOutput,
        )


class MeApi(ApiView):
    @extend_schema(operation_id="me_retrieve", responses=MembershipOutput(many=True))
    def get(self, request):
        memberships = selectors.membership_list_of_caller(caller=caller_of(request))
        return Response(MembershipOutput(memberships, many=True).data)
