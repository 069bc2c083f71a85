"""The operator API sets what each organization is shown of its own showback (off, GPU-hours
only, GPU-hours and cost), audited; the tenants' showback follows it."""

import pytest

from billing.models import ShowbackSetting
from portal import clock
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

URL = "/api/v1/operator/organizations/acme/showback/"


def test_an_organization_without_a_setting_has_the_portals_default(acme, ops, settings):
    settings.PORTAL_BOOKS_SHOWBACK = "hours"
    _, client = ops
    answer = client.get(URL).json()
    assert answer == {"organization": "acme", "level": "hours", "is_default": True}


def test_an_operator_sets_an_organization_to_hours_only(acme, ops):
    user, client = ops
    response = client.put(URL, {"level": "hours"}, format="json")
    assert response.status_code == 200
    assert response.json() == {"organization": "acme", "level": "hours", "is_default": False}
    setting = ShowbackSetting.objects.get(organization=acme)
    assert (setting.level, setting.updated_by) == ("hours", user)


def test_the_change_is_audited_with_the_level_before(acme, ops):
    _, client = ops
    client.put(URL, {"level": "cost"}, format="json")
    client.put(URL, {"level": "off"}, format="json")
    events = AuditEvent.objects.filter(action="books.showback_set", organization=acme)
    assert sorted(event.payload["before"] + ">" + event.payload["level"] for event in events) == [
        "cost>off",
        "off>cost",
    ]


def test_an_unknown_level_is_a_field_error(acme, ops):
    _, client = ops
    response = client.put(URL, {"level": "everything"}, format="json")
    assert response.status_code == 400
    assert "level" in response.json()["error"]["fields"]


def test_an_unknown_organization_is_a_404(ops):
    _, client = ops
    response = client.put(
        "/api/v1/operator/organizations/nowhere/showback/", {"level": "cost"}, format="json"
    )
    assert response.status_code == 404


def test_the_organizations_owner_sees_what_the_operator_set(cluster, acme, ops, actors, api_as):
    _, client = ops
    now = clock.now()
    showback = f"/api/v1/organizations/acme/showback/{now.year}/{now.month}/"
    owner = api_as(actors["owner"])
    assert owner.get(showback).status_code == 404
    client.put(URL, {"level": "hours"}, format="json")
    assert owner.get(showback).json()[0]["usage_cost"] is None
    client.put(URL, {"level": "cost"}, format="json")
    assert owner.get(showback).json()[0]["usage_cost"] is not None
