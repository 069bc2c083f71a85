from django.urls import path

from . import fairness, views, what_if
from .capacity import CapacityCalendarApi
from .provisioning import ProjectProvisioningApi

project = "organizations/<slug:org_slug>/projects/<slug:project_slug>"
workloads = f"{project}/workloads"
reservations = "organizations/<slug:org_slug>/reservations"

urlpatterns = [
    path("gpu-classes/", views.GpuClassListApi.as_view(), name="gpu-classes"),
    path("priority-tiers/", views.PriorityTierListApi.as_view(), name="priority-tiers"),
    path("organizations/<slug:org_slug>/quotas/", views.QuotaListApi.as_view(), name="quotas"),
    path(
        "organizations/<slug:org_slug>/fair-share/",
        fairness.FairShareStandingApi.as_view(),
        name="fair-share",
    ),
    path(
        "organizations/<slug:org_slug>/quota-requests/",
        views.QuotaRequestCollectionApi.as_view(),
        name="quota-requests",
    ),
    path(
        "organizations/<slug:org_slug>/quota-requests/<str:request_id>/",
        views.QuotaRequestDetailApi.as_view(),
        name="quota-request",
    ),
    path(f"{reservations}/", views.ReservationCollectionApi.as_view(), name="reservations"),
    path(
        f"{reservations}/<str:reservation_id>/",
        views.ReservationDetailApi.as_view(),
        name="reservation",
    ),
    path(
        f"{reservations}/<str:reservation_id>/cancel/",
        views.ReservationCancelApi.as_view(),
        name="reservation-cancel",
    ),
    path(
        "organizations/<slug:org_slug>/reservation-timeline/",
        views.ReservationTimelineApi.as_view(),
        name="reservation-timeline",
    ),
    path(
        "organizations/<slug:org_slug>/capacity-calendar/",
        CapacityCalendarApi.as_view(),
        name="capacity-calendar",
    ),
    path(
        f"{project}/provisioning/",
        ProjectProvisioningApi.as_view(),
        name="project-provisioning",
    ),
    path(f"{workloads}/", views.WorkloadCollectionApi.as_view(), name="workloads"),
    path(f"{project}/workload-batches/", views.WorkloadBatchApi.as_view(), name="workload-batches"),
    # Before the workload's own routes: "what-if" is a name no workload may take.
    path(f"{workloads}/what-if/", what_if.WorkloadWhatIfApi.as_view(), name="workloads-what-if"),
    path(
        f"{project}/workload-batches/what-if/",
        what_if.WorkloadBatchWhatIfApi.as_view(),
        name="workload-batches-what-if",
    ),
    path(f"{workloads}/<slug:name>/", views.WorkloadDetailApi.as_view(), name="workload"),
    path(
        f"{workloads}/<slug:name>/cancel/",
        views.WorkloadCancelApi.as_view(),
        name="workload-cancel",
    ),
    path(
        f"{workloads}/<slug:name>/checkpoint/",
        views.WorkloadCheckpointApi.as_view(),
        name="workload-checkpoint",
    ),
    path(
        f"{workloads}/<slug:name>/logs/",
        views.WorkloadLogsApi.as_view(),
        name="workload-logs",
    ),
    path(
        f"{workloads}/<slug:name>/events/",
        views.WorkloadEventListApi.as_view(),
        name="workload-events",
    ),
]
