from django.urls import path

from . import views

webhooks = "organizations/<slug:org_slug>/webhooks"
deliveries = f"{webhooks}/<str:webhook_id>/deliveries"

urlpatterns = [
    path(f"{webhooks}/", views.EndpointCollectionApi.as_view(), name="webhooks"),
    path(f"{webhooks}/<str:webhook_id>/", views.EndpointDetailApi.as_view(), name="webhook"),
    path(f"{deliveries}/", views.DeliveryCollectionApi.as_view(), name="deliveries"),
    path(f"{deliveries}/<str:delivery_id>/", views.DeliveryDetailApi.as_view(), name="delivery"),
    path(
        f"{deliveries}/<str:delivery_id>/redeliver/",
        views.DeliveryRedeliverApi.as_view(),
        name="delivery-redeliver",
    ),
]
