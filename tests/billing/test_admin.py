"""Billing's admin, for operators: prices refused on the form, orders approved, credit
granted, invoices issued (or refused with the reason) and downloaded, unpriced use shown."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from billing import services
from billing.models import Credit, Invoice, Order, ShowbackSetting
from portal import clock
from scheduling.models import NodePool
from tenants.models import AuditEvent

from .conftest import at, draft, metered, order, period_over, ran

pytestmark = pytest.mark.django_db


def test_the_admin_refuses_a_price_dated_in_the_past_on_the_form(offer, client):
    from ..factories import UserFactory

    item = offer()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    past = clock.now() - timedelta(days=1)
    response = client.post(
        "/admin/billing/priceversion/add/",
        {
            "item": item.pk,
            "unit_price": "1.0000",
            "effective_from_0": past.strftime("%Y-%m-%d"),
            "effective_from_1": past.strftime("%H:%M:%S"),
        },
    )
    assert (response.status_code, "cannot start in the past" in response.content.decode()) == (
        200,
        True,
    )


def test_an_operator_approves_an_order_in_admin(reserved, alice, acme, operator, client):
    made = order(alice, acme)
    operator.is_superuser = True
    operator.save()
    client.force_login(operator)
    client.post("/admin/billing/order/", {"action": "approve", "_selected_action": [str(made.pk)]})
    made.refresh_from_db()
    assert made.state == Order.State.APPROVED


def test_an_operator_grants_credit_from_admin(acme, operator, client):
    operator.is_superuser = True
    operator.save()
    client.force_login(operator)
    response = client.post(
        "/admin/billing/credit/add/",
        {"organization": acme.pk, "amount": "15.00", "reason": "Promotion"},
    )
    credit = Credit.objects.get()
    assert (response.status_code, credit.amount, credit.granted_by) == (
        302,
        Decimal("15.00"),
        operator,
    )


def test_an_operator_issues_from_admin(two_line_invoice, finance):
    period_over(two_line_invoice)
    finance.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": "issue", "_selected_action": [str(two_line_invoice.pk)]},
    )
    two_line_invoice.refresh_from_db()
    assert two_line_invoice.state == "issued"


def test_the_admin_downloads_the_selected_as_csv(two_line_invoice, finance):
    response = finance.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": "download_csv", "_selected_action": [str(two_line_invoice.pk)]},
    )
    assert response["Content-Type"] == "text/csv"


def test_admin_names_a_draft_and_its_rows_by_the_organizations_name(
    two_line_invoice, operator, client
):
    operator.is_superuser = True
    operator.save()
    client.force_login(operator)
    page = client.get("/admin/billing/invoice/").content.decode()
    assert (
        f"draft Acme AI {two_line_invoice.period_start:%Y-%m}" in page,
        str(two_line_invoice.organization_id) in page,
    ) == (
        True,
        False,
    )


def test_issuing_an_open_month_in_admin_says_why_and_issues_nothing(
    on_demand, acme, vision, finance
):
    metered((vision, {"start": 1, "end": 2}))
    invoice = draft(acme)
    answer = finance.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": "issue", "_selected_action": [str(invoice.pk)]},
        follow=True,
    )
    invoice.refresh_from_db()
    assert (invoice.state, "has not ended" in answer.content.decode()) == ("draft", True)


def test_the_invoice_list_in_admin_warns_of_unpriced_use(finance, mig_ran):
    page = finance.get("/admin/billing/invoice/").content.decode()
    assert "Use with no price in force, billed at nothing and held from issue" in page


def test_the_billing_records_in_admin_filter_unpriced_use(finance, mig_ran, vision):
    ran(vision, start=1, end=2, name="priced")
    services.usage_meter(now=at(3))
    page = finance.get("/admin/billing/billingrecord/?priced=no").content.decode()
    assert "1 billing record" in page


def test_issuing_a_held_draft_in_admin_says_why_instead_of_failing(finance, held_draft):
    response = finance.post(
        "/admin/billing/invoice/",
        {"action": "issue", "_selected_action": [str(held_draft.pk)]},
        follow=True,
    )
    held_draft.refresh_from_db()
    assert (
        response.status_code,
        held_draft.state,
        "is held: no price was in force" in response.content.decode(),
    ) == (
        200,
        Invoice.State.DRAFT,
        True,
    )


def test_finance_sees_the_contract_credits_in_admin(lost_work_invoice, finance):
    page = finance.get(reverse("admin:billing_contractcredit_changelist")).content.decode()
    assert "Credit for work lost to an eviction" in page


def _cost_model_form(pool, moment) -> dict:
    return {
        "pool": pool.pk,
        "purchase_price_per_gpu": "30000.00",
        "lifetime_months": "48",
        "nameplate_watts": "700",
        "price_per_kwh": "0.2000",
        "overhead_per_node_hour": "0.5000",
        "effective_from_0": moment.strftime("%Y-%m-%d"),
        "effective_from_1": moment.strftime("%H:%M:%S"),
    }


def test_an_operator_adds_a_cost_model_in_admin_audited(cluster, finance):
    pool = NodePool.objects.get(name="dgx-h100")
    later = clock.now() + timedelta(days=1)
    response = finance.post("/admin/billing/costmodel/add/", _cost_model_form(pool, later))
    assert response.status_code == 302
    assert AuditEvent.objects.get(action="books.cost_model_add").payload["pool"] == "dgx-h100"


def test_the_admin_refuses_a_cost_model_dated_in_the_past_on_the_form(cluster, finance):
    pool = NodePool.objects.get(name="dgx-h100")
    past = clock.now() - timedelta(days=1)
    response = finance.post("/admin/billing/costmodel/add/", _cost_model_form(pool, past))
    assert (response.status_code, "cannot start in the past" in response.content.decode()) == (
        200,
        True,
    )


def test_an_operator_sets_an_organizations_showback_in_admin_audited(acme, finance):
    response = finance.post(
        "/admin/billing/showbacksetting/add/", {"organization": acme.pk, "level": "hours"}
    )
    assert response.status_code == 302
    assert ShowbackSetting.objects.get(organization=acme).level == "hours"
    event = AuditEvent.objects.get(action="books.showback_set")
    assert event.payload == {"level": "hours", "before": "off"}


def test_an_operator_changes_an_organizations_showback_in_admin(acme, finance):
    finance.post("/admin/billing/showbacksetting/add/", {"organization": acme.pk, "level": "hours"})
    response = finance.post(f"/admin/billing/showbacksetting/{acme.pk}/change/", {"level": "cost"})
    assert response.status_code == 302
    assert ShowbackSetting.objects.get(organization=acme).level == "cost"
    assert AuditEvent.objects.filter(action="books.showback_set").count() == 2
