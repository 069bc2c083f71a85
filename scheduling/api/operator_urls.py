"""Scheduling's part of the operator API, mounted at `/api/v1/operator/` by portal/urls.py."""

from django.urls import path

from . import fairness
from . import operator as views

urlpatterns = [
    path("pools/", views.PoolListApi.as_view(), name="pools"),
    path("nodes/", views.NodeListApi.as_view(), name="nodes"),
    path("nodes/<str:name>/", views.NodeDetailApi.as_view(), name="node"),
    path("nodes/<str:name>/cordon/", views.NodeCordonApi.as_view(), name="node-cordon"),
    path("nodes/<str:name>/uncordon/", views.NodeUncordonApi.as_view(), name="node-uncordon"),
    path("nodes/<str:name>/drain/", views.NodeDrainApi.as_view(), name="node-drain"),
    path("gpu-classes/", views.GpuClassListApi.as_view(), name="gpu-classes"),
    path("gpu-classes/<str:name>/", views.GpuClassDetailApi.as_view(), name="gpu-class"),
    path("priority-tiers/", views.TierListApi.as_view(), name="priority-tiers"),
    path("priority-tiers/<slug:name>/", views.TierDetailApi.as_view(), name="priority-tier"),
    path("quota-grants/", views.QuotaGrantCollectionApi.as_view(), name="quota-grants"),
    path("quota-grants/remove/", views.QuotaGrantRemoveApi.as_view(), name="quota-grant-remove"),
    path("reservations/", views.ReservationListApi.as_view(), name="reservations"),
    path(
        "reservations/<str:reservation_id>/approve/",
        views.ReservationApproveApi.as_view(),
        name="reservation-approve",
    ),
    path(
        "reservations/<str:reservation_id>/reject/",
        views.ReservationRejectApi.as_view(),
        name="reservation-reject",
    ),
    path("quota-requests/", views.QuotaRequestListApi.as_view(), name="quota-requests"),
    path(
        "quota-requests/<str:request_id>/approve/",
        views.QuotaRequestApproveApi.as_view(),
        name="quota-request-approve",
    ),
    path(
        "quota-requests/<str:request_id>/reject/",
        views.QuotaRequestRejectApi.as_view(),
        name="quota-request-reject",
    ),
    path("queue/", views.QueueApi.as_view(), name="queue"),
    path("fair-share/", fairness.OperatorFairShareListApi.as_view(), name="fair-share"),
    path(
        "fair-share/<slug:org_slug>/",
        fairness.OperatorFairShareWeightApi.as_view(),
        name="fair-share-weight",
    ),
    path("insights/", views.InsightListApi.as_view(), name="insights"),
    path(
        "estimates/calibration/",
        views.EstimateCalibrationApi.as_view(),
        name="estimate-calibration",
    ),
]
