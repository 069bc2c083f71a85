from django.urls import path

from . import views

org = "organizations/<slug:org_slug>"

urlpatterns = [
    path("me/memberships/", views.MeApi.as_view(), name="me-memberships"),
    path("organizations/", views.OrganizationCollectionApi.as_view(), name="organizations"),
    path(f"{org}/", views.OrganizationDetailApi.as_view(), name="organization"),
    path(f"{org}/sso/", views.OrganizationSsoApi.as_view(), name="organization-sso"),
    path(f"{org}/members/", views.MemberCollectionApi.as_view(), name="members"),
    path(f"{org}/members/<uuid:member_id>/", views.MemberDetailApi.as_view(), name="member"),
    path(f"{org}/invitations/", views.InvitationCollectionApi.as_view(), name="invitations"),
    path(
        f"{org}/invitations/<uuid:invitation_id>/",
        views.InvitationDetailApi.as_view(),
        name="invitation",
    ),
    path(
        f"{org}/invitations/<uuid:invitation_id>/revoke/",
        views.InvitationRevokeApi.as_view(),
        name="invitation-revoke",
    ),
    path("invitations/accept/", views.InvitationAcceptApi.as_view(), name="invitation-accept"),
    path(f"{org}/projects/", views.ProjectCollectionApi.as_view(), name="projects"),
    path(
        f"{org}/projects/<slug:project_slug>/",
        views.ProjectDetailApi.as_view(),
        name="project",
    ),
    path(f"{org}/tokens/", views.TokenCollectionApi.as_view(), name="tokens"),
    path(f"{org}/tokens/<uuid:token_id>/", views.TokenDetailApi.as_view(), name="token"),
    path(
        f"{org}/tokens/<uuid:token_id>/revoke/", views.TokenRevokeApi.as_view(), name="token-revoke"
    ),
    path(f"{org}/audit-events/", views.AuditEventCollectionApi.as_view(), name="audit-events"),
]
