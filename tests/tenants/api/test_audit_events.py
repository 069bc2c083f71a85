import pytest

from tenants import services
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/audit-events/"


@pytest.fixture
def trail(alice, acme):
    caller = Caller(user=alice)
    services.project_create(caller=caller, organization=acme, slug="p1", name="P1")
    services.project_create(caller=caller, organization=acme, slug="p2", name="P2")
    services.organization_update(caller=caller, organization=acme, name="Renamed")


def test_the_trail_lists_newest_first(alice, trail, api_as):
    actions = [e["action"] for e in api_as(alice).get(URL).json()["results"]]
    assert actions == ["organization.update", "project.create", "project.create"]


def test_the_trail_filters_by_action(alice, trail, api_as):
    body = api_as(alice).get(URL, {"action": "project.create"}).json()
    assert body["count"] == 2


def test_the_trail_filters_by_time(alice, trail, api_as):
    assert api_as(alice).get(URL, {"since": "2100-01-01T00:00:00Z"}).json()["count"] == 0


def test_a_time_filter_with_an_offset_past_15_59_is_read_as_its_utc_instant(alice, trail, api_as):
    # PostgreSQL refuses offsets past ±15:59; 2100-01-01T00:00-16:00 is 2100-01-01T16:00Z.
    client = api_as(alice)
    assert client.get(URL, {"until": "2100-01-01T00:00:00-16:00"}).json()["count"] == 3
    assert client.get(URL, {"since": "2100-01-01T00:00:00+23:59"}).json()["count"] == 0


def test_a_time_filter_past_the_calendar_once_in_utc_is_its_first_or_last_instant(
    alice, trail, api_as
):
    client = api_as(alice)
    assert client.get(URL, {"since": "0001-01-01T00:00:00+01:00"}).json()["count"] == 3
    assert client.get(URL, {"until": "9999-12-31T23:59:59-01:00"}).json()["count"] == 3


@pytest.mark.parametrize("since", ["yesterday", ""])
def test_a_malformed_time_filter_is_a_400_naming_it(alice, api_as, since):
    response = api_as(alice).get(URL, {"since": since})
    assert response.status_code == 400
    assert "since" in response.json()["error"]["fields"]


def test_another_organizations_events_never_appear(alice, bruno, globex, trail, api_as):
    services.project_create(caller=Caller(user=bruno), organization=globex, slug="g1", name="G")
    labels = [e["target_label"] for e in api_as(alice).get(URL).json()["results"]]
    assert "globex/g1" not in labels
