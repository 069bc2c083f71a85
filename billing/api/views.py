"""REST endpoints of billing: the catalog with the prices that apply to the caller, orders,
cancellation charges, invoices, budgets and usage."""

from datetime import datetime, time, timedelta

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from billing import exports, selectors, services
from billing.models import CancellationCharge, CatalogItem, Invoice, Order, UsageInterval
from billing.pricing import hour_floor, month_bounds
from portal import clock
from portal.api.views import ApiView, CollectionApiView, list_response
from portal.bounds import FIRST_YEAR, LAST_YEAR, year_in_range
from portal.errors import NotFound
from scheduling import selectors as scheduling_selectors
from tenants.lookups import organization_of
from tenants.permissions import caller_of, sees_money

from .filters import OrderFilter
from .serializers import (
    BudgetInput,
    BudgetOutput,
    CancellationChargeOutput,
    CatalogItemOutput,
    CreditsOutput,
    InvoiceOutput,
    OrderInput,
    OrderOutput,
    UsageIntervalOutput,
    UsageOutput,
    UsageQuery,
)
from .showback_serializers import ShowbackOutput


class CatalogListApi(CollectionApiView):
    queryset = CatalogItem.objects.none()
    ordering_fields = ["gpu_class__name", "kind", "slug"]

    @extend_schema(
        operation_id="catalog_list",
        responses=CatalogItemOutput(many=True),
        description="What the organization may order now, with the unit price in force and"
        " the next price version if one is dated. Money is a decimal string in `currency`.",
    )
    def get(self, request, org_slug: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.catalog_for(
                caller=caller, organization=organization, at=clock.now()
            ),
            serializer_class=CatalogItemOutput,
        )


def _money(organization) -> dict:
    """The serializer context of an order: whether the caller may see its price and total."""
    return {"money": sees_money(organization.my_role)}


