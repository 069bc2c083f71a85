from django.urls import path

from . import views

orders = "organizations/<slug:org_slug>/orders"

urlpatterns = [
    path("organizations/<slug:org_slug>/catalog/", views.CatalogListApi.as_view(), name="catalog"),
    path(f"{orders}/", views.OrderCollectionApi.as_view(), name="orders"),
    path(f"{orders}/<str:order_id>/", views.OrderDetailApi.as_view(), name="order"),
    path(f"{orders}/<str:order_id>/submit/", views.OrderSubmitApi.as_view(), name="order-submit"),
    path(f"{orders}/<str:order_id>/cancel/", views.OrderCancelApi.as_view(), name="order-cancel"),
    path(
        "organizations/<slug:org_slug>/cancellation-charges/",
        views.CancellationChargeListApi.as_view(),
        name="cancellation-charges",
    ),
    path(
        "organizations/<slug:org_slug>/reservations/<str:reservation_id>/cancellation-charge/",
        views.ReservationCancellationChargeApi.as_view(),
        name="reservation-cancellation-charge",
    ),
]
