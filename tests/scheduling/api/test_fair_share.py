"""Fairness over time in the API: an organization's own standing for its members (a foreign
tenant's is a 404), every standing and the weight for operators, the weight's edit audited."""

import pytest

from scheduling import services
from tenants.models import AuditEvent

from ...factories import ProjectFactory, UserFactory
from ...operators import operator_token_client
from ...roles import READING
from ..conftest import h100_guarantee, simulated_runtime

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator/fair-share"


def standing_url(slug: str = "acme") -> str:
    return f"/api/v1/organizations/{slug}/fair-share/"


@pytest.fixture
def operator():
    return operator_token_client(UserFactory(email="oli@ops.example", is_staff=True))


@pytest.fixture
def acme_ran_an_hour(submit, cycle, advance):
    submit(name="hour", gpus=8, **simulated_runtime(3600))
    cycle()
    advance(3660)
    services.scheduling_cycle_run()


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_its_standing_and_nobody_else(actors, acme, api_as, caller, status):
    client = api_as(None if caller == "anonymous" else actors[caller])
    assert client.get(standing_url()).status_code == status


def test_the_standing_tells_the_decayed_usage_and_why(acme_ran_an_hour, api_as, mia):
    body = api_as(mia).get(standing_url()).json()
    assert body["decayed_gpu_hours"] == pytest.approx(8 * 3660 / 3600, rel=0.01)
    assert body["sentence"].startswith("acme used 8 GPU-hours lately")


def test_a_tenant_that_used_more_queues_behind_one_that_used_nothing(
    acme_ran_an_hour, globex, submit, bruno, api_as, mia
):
    h100_guarantee(globex, 8)
    web = ProjectFactory(organization=globex, slug="web")
    submit(name="waits", user=bruno, project=web, gpus=8)
    body = api_as(mia).get(standing_url()).json()
    assert (body["behind"], "queues behind globex's" in body["sentence"]) == (["globex"], True)


def test_operators_list_every_standing(acme_ran_an_hour, operator):
    body = operator.get(f"{OP}/").json()
    assert [s["organization"] for s in body] == ["acme"]


def test_an_operator_sets_the_weight_and_it_is_audited(acme, operator):
    response = operator.patch(f"{OP}/acme/", {"weight": "2.50"}, format="json")
    acme.refresh_from_db()
    event = AuditEvent.objects.get(action="organization.update", organization=acme)
    assert (response.status_code, str(acme.fair_share_weight)) == (200, "2.50")
    assert event.payload == {"fair_share_weight": {"from": "1.00", "to": "2.50"}}


def test_the_weight_divides_the_standing(acme_ran_an_hour, acme, operator):
    before = operator.get(f"{OP}/").json()[0]
    after = operator.patch(f"{OP}/acme/", {"weight": "2"}, format="json").json()
    assert after["times_its_share"] == pytest.approx(before["times_its_share"])
    assert after["weight"] == 2.0


@pytest.mark.parametrize("weight", ["0", "-1", "1001", "much", None])
def test_a_bad_weight_is_a_400_naming_the_field(acme, operator, weight):
    response = operator.patch(f"{OP}/acme/", {"weight": weight}, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, ["weight"])


def test_an_unknown_organization_is_a_404(operator):
    assert operator.patch(f"{OP}/nobody/", {"weight": "2"}, format="json").status_code == 404


def test_a_tenant_token_cannot_set_a_weight(acme, alice, token_for):
    _, client = token_for(alice, acme, "write")
    assert client.patch(f"{OP}/acme/", {"weight": "9"}, format="json").status_code == 404