class OrderCollectionApi(CollectionApiView):
    queryset = Order.objects.none()
    filterset_class = OrderFilter
    ordering_fields = ["created_at", "state"]

    @extend_schema(operation_id="orders_list", responses=OrderOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.order_list(caller=caller_of(request), organization=organization),
            serializer_class=OrderOutput,
            context=_money(organization),
        )

    @extend_schema(
        operation_id="orders_create",
        request=OrderInput,
        responses={201: OrderOutput},
        description="Order a catalog item: submitted at once (the price in force is fixed),"
        " unless `draft`. Approved by an operator, or at once under the item's rule; then"
        " fulfilled by the worker.",
    )
    def post(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        serializer = OrderInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        order = services.order_create(
            caller=caller_of(request),
            organization=organization,
            request=serializer.as_request(),
            submit=not serializer.validated_data["draft"],
        )
        return Response(
            OrderOutput(order, context=_money(organization)).data, status=status.HTTP_201_CREATED
        )


class OrderDetailApi(ApiView):
    @extend_schema(operation_id="orders_get", responses=OrderOutput)
    def get(self, request, org_slug: str, order_id: str):
        organization = organization_of(request, org_slug)
        order = selectors.order_get(
            caller=caller_of(request), organization=organization, pk=order_id
        )
        return Response(OrderOutput(order, context=_money(organization)).data)


class OrderSubmitApi(ApiView):
    @extend_schema(operation_id="orders_submit", request=None, responses=OrderOutput)
    def post(self, request, org_slug: str, order_id: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        order = selectors.order_get(caller=caller, organization=organization, pk=order_id)
        order = services.order_submit(caller=caller, order=order)
        return Response(OrderOutput(order, context=_money(organization)).data)


class OrderCancelApi(ApiView):
    @extend_schema(operation_id="orders_cancel", request=None, responses=OrderOutput)
    def post(self, request, org_slug: str, order_id: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        order = selectors.order_get(caller=caller, organization=organization, pk=order_id)
        order = services.order_cancel(caller=caller, order=order)
        return Response(OrderOutput(order, context=_money(organization)).data)


class CancellationChargeListApi(CollectionApiView):
    queryset = CancellationCharge.objects.none()
    ordering_fields = ["cancelled_at", "amount"]

    @extend_schema(
        operation_id="cancellation_charges_list",
        responses=CancellationChargeOutput(many=True),
        description="What cancelling each of the organization's cancelled reservations cost"
        " by its catalog item's terms (0 when cancelled in time).",
    )
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.cancellation_charge_list(
                caller=caller_of(request), organization=organization
            ),
            serializer_class=CancellationChargeOutput,
        )


class ReservationCancellationChargeApi(ApiView):
    @extend_schema(
        operation_id="reservations_cancellation_charge",
        responses=CancellationChargeOutput,
        description="What cancelling the reservation would cost now (`recorded` false), or"
        " what its cancellation cost. 409 for a reservation that holds nothing.",
    )
    def get(self, request, org_slug: str, reservation_id: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        reservation = scheduling_selectors.reservation_get(
            caller=caller, organization=organization, pk=reservation_id
        )
        charge = selectors.cancellation_charge_get(
            caller=caller, organization=organization, reservation=reservation, now=clock.now()
        )
        return Response(CancellationChargeOutput(charge).data)


class InvoiceCollectionApi(CollectionApiView):
    queryset = Invoice.objects.none()
    ordering_fields = ["period_start", "number"]

    @extend_schema(
        operation_id="invoices_list",
        responses=InvoiceOutput(many=True),
        description="The organization's invoices and credit notes (owners and admins).",
    )
    def get(self, request, org_slug: str):
        return list_response(
            view=self,
            queryset=selectors.invoice_list(
                caller=caller_of(request), organization=organization_of(request, org_slug)
            ),
            serializer_class=InvoiceOutput,
        )


def _invoice(request, org_slug: str, invoice_id: str) -> Invoice:
    return selectors.invoice_get(
        caller=caller_of(request), organization=organization_of(request, org_slug), pk=invoice_id
    )


class InvoiceDetailApi(ApiView):
    @extend_schema(operation_id="invoices_get", responses=InvoiceOutput)
    def get(self, request, org_slug: str, invoice_id: str):
        return Response(InvoiceOutput(_invoice(request, org_slug, invoice_id)).data)


class InvoiceExportApi(ApiView):
    @extend_schema(
        operation_id="invoices_export",
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
        description="The invoice as `csv`, `json` or `pdf`.",
    )
    def get(self, request, org_slug: str, invoice_id: str, kind: str):
        return exports.invoice_file(_invoice(request, org_slug, invoice_id), kind)


class InvoiceLineUsageApi(CollectionApiView):
    queryset = UsageInterval.objects.none()
    ordering_fields = ["started_at"]

    @extend_schema(
        operation_id="invoices_line_usage",
        responses=UsageIntervalOutput(many=True),
        description="The usage intervals behind one line, each with the seconds it bills.",
    )
    def get(self, request, org_slug: str, invoice_id: str, line_id: str):
        invoice = _invoice(request, org_slug, invoice_id)
        return list_response(
            view=self,
            queryset=selectors.invoice_line_usage(invoice=invoice, line_pk=line_id),
            serializer_class=UsageIntervalOutput,
        )


class MonthExportApi(ApiView):
    @extend_schema(
        operation_id="invoices_month_export",
        responses={(200, "text/csv"): OpenApiTypes.BINARY},
        description="Finance (operators): every line of every invoice of a month, as CSV.",
    )
    def get(self, request, year: int, month: int):
        if not (1 <= month <= 12 and year_in_range(year)):
            raise NotFound(f"No such month (years {FIRST_YEAR} to {LAST_YEAR}, months 1 to 12).")
        invoices = selectors.invoices_of_month(caller=caller_of(request), year=year, month=month)
        response = HttpResponse(exports.month_csv(invoices), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="invoices-{year}-{month:02d}.csv"'
        return response


class CreditsApi(ApiView):
    @extend_schema(
        operation_id="credits_get",
        responses=CreditsOutput,
        description="The organization's credit grants and the balance its next invoices will"
        " take off their subtotals (owners and admins).",
    )
    def get(self, request, org_slug: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        grants = selectors.credit_list(caller=caller, organization=organization)
        balance = selectors.credit_balance(organization=organization)
        return Response(
            CreditsOutput(
                {"balance": balance, "currency": settings.PORTAL_CURRENCY, "grants": grants}
            ).data
        )


class BudgetCollectionApi(ApiView):
    @extend_schema(
        operation_id="budgets_list",
        responses=BudgetOutput(many=True),
        description="The organization's budgets with what each has spent this month.",
    )
    def get(self, request, org_slug: str):
        budgets = selectors.budget_list(
            caller=caller_of(request), organization=organization_of(request, org_slug)
        )
        return Response(BudgetOutput(budgets, many=True).data)

    @extend_schema(
        operation_id="budgets_set",
        request=BudgetInput,
        responses=BudgetOutput,
        description="Set the budget of the organization (no `project`) or of one project,"
        " replacing the one it had.",
    )
    def put(self, request, org_slug: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        serializer = BudgetInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        budget = services.budget_save(
            caller=caller, organization=organization, **serializer.validated_data
        )
        return Response(BudgetOutput(selectors.budget_spent(budget, at=clock.now())).data)


class BudgetDetailApi(ApiView):
    @extend_schema(operation_id="budgets_delete", responses={204: None})
    def delete(self, request, org_slug: str, budget_id: str):
        caller = caller_of(request)
        budget = selectors.budget_get(
            caller=caller, organization=organization_of(request, org_slug), pk=budget_id
        )
        services.budget_delete(caller=caller, budget=budget)
        return Response(status=status.HTTP_204_NO_CONTENT)


class UsageApi(ApiView):
    query_serializer = UsageQuery

    @extend_schema(
        operation_id="usage_summary",
        parameters=[UsageQuery],
        responses=UsageOutput,
        description="Use and cost per day, class, MIG profile, resource, tier and project,"
        " and totals per class, profile and resource, over a period of whole days in the"
        " organization's time zone (this month by default), as rated, with a forecast to the"
        " month's end from the run rate when the period is the current month. Whole GPUs and"
        " shares are counted in gpu_hours, MIG instances in mig_instance_hours: never added"
        " together.",
    )
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        query = UsageQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        zone = organization.zone
        month_start, month_end = selectors.period_of(organization=organization, at=clock.now())
        first = query.validated_data.get("start")
        last = query.validated_data.get("end")
        starts_at = hour_floor(datetime.combine(first, time(), zone)) if first else month_start
        ends_at = (
            hour_floor(datetime.combine(last + timedelta(days=1), time(), zone))
            if last
            else month_end
        )
        if starts_at >= ends_at:
            raise ValidationError(
                {"start" if first else "end": ["The period ends before it starts."]}
            )
        summary = selectors.usage_summary(
            caller=caller_of(request),
            organization=organization,
            starts_at=starts_at,
            ends_at=ends_at,
        )
        return Response(UsageOutput(summary).data)


class ShowbackApi(ApiView):
    @extend_schema(
        operation_id="showback_month",
        responses=ShowbackOutput(many=True),
        description="The organization's GPU-hours of each GPU pool in a UTC month and its"
        " share of the idle GPU-hours by the operator's rule, and, where the operator shows"
        " costs, what they cost the operator (otherwise the costs are null); owners and"
        " admins, where the operator offers showback (otherwise 404).",
    )
    def get(self, request, org_slug: str, year: int, month: int):
        organization = organization_of(request, org_slug)
        if not (1 <= month <= 12 and year_in_range(year)):
            raise NotFound(f"No such month (years {FIRST_YEAR} to {LAST_YEAR}, months 1 to 12).")
        starts_at, ends_at = month_bounds(year, month)
        found = selectors.showback(
            caller=caller_of(request),
            organization=organization,
            starts_at=starts_at,
            ends_at=ends_at,
        )
        return Response(ShowbackOutput(found, many=True).data)
