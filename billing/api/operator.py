"""The operator API of billing (`/api/v1/operator/…`): decisions on every organization's
orders, its invoices (issue, void, credit notes) and credit grants; the books (cost models,
each pool's hours, cost and margin, what each organization is shown of its showback). Staff
only (404 to anyone else); every write through the services admin uses, audited as there."""

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from billing import exports, selectors, services
from billing.models import CostModel, Credit, Invoice, Order
from portal.api.serializers import ReasonInput
from portal.api.views import list_response, validated
from portal.bounds import FIRST_YEAR, LAST_YEAR, year_in_range
from portal.errors import NotFound
from scheduling import selectors as scheduling_selectors
from tenants import selectors as tenant_selectors
from tenants.api.operator import OperatorApiView, OperatorCollectionApiView
from tenants.permissions import caller_of

from .filters import CostModelFilter, CreditFilter, InvoiceFilter, OperatorOrderFilter
from .operator_serializers import (
    CostModelInput,
    CostModelOutput,
    CreditGrantInput,
    CreditNoteInput,
    OperatorCreditOutput,
    OperatorInvoiceOutput,
    OperatorOrderOutput,
    PoolBooksOutput,
    ShowbackLevelInput,
    ShowbackOfferOutput,
)

# Operators see every amount.
MONEY = {"money": True}


class OrderListApi(OperatorCollectionApiView):
    queryset = Order.objects.none()
    filterset_class = OperatorOrderFilter
    ordering_fields = ["created_at", "submitted_at", "state"]

    @extend_schema(
        operation_id="operator_orders_list",
        responses=OperatorOrderOutput(many=True),
        description="Every organization's orders, the newest first; `?state=submitted` lists"
        " those waiting for a decision.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.orders_for_operator(caller=caller_of(request)),
            serializer_class=OperatorOrderOutput,
            context=MONEY,
        )


def _order_answer(request, order_id: str) -> Response:
    order = selectors.orders_for_operator(caller=caller_of(request)).get(pk=order_id)
    return Response(OperatorOrderOutput(order, context=MONEY).data)


class OrderApproveApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_orders_approve",
        request=None,
        responses=OperatorOrderOutput,
        description="Approve a submitted order (audited `order.approve`, mailed); the worker"
        " fulfils it. One already decided is a 409 `order_state`.",
    )
    def post(self, request, order_id: str):
        caller = caller_of(request)
        order = selectors.order_for_operator(caller=caller, pk=order_id)
        services.order_approve(caller=caller, order=order)
        return _order_answer(request, order_id)


class OrderRejectApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_orders_reject",
        request=ReasonInput,
        responses=OperatorOrderOutput,
        description="Reject a submitted order, saying why (audited `order.reject`, mailed)."
        " One already decided is a 409 `order_state`.",
    )
    def post(self, request, order_id: str):
        caller = caller_of(request)
        order = selectors.order_for_operator(caller=caller, pk=order_id)
        reason = validated(ReasonInput, request).validated_data["reason"]
        services.order_reject(caller=caller, order=order, reason=reason)
        return _order_answer(request, order_id)


class InvoiceListApi(OperatorCollectionApiView):
    queryset = Invoice.objects.none()
    filterset_class = InvoiceFilter
    ordering_fields = ["period_start", "issued_at", "number", "total"]

    @extend_schema(
        operation_id="operator_invoices_list",
        responses=OperatorInvoiceOutput(many=True),
        description="Every organization's invoices and credit notes, the latest period first;"
        " `?state=draft` lists those to issue.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.invoices_for_operator(caller=caller_of(request)),
            serializer_class=OperatorInvoiceOutput,
        )


def _invoice_answer(request, invoice_id, *, created: bool = False) -> Response:
    invoice = selectors.invoice_for_operator(caller=caller_of(request), pk=invoice_id)
    return Response(
        OperatorInvoiceOutput(invoice).data,
        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
    )


class InvoiceIssueApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_invoices_issue",
        request=None,
        responses=OperatorInvoiceOutput,
        description="Issue a draft whose period has ended: rated up to now, numbered, never"
        " changed again (audited `invoice.issue`). 409 `period_not_ended`, `unpriced_usage`,"
        " or `invoice_state` for one not a draft.",
    )
    def post(self, request, invoice_id: str):
        caller = caller_of(request)
        invoice = selectors.invoice_for_operator(caller=caller, pk=invoice_id)
        services.invoice_issue(caller=caller, invoice=invoice)
        return _invoice_answer(request, invoice_id)


class InvoiceVoidApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_invoices_void",
        request=ReasonInput,
        responses=OperatorInvoiceOutput,
        description="Void an issued, unpaid invoice, saying why (audited `invoice.void`); its"
        " number stays used. 409 `invoice_state` for one not issued.",
    )
    def post(self, request, invoice_id: str):
        caller = caller_of(request)
        invoice = selectors.invoice_for_operator(caller=caller, pk=invoice_id)
        reason = validated(ReasonInput, request).validated_data["reason"]
        services.invoice_void(caller=caller, invoice=invoice, reason=reason)
        return _invoice_answer(request, invoice_id)


class CreditNoteApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_invoices_credit_note",
        request=CreditNoteInput,
        responses={201: OperatorInvoiceOutput},
        description="Correct an issued or paid invoice with a credit note of `amount` before"
        " tax, issued at once in the same numbering (audited `invoice.issue`). 409"
        " `invoice_state` for a draft or a void one.",
    )
    def post(self, request, invoice_id: str):
        caller = caller_of(request)
        invoice = selectors.invoice_for_operator(caller=caller, pk=invoice_id)
        data = validated(CreditNoteInput, request).validated_data
        note = services.credit_note_issue(
            caller=caller, invoice=invoice, amount=data["amount"], reason=data["reason"]
        )
        return _invoice_answer(request, note.pk, created=True)


