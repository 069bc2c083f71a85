from django.urls import path

from . import replay_views, views

workloads = "orgs/<slug:org_slug>/projects/<slug:project_slug>/workloads"

urlpatterns = [
    path(f"{workloads}/", views.workloads, name="list"),
    path(f"{workloads}/<slug:name>/", views.workload_detail, name="detail"),
    path(f"{workloads}/<slug:name>/cancel/", views.workload_cancel, name="cancel"),
    path(f"{workloads}/<slug:name>/logs/", views.workload_logs, name="logs"),
    path("orgs/<slug:org_slug>/quotas/", views.quotas, name="quotas"),
    path("staff/cluster/", views.cluster, name="cluster"),
    path("staff/insights/", views.insights, name="insights"),
    path("staff/estimates/", views.estimates, name="estimates"),
    path("staff/replay/", replay_views.policy_replay_page, name="policy-replay"),
    path("orgs/<slug:org_slug>/reservations/", views.reservations, name="reservations"),
    path(
        "orgs/<slug:org_slug>/reservations/windows/",
        views.reservation_windows,
        name="reservation-windows",
    ),
    path(
        "orgs/<slug:org_slug>/reservations/<str:reservation_id>/cancel/",
        views.reservation_cancel,
        name="reservation-cancel",
    ),
]
