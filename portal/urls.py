from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from portal.api.errors import api_not_found
from portal.api.explorers import RedocView
from portal.views import favicon, health, metrics, ready, workers_health

# Operators sign in to admin as everyone signs in to the console: by e-mail, through allauth.
admin.site.login = secure_admin_login(admin.site.login)

# The operator API: each app serves its own endpoints; staff only (tenants.api.operator).
operator_v1 = [
    path("", include("scheduling.api.operator_urls")),
    path("", include("billing.api.operator_urls")),
]

api_v1 = [
    path("operator/", include((operator_v1, "operator"), namespace="operator")),
    path("", include(("tenants.api.urls", "tenants"), namespace="tenants")),
    path("", include(("scheduling.api.urls", "scheduling"), namespace="scheduling")),
    path("", include(("billing.api.urls", "billing"), namespace="billing")),
    path("", include(("webhooks.api.urls", "webhooks"), namespace="webhooks")),
]

urlpatterns = [
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path(
        "api/redoc/",
        RedocView.as_view(url_name="api-schema"),
        name="api-redoc",
    ),
    re_path(r"^api/", api_not_found),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("healthz", health, name="health"),
    path("healthz/workers", workers_health, name="health-workers"),
    path("readyz", ready, name="ready"),
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", favicon),
    path("", include(("scheduling.urls", "workloads"), namespace="workloads")),
    path("", include(("billing.urls", "billing"), namespace="billing")),
    path("", include(("webhooks.urls", "webhooks"), namespace="webhooks")),
    path("", include(("tenants.urls", "console"), namespace="console")),
]

handler400 = "portal.views.bad_request"
handler403 = "portal.views.permission_denied"
handler404 = "portal.views.not_found"
handler500 = "portal.views.server_error"
