from django.urls import path

from . import views

orders = "organizations/<slug:org_slug>/orders"
invoices = "organizations/<slug:org_slug>/invoices"

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
    path(f"{invoices}/", views.InvoiceCollectionApi.as_view(), name="invoices"),
    path(f"{invoices}/<str:invoice_id>/", views.InvoiceDetailApi.as_view(), name="invoice"),
    path(
        f"{invoices}/<str:invoice_id>/export/<slug:kind>/",
        views.InvoiceExportApi.as_view(),
        name="invoice-export",
    ),
    path(
        f"{invoices}/<str:invoice_id>/lines/<str:line_id>/usage/",
        views.InvoiceLineUsageApi.as_view(),
        name="invoice-line-usage",
    ),
    path(
        "invoices/<int:year>/<int:month>/export/csv/",
        views.MonthExportApi.as_view(),
        name="invoices-month-export",
    ),
    path(
        "organizations/<slug:org_slug>/budgets/",
        views.BudgetCollectionApi.as_view(),
        name="budgets",
    ),
    path(
        "organizations/<slug:org_slug>/budgets/<str:budget_id>/",
        views.BudgetDetailApi.as_view(),
        name="budget",
    ),
    path("organizations/<slug:org_slug>/usage/", views.UsageApi.as_view(), name="usage"),
    path("organizations/<slug:org_slug>/credits/", views.CreditsApi.as_view(), name="credits"),
    path(
        "organizations/<slug:org_slug>/showback/<int:year>/<int:month>/",
        views.ShowbackApi.as_view(),
        name="showback",
    ),
]
