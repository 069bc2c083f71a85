"""Per-region caps of a quota grant through the operator API: set with the grant, kept when
omitted, lifted with {}; an unknown region, a cap over the limit or a project's grant is a
field-level 400 on `region_limits`. Tenants read them on their quota API."""

import pytest

from scheduling.models import QuotaGrant

from .test_operator_quota_grants import L4_FOR_GLOBEX, OP, grant_of

pytestmark = pytest.mark.django_db

CAPPED = {**L4_FOR_GLOBEX, "guarantee": 8, "limit": 16, "region_limits": {"us-east": 4}}


def set_grant(client, body):
    return client.post(f"{OP}/quota-grants/", body, format="json")


def test_a_grant_is_set_with_its_region_limits(cluster, globex, ops):
    response = set_grant(ops[1], CAPPED)
    assert response.status_code == 201, response.content
    assert response.json()["region_limits"] == {"us-east": 4}
    assert grant_of("globex").region_limits == {"us-east": 4}


def test_region_limits_omitted_are_kept(cluster, globex, ops):
    set_grant(ops[1], CAPPED)
    set_grant(ops[1], {**L4_FOR_GLOBEX, "guarantee": 8, "limit": 12})
    assert grant_of("globex").region_limits == {"us-east": 4}


def test_empty_region_limits_lift_every_cap(cluster, globex, ops):
    set_grant(ops[1], CAPPED)
    set_grant(ops[1], {**CAPPED, "region_limits": {}})
    assert grant_of("globex").region_limits == {}


@pytest.mark.parametrize(
    "region_limits",
    [{"mars": 4}, {"us-east": 17}, {"us-east": -1}, {"us-east": "many"}, ["us-east"]],
    ids=["unknown region", "over the limit", "negative", "not a number", "not an object"],
)
def test_bad_region_limits_are_a_400_naming_the_field(cluster, globex, ops, region_limits):
    response = set_grant(ops[1], {**CAPPED, "region_limits": region_limits})
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert all(field.startswith("region_limits") for field in fields), fields
    assert not QuotaGrant.objects.exists()


def test_a_projects_grant_has_no_region_limits(cluster, globex, ops):
    from ...factories import ProjectFactory

    ProjectFactory(organization=globex, slug="web")
    set_grant(ops[1], {**L4_FOR_GLOBEX, "guarantee": 8, "limit": 16})
    response = set_grant(ops[1], {**CAPPED, "project": "web"})
    assert response.status_code == 400, response.content
    assert "region_limits" in response.json()["error"]["fields"]


def test_a_tenant_reads_its_region_limits_on_its_quota_api(cluster, globex, ops, bruno, api_as):
    set_grant(ops[1], CAPPED)
    quotas = api_as(bruno).get("/api/v1/organizations/globex/quotas/").json()["results"]
    assert [q["region_limits"] for q in quotas] == [{"us-east": 4}]
