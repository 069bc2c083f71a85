"""Operators sign in to admin by e-mail, as everyone signs in to the console, and admin greets
them by e-mail, not by an internal username."""

import pytest

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


def test_admins_sign_in_is_the_consoles_by_e_mail(client):
    response = client.get("/admin/login/?next=/admin/")
    assert (response.status_code, response["Location"].split("?")[0]) == (302, "/accounts/login/")


def test_admin_greets_an_operator_by_e_mail(client):
    operator = UserFactory(email="ops@example.com", is_staff=True, is_superuser=True)
    client.force_login(operator)
    page = client.get("/admin/").content.decode()
    assert ("Signed in as <strong>ops@example.com</strong>" in page, operator.username in page) == (
        True,
        False,
    )


def test_a_signed_in_tenant_is_refused_admin(client, alice):
    client.force_login(alice)
    assert client.get("/admin/login/").status_code == 403
