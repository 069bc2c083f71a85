from django.urls import path

from . import views

org = "orgs/<slug:org_slug>"

urlpatterns = [
    path("", views.home, name="home"),
    path(f"{org}/", views.organization_detail, name="organization"),
    path(f"{org}/projects/<slug:project_slug>/", views.project_detail, name="project"),
    path(f"{org}/members/<uuid:member_id>/role/", views.member_role, name="member-role"),
    path(f"{org}/members/<uuid:member_id>/remove/", views.member_remove, name="member-remove"),
    path(
        f"{org}/invitations/<uuid:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation-revoke",
    ),
    path(f"{org}/tokens/", views.tokens, name="tokens"),
    path(f"{org}/tokens/<uuid:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path(f"{org}/audit/", views.audit, name="audit"),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
]
