from django.urls import path

from . import views

urlpatterns = [
    path("staff/approvals/", views.approvals, name="approvals"),
    path("staff/metering/", views.metering, name="metering"),
    path("staff/books/", views.books, name="books"),
    path(
        "staff/approvals/<slug:kind>/<str:pk>/<slug:decision>/",
        views.approval_decide,
        name="approval-decide",
    ),
    path("orgs/<slug:org_slug>/dashboard/", views.dashboard, name="dashboard"),
    path("orgs/<slug:org_slug>/catalog/", views.catalog, name="catalog"),
    path("orgs/<slug:org_slug>/orders/", views.orders, name="orders"),
    path(
        "orgs/<slug:org_slug>/orders/<str:order_id>/cancel/",
        views.order_cancel,
        name="order-cancel",
    ),
    path("orgs/<slug:org_slug>/invoices/", views.invoices, name="invoices"),
    path("orgs/<slug:org_slug>/usage/", views.usage, name="usage"),
    path("orgs/<slug:org_slug>/showback/", views.showback, name="showback"),
    path("orgs/<slug:org_slug>/budgets/", views.budgets, name="budgets"),
    path(
        "orgs/<slug:org_slug>/budgets/<str:budget_id>/delete/",
        views.budget_delete,
        name="budget-delete",
    ),
    path(
        "orgs/<slug:org_slug>/invoices/<str:invoice_id>/<slug:kind>/",
        views.invoice_download,
        name="invoice-download",
    ),
]
