import pytest

from tenants.models import Membership

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/members/"


def test_the_list_shows_each_member_with_role_and_email(alice, mia, api_as):
    results = api_as(mia).get(URL).json()["results"]
    assert {(m["user"]["email"], m["role"]) for m in results} == {
        ("alice@acme.example", "owner"),
        ("mia@acme.example", "member"),
    }


def test_the_list_filters_by_role(actors, api_as):
    results = api_as(actors["viewer"]).get(URL, {"role": "admin"}).json()["results"]
    assert [m["user"]["email"] for m in results] == ["adam@acme.example"]


def test_an_unknown_role_is_a_400_naming_the_role(alice, mia, api_as):
    membership = Membership.objects.get(user=mia)
    response = api_as(alice).patch(f"{URL}{membership.pk}/", {"role": "superuser"}, format="json")
    assert response.status_code == 400
    assert "role" in response.json()["error"]["fields"]
    membership.refresh_from_db()
    assert membership.role == "member"


def test_changing_a_role_without_a_role_is_a_400_naming_role(alice, mia, api_as):
    membership = Membership.objects.get(user=mia)
    response = api_as(alice).patch(f"{URL}{membership.pk}/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"role": ["This field is required."]}


def test_a_member_id_of_another_organization_is_a_404(alice, bruno, api_as):
    foreign = Membership.objects.get(user=bruno)
    assert api_as(alice).get(f"{URL}{foreign.pk}/").status_code == 404


def test_demoting_the_last_owner_is_a_409(alice, api_as):
    own = Membership.objects.get(user=alice)
    response = api_as(alice).patch(f"{URL}{own.pk}/", {"role": "admin"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "last_owner"


def test_a_member_may_leave(mia, api_as):
    own = Membership.objects.get(user=mia)
    assert api_as(mia).delete(f"{URL}{own.pk}/").status_code == 204
    assert not Membership.objects.filter(user=mia).exists()


def test_a_non_uuid_member_id_is_a_404(alice, api_as):
    assert api_as(alice).get(f"{URL}12/").status_code == 404


def test_my_memberships_lists_every_organization_of_the_caller(alice, acme, globex, api_as):
    from ...factories import MembershipFactory

    MembershipFactory(organization=globex, user=alice, role="viewer")
    body = api_as(alice).get("/api/v1/me/memberships/").json()
    assert [(m["organization"], m["role"]) for m in body] == [
        ("acme", "owner"),
        ("globex", "viewer"),
    ]


def test_my_memberships_through_a_token_shows_only_its_organization(alice, acme, globex, token_for):
    from ...factories import MembershipFactory

    MembershipFactory(organization=globex, user=alice, role="viewer")
    _, client = token_for(alice, acme, scope="read")
    body = client.get("/api/v1/me/memberships/").json()
    assert [m["organization"] for m in body] == ["acme"]
