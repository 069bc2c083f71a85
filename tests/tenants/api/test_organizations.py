import pytest

from tenants.models import Organization

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/"


def test_the_list_shows_only_the_callers_organizations_with_their_role(alice, bruno, api_as):
    response = api_as(alice).get(URL)
    assert response.status_code == 200
    assert [(o["slug"], o["my_role"]) for o in response.json()["results"]] == [("acme", "owner")]


def test_the_list_of_a_foreign_member_shows_none_of_acme(alice, bruno, api_as):
    slugs = [o["slug"] for o in api_as(bruno).get(URL).json()["results"]]
    assert slugs == ["globex"]


def test_creating_returns_the_organization_with_the_caller_as_owner(otto, api_as):
    response = api_as(otto).post(URL, {"slug": "newco", "name": "New Co"}, format="json")
    assert response.status_code == 201
    assert (response.json()["slug"], response.json()["my_role"]) == ("newco", "owner")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "Bad_Slug", "name": "X"}, "slug"),
        ({"slug": "-leading", "name": "X"}, "slug"),
        ({"slug": "a" * 31, "name": "X"}, "slug"),
        ({"slug": "ok-slug", "name": "x" * 101}, "name"),
        ({"slug": "ok-slug"}, "name"),
        ({"slug": 12, "name": "X"}, "slug"),
        ({"slug": "ok-slug", "name": "X", "billing_email": "not-an-email"}, "billing_email"),
        ({"slug": "ok-slug", "name": "X", "fair_share_weight": 100}, "fair_share_weight"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field_and_creates_nothing(otto, api_as, body, field):
    response = api_as(otto).post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not Organization.objects.exists()


def test_a_taken_slug_is_a_400_on_the_slug(acme, otto, api_as):
    response = api_as(otto).post(URL, {"slug": "acme", "name": "Again"}, format="json")
    assert response.status_code == 400
    assert "slug" in response.json()["error"]["fields"]


def test_the_list_filters_by_status(alice, acme, api_as):
    assert api_as(alice).get(URL, {"status": "suspended"}).json()["count"] == 0
    assert api_as(alice).get(URL, {"status": "active"}).json()["count"] == 1


def test_an_unknown_status_filter_is_a_400_naming_it(alice, api_as):
    response = api_as(alice).get(URL, {"status": "sleeping"})
    assert response.status_code == 400
    assert "status" in response.json()["error"]["fields"]


def test_members_cannot_change_the_fair_share_weight(alice, acme, api_as):
    response = api_as(alice).patch(f"{URL}acme/", {"fair_share_weight": "9"}, format="json")
    assert response.status_code == 400
    acme.refresh_from_db()
    assert acme.fair_share_weight == 1


def test_deleting_an_organization_with_projects_is_a_409(alice, ai_dev, api_as):
    response = api_as(alice).delete(f"{URL}acme/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "organization_has_projects"


def test_the_list_counts_projects_and_members(alice, mia, acme, api_as):
    from ...factories import ProjectFactory

    for slug in ("p1", "p2", "p3"):
        ProjectFactory(organization=acme, slug=slug)
    organization = api_as(alice).get(URL).json()["results"][0]
    assert (organization["project_count"], organization["member_count"]) == (3, 2)


def test_an_owner_sets_the_organizations_time_zone(alice, acme, api_as):
    response = api_as(alice).patch(f"{URL}acme/", {"time_zone": "Asia/Tokyo"}, format="json")
    acme.refresh_from_db()
    assert (response.status_code, response.json()["time_zone"], acme.time_zone) == (
        200,
        "Asia/Tokyo",
        "Asia/Tokyo",
    )


def test_an_unknown_time_zone_is_a_400_on_the_field(alice, acme, api_as):
    response = api_as(alice).patch(f"{URL}acme/", {"time_zone": "Mars/Olympus"}, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["time_zone"])


def test_a_member_may_not_set_the_time_zone(mia, acme, api_as):
    response = api_as(mia).patch(f"{URL}acme/", {"time_zone": "Asia/Tokyo"}, format="json")
    acme.refresh_from_db()
    assert (response.status_code, acme.time_zone) == (403, "")


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "right/UTC", "posix/Europe/Paris"])
def test_a_zone_file_of_the_server_that_is_no_iana_zone_is_a_400_on_the_field(
    alice, acme, api_as, zone
):
    response = api_as(alice).patch(f"{URL}acme/", {"time_zone": zone}, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["time_zone"])
