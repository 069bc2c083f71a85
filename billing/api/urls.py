from django.urls import path

from . import views

orders = "organizations/<slug:org_slug>/orders"

urlpatterns = [
    path("organizations/<slug:org_slug>/catalog/", views.CatalogListApi.as_view(), name="catalog"),
    path(f"{orders}/", views.OrderCollectionApi.as_view(), name="orders"),
    path(f"{orders}/<str:order_id>/", views.OrderDetailApi.as_view(), name="order"),
    path(f"{orders}/<str:order_id>/submit/", views.OrderSubmitApi.as_view(), name="order-submit"),
    path(f"{orders}/<str:order_id>/cancel/", views.OrderCancelApi.as_view(), name="order-cancel"),
]
