"""The operator API of billing (`/api/v1/operator/…`): decisions on every organization's
orders, its invoices (issue, void, credit notes) and credit grants. Staff only (404 to anyone
else); every write through the services admin uses, audited as there."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from billing import selectors, services
from billing.models import Credit, Invoice, Order
from portal.api.serializers import ReasonInput
from portal.api.views import list_response, validated
from tenants import selectors as tenant_selectors
from tenants.api.operator import OperatorApiView, OperatorCollectionApiView
from tenants.permissions import caller_of

from .filters import CreditFilter, InvoiceFilter, OperatorOrderFilter
from .operator_serializers import (
    CreditGrantInput,
    CreditNoteInput,
    OperatorCreditOutput,
    OperatorInvoiceOutput,
    OperatorOrderOutput,
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
