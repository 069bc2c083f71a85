"""Billing's part of the operator API, mounted at `/api/v1/operator/` by portal/urls.py."""

from django.urls import path

from . import operator as views

urlpatterns = [
    path("orders/", views.OrderListApi.as_view(), name="orders"),
    path("orders/<str:order_id>/approve/", views.OrderApproveApi.as_view(), name="order-approve"),
    path("orders/<str:order_id>/reject/", views.OrderRejectApi.as_view(), name="order-reject"),
    path("invoices/", views.InvoiceListApi.as_view(), name="invoices"),
    path("invoices/<str:invoice_id>/issue/", views.InvoiceIssueApi.as_view(), name="invoice-issue"),
    path("invoices/<str:invoice_id>/void/", views.InvoiceVoidApi.as_view(), name="invoice-void"),
    path(
        "invoices/<str:invoice_id>/credit-notes/",
        views.CreditNoteApi.as_view(),
        name="invoice-credit-notes",
    ),
    path("credits/", views.CreditCollectionApi.as_view(), name="credits"),
    path("cost-models/", views.CostModelCollectionApi.as_view(), name="cost-models"),
    path("books/<int:year>/<int:month>/", views.BooksApi.as_view(), name="books"),
    path(
        "organizations/<slug:org_slug>/showback/",
        views.ShowbackSettingApi.as_view(),
        name="organization-showback",
    ),
    path(
        "books/<int:year>/<int:month>/<str:kind>/",
        views.BooksExportApi.as_view(),
        name="books-export",
    ),
]
