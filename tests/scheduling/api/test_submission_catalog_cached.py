"""With the catalog and quotas cached (PORTAL_SUBMISSION_CATALOG_SECONDS), nothing about the
caller is: a revoked token or a removed member is refused at once, and one organization's
cached quotas never serve another's submissions."""

import pytest
from django.core.cache import cache

from scheduling.models import PriorityTier, Workload
from tenants import services as tenancy
from tenants.models import Membership
from tenants.permissions import Caller

from ...factories import ProjectFactory
from .test_workloads import BODY, URL

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def catalog_cached(settings):
    settings.PORTAL_SUBMISSION_CATALOG_SECONDS = 5
    cache.clear()
    yield
    cache.clear()


def _body(name: str, **fields) -> dict:
    return {**BODY, "name": name, **fields}


def test_a_revoked_token_is_refused_on_the_next_submission(ready, acme, token_for):
    token, client = token_for(ready["member"], acme)
    assert client.post(URL, _body("first"), format="json").status_code == 201
    tenancy.token_revoke(caller=Caller(user=ready["member"]), token=token)
    assert client.post(URL, _body("second"), format="json").status_code == 401
    assert list(Workload.objects.values_list("name", flat=True)) == ["first"]


def test_a_removed_member_is_refused_on_the_next_submission(ready, acme, api_as):
    client = api_as(ready["member"])
    assert client.post(URL, _body("first"), format="json").status_code == 201
    membership = Membership.objects.get(organization=acme, user=ready["member"])
    tenancy.member_remove(caller=Caller(user=ready["owner"]), membership=membership)
    assert client.post(URL, _body("second"), format="json").status_code == 404


def test_a_demoted_member_is_refused_on_the_next_submission(ready, acme, api_as):
    client = api_as(ready["member"])
    assert client.post(URL, _body("first"), format="json").status_code == 201
    Membership.objects.filter(organization=acme, user=ready["member"]).update(role="viewer")
    assert client.post(URL, _body("second"), format="json").status_code == 403


def test_another_organizations_cached_quotas_never_admit_a_submission(
    ready, globex, api_as, submit
):
    submit(name="acme-quota-cached", gpus=1)  # acme may use 64 H100
    ProjectFactory(organization=globex, slug="ai-dev")
    globex_url = URL.replace("/acme/", "/globex/")
    response = api_as(ready["foreign"]).post(globex_url, _body("no-quota"), format="json")
    assert response.status_code == 400
    assert not Workload.objects.filter(project__organization=globex).exists()


def test_a_tier_created_after_the_catalog_was_cached_is_accepted(ready, api_as):
    client = api_as(ready["member"])
    assert client.post(URL, _body("first"), format="json").status_code == 201
    PriorityTier.objects.create(name="urgent", value=5000)
    response = client.post(URL, _body("second", tier="urgent"), format="json")
    assert (response.status_code, response.json()["tier"]) == (201, "urgent")
