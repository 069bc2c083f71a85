from django.urls import path

from . import views

webhooks = "orgs/<slug:org_slug>/settings/webhooks"

urlpatterns = [
    path(f"{webhooks}/", views.webhooks, name="webhooks"),
    path(f"{webhooks}/<uuid:webhook_id>/", views.webhook, name="webhook"),
    path(f"{webhooks}/<uuid:webhook_id>/pause/", views.webhook_pause, name="webhook-pause"),
    path(f"{webhooks}/<uuid:webhook_id>/delete/", views.webhook_delete, name="webhook-delete"),
    path(
        f"{webhooks}/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/redeliver/",
        views.delivery_redeliver,
        name="delivery-redeliver",
    ),
]
