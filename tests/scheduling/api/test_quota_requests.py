import pytest

from scheduling.models import QuotaRequest

from ...roles import MANAGING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/quota-requests/"
BODY = {"gpu_class": "H100-80GB", "amount": 8, "reason": "A fine-tuning sprint"}


@pytest.mark.parametrize(("caller", "status"), MANAGING)
def test_owners_and_admins_ask_for_quota_and_the_others_get_what_their_role_allows(
    cluster, actors, api_as, caller, status
):
    assert api_as(actors.get(caller)).post(URL, BODY, format="json").status_code == status


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("viewer", 200), ("foreign", 404), ("outsider", 404)],
)
def test_every_member_sees_the_quota_requests(cluster, actors, api_as, caller, status):
    assert api_as(actors[caller]).get(URL).status_code == status


def test_another_tenants_request_is_a_404(cluster, alice, bruno, api_as):
    made = api_as(alice).post(URL, BODY, format="json").json()
    response = api_as(bruno).get(f"/api/v1/organizations/globex/quota-requests/{made['id']}/")
    assert response.status_code == 404


def test_a_request_answers_in_its_resources_unit(cluster, alice, api_as):
    body = {"gpu_class": "L4", "resource": "shared", "amount": 2500, "reason": "Inference"}
    made = api_as(alice).post(URL, body, format="json").json()
    assert (made["unit"], made["amount"], made["state"]) == ("milli-GPU", 2500, "requested")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"amount": 0}, "amount"),
        ({"amount": "8"}, "amount"),
        ({"reason": ""}, "reason"),
        ({"gpu_class": "Z9"}, "gpu_class"),
        ({"resource": "disks"}, "resource"),
        ({"resource": "mig", "mig_profile": "mig-9g.1gb"}, "mig_profile"),
        ({"until": "2000-01-01T00:00:00Z"}, "until"),
        ({"project": "web"}, "project"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_saves_nothing(
    cluster, alice, api_as, fields, field
):
    response = api_as(alice).post(URL, {**BODY, **fields}, format="json")
    assert (response.status_code, field in response.json()["error"]["fields"]) == (400, True)
    assert QuotaRequest.objects.count() == 0
