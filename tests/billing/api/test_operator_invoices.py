"""The operator API's invoices and credits: every organization's listed; drafts issued,
issued ones voided or corrected by credit notes; credit granted; each audited."""

import pytest

from billing.models import Credit, Invoice
from billing.services import invoice_draft
from portal import clock
from tenants.models import AuditEvent

from .test_operator_permission_matrix import last_month_invoice

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"


@pytest.fixture
def draft(on_demand, operator, acme):
    return last_month_invoice(acme, operator, issued=False)


@pytest.fixture
def issued(on_demand, operator, acme):
    return last_month_invoice(acme, operator, issued=True)


def test_invoices_are_listed_by_state_across_tenants(draft, ops):
    _, client = ops
    [row] = client.get(f"{OP}/invoices/?state=draft").json()["results"]
    assert (row["id"], row["organization"], row["total"]) == (
        str(draft.pk),
        "acme",
        str(draft.total),
    )


def test_an_operator_issues_a_draft_numbered_and_audited(draft, ops):
    user, client = ops
    response = client.post(f"{OP}/invoices/{draft.pk}/issue/")
    assert response.status_code == 200
    assert response.json()["state"] == "issued" and response.json()["number"]
    assert AuditEvent.objects.get(action="invoice.issue").via_token.owner == user


def test_a_draft_of_a_period_not_ended_is_not_issued(on_demand, acme, ops):
    _, client = ops
    now = clock.now()
    current = invoice_draft(organization=acme, year=now.year, month=now.month)
    response = client.post(f"{OP}/invoices/{current.pk}/issue/")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "period_not_ended")


def test_an_invoice_issued_twice_is_a_conflict(issued, ops):
    _, client = ops
    response = client.post(f"{OP}/invoices/{issued.pk}/issue/")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "invoice_state")


def test_an_operator_voids_an_issued_invoice_saying_why(issued, ops):
    _, client = ops
    response = client.post(
        f"{OP}/invoices/{issued.pk}/void/", {"reason": "Wrong rate"}, format="json"
    )
    assert (response.json()["state"], response.json()["reason"]) == ("void", "Wrong rate")
    assert AuditEvent.objects.filter(action="invoice.void").count() == 1


def test_a_void_without_a_reason_is_a_field_error(issued, ops):
    _, client = ops
    response = client.post(f"{OP}/invoices/{issued.pk}/void/", {"reason": ""}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["error"]["fields"]


def test_a_credit_note_corrects_an_issued_invoice(issued, ops):
    _, client = ops
    response = client.post(
        f"{OP}/invoices/{issued.pk}/credit-notes/",
        {"amount": "10.00", "reason": "Outage"},
        format="json",
    )
    assert response.status_code == 201
    note = Invoice.objects.get(pk=response.json()["id"])
    assert (note.corrects, note.subtotal, note.state) == (issued, -10, Invoice.State.ISSUED)


@pytest.mark.parametrize("amount", ["0", "-5", "1e3", "100000.00"])
def test_a_credit_note_of_an_amount_it_cannot_credit_is_a_field_error(issued, ops, amount):
    _, client = ops
    response = client.post(
        f"{OP}/invoices/{issued.pk}/credit-notes/",
        {"amount": amount, "reason": "Outage"},
        format="json",
    )
    assert response.status_code == 400
    assert "amount" in response.json()["error"]["fields"]


def test_an_operator_grants_credit_audited(acme, ops):
    user, client = ops
    response = client.post(
        f"{OP}/credits/",
        {"organization": "acme", "amount": "50.00", "reason": "Outage"},
        format="json",
    )
    assert (response.status_code, response.json()["granted_by"]) == (201, user.email)
    assert Credit.objects.get(organization=acme).amount == 50
    assert AuditEvent.objects.get(action="credit.grant").via_token.owner == user


def test_credit_for_an_organization_that_does_not_exist_is_a_field_error(ops):
    _, client = ops
    response = client.post(
        f"{OP}/credits/", {"organization": "nobody", "amount": "5.00", "reason": "x"}, format="json"
    )
    assert response.status_code == 400
    assert "organization" in response.json()["error"]["fields"]


def test_credits_are_listed_by_organization(acme, globex, ops):
    _, client = ops
    for slug in ("acme", "globex"):
        client.post(
            f"{OP}/credits/", {"organization": slug, "amount": "5.00", "reason": "x"}, format="json"
        )
    rows = client.get(f"{OP}/credits/?organization=globex").json()["results"]
    assert [row["organization"] for row in rows] == ["globex"]


@pytest.mark.parametrize("month", ["", "2026-13-01", "November"])
def test_a_month_that_is_no_date_is_a_field_error(ops, month):
    _, client = ops
    response = client.get(f"{OP}/invoices/", {"month": month})
    assert response.status_code == 400
    assert "month" in response.json()["error"]["fields"]


def test_invoices_are_listed_by_month(draft, ops):
    _, client = ops
    month = draft.month.isoformat()
    assert len(client.get(f"{OP}/invoices/", {"month": month}).json()["results"]) == 1
    assert client.get(f"{OP}/invoices/", {"month": "2001-01-01"}).json()["results"] == []