class CreditCollectionApi(OperatorCollectionApiView):
    queryset = Credit.objects.none()
    filterset_class = CreditFilter
    ordering_fields = ["granted_at", "amount"]

    @extend_schema(
        operation_id="operator_credits_list",
        responses=OperatorCreditOutput(many=True),
        description="Every organization's credit grants, the newest first.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.credits_for_operator(caller=caller_of(request)),
            serializer_class=OperatorCreditOutput,
        )

    @extend_schema(
        operation_id="operator_credits_grant",
        request=CreditGrantInput,
        responses={201: OperatorCreditOutput},
        description="Grant an organization credit (audited `credit.grant`): its next invoices"
        " take it off their subtotals as they are issued.",
    )
    def post(self, request):
        caller = caller_of(request)
        data = validated(CreditGrantInput, request).validated_data
        errors: dict[str, list[str]] = {}
        organization = tenant_selectors.organization_named(
            caller=caller, slug=data["organization"], errors=errors
        )
        if errors:
            raise ValidationError(errors)
        credit = services.credit_grant(
            caller=caller, organization=organization, amount=data["amount"], reason=data["reason"]
        )
        credit = selectors.credits_for_operator(caller=caller).get(pk=credit.pk)
        return Response(OperatorCreditOutput(credit).data, status=status.HTTP_201_CREATED)


class CostModelCollectionApi(OperatorCollectionApiView):
    queryset = CostModel.objects.none()
    filterset_class = CostModelFilter
    ordering_fields = ["effective_from"]

    @extend_schema(
        operation_id="operator_cost_models_list",
        responses=CostModelOutput(many=True),
        description="Every cost model of every pool and node, each pool's versions in order;"
        " `?pool=dgx-h100` lists one pool's.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.cost_models_for_operator(caller=caller_of(request)),
            serializer_class=CostModelOutput,
        )

    @extend_schema(
        operation_id="operator_cost_models_add",
        request=CostModelInput,
        responses={201: CostModelOutput},
        description="Add a cost model for a pool (or one node of it) from `effective_from`"
        " (unsaid: now; never in the past), audited `books.cost_model_add`.",
    )
    def post(self, request):
        caller = caller_of(request)
        data = dict(validated(CostModelInput, request).validated_data)
        errors: dict[str, list[str]] = {}
        pool = scheduling_selectors.pools_for_operator(caller=caller).filter(name=data["pool"])
        data["pool"] = pool.first()
        if data["pool"] is None:
            errors["pool"] = [f"No pool {request.data['pool']!r}."]
        if "node" in data:
            data["node"] = (
                scheduling_selectors.nodes_for_operator(caller=caller)
                .filter(name=data["node"])
                .first()
            )
            if data["node"] is None:
                errors["node"] = [f"No node {request.data['node']!r}."]
        if errors:
            raise ValidationError(errors)
        version = services.cost_model_add(caller=caller, **data)
        version = selectors.cost_models_for_operator(caller=caller).get(pk=version.pk)
        return Response(CostModelOutput(version).data, status=status.HTTP_201_CREATED)


def _month_check(year: int, month: int) -> None:
    if not (1 <= month <= 12 and year_in_range(year)):
        raise NotFound(f"No such month (years {FIRST_YEAR} to {LAST_YEAR}, months 1 to 12).")


class BooksApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_books_month",
        responses=PoolBooksOutput(many=True),
        description="The books of a UTC month, pool by pool: GPU-hours by category (used and"
        " billed, reserved and used, reserved and lent, reserved and idle, granted quota idle,"
        " unallocated idle, unavailable), cost, revenue, margin, utilisation, and the"
        " reservations and guarantees that sat idle most.",
    )
    def get(self, request, year: int, month: int):
        _month_check(year, month)
        kept = selectors.month_books_for_operator(caller=caller_of(request), year=year, month=month)
        return Response(PoolBooksOutput(kept.pools, many=True).data)


class BooksExportApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_books_export",
        responses={(200, "text/csv"): OpenApiTypes.BINARY},
        description="The books of a UTC month for finance: `csv` (a row per pool and"
        " category) or `json`.",
    )
    def get(self, request, year: int, month: int, kind: str):
        _month_check(year, month)
        if kind not in ("csv", "json"):
            raise NotFound("The books export as csv or json.")
        kept = selectors.month_books_for_operator(caller=caller_of(request), year=year, month=month)
        return exports.books_file(kept, kind)


class ShowbackSettingApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_showback_get",
        responses=ShowbackOfferOutput,
        description="What the organization is shown of its own showback: `off`, `hours`"
        " (GPU-hours only) or `cost` (GPU-hours and their cost); `is_default`: nothing was set"
        " for it, and the portal's default applies.",
    )
    def get(self, request, org_slug: str):
        caller = caller_of(request)
        offer = selectors.showback_offer_for_operator(
            caller=caller,
            organization=tenant_selectors.organization_for_operator(caller=caller, slug=org_slug),
        )
        return Response(ShowbackOfferOutput(offer).data)

    @extend_schema(
        operation_id="operator_showback_set",
        request=ShowbackLevelInput,
        responses=ShowbackOfferOutput,
        description="Set what the organization is shown of its own showback from now on"
        " (audited `books.showback_set`, with the level before).",
    )
    def put(self, request, org_slug: str):
        caller = caller_of(request)
        organization = tenant_selectors.organization_for_operator(caller=caller, slug=org_slug)
        level = validated(ShowbackLevelInput, request).validated_data["level"]
        services.showback_level_set(caller=caller, organization=organization, level=level)
        offer = selectors.showback_offer_for_operator(caller=caller, organization=organization)
        return Response(ShowbackOfferOutput(offer).data)
