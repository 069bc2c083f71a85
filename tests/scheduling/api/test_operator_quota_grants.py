"""The operator API's quota grants: every organization's listed; set (created or changed) and
removed by their key, each with its reason in the audit trail."""

import pytest

from scheduling.models import GpuClass, QuotaGrant
from tenants.models import AuditEvent

from ...factories import ProjectFactory

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"
L4_FOR_GLOBEX = {"organization": "globex", "gpu_class": "L4", "reason": "Pilot"}


def grant_of(organization, gpu_class="L4", **fields) -> QuotaGrant:
    return QuotaGrant.objects.get(
        organization__slug=organization, gpu_class__name=gpu_class, **fields
    )


def test_grants_are_listed_by_organization(cluster, acme, globex, ops):
    _, client = ops
    l4 = GpuClass.objects.get(name="L4")
    QuotaGrant.objects.create(organization=acme, gpu_class=l4, guarantee=1, limit=1)
    QuotaGrant.objects.create(organization=globex, gpu_class=l4, guarantee=2, limit=2)
    rows = client.get(f"{OP}/quota-grants/?organization=globex").json()["results"]
    assert [(row["organization"], row["guarantee"]) for row in rows] == [("globex", 2)]


def test_setting_a_new_quota_creates_it_audited_with_its_reason(cluster, globex, ops):
    user, client = ops
    response = client.post(
        f"{OP}/quota-grants/", {**L4_FOR_GLOBEX, "guarantee": 2, "limit": 4}, format="json"
    )
    assert response.status_code == 201
    assert (grant_of("globex").guarantee, grant_of("globex").limit) == (2, 4)
    event = AuditEvent.objects.get(action="quota.set")
    assert (event.payload["reason"], event.via_token.owner) == ("Pilot", user)


def test_setting_a_quota_again_changes_it(cluster, globex, ops):
    _, client = ops
    client.post(f"{OP}/quota-grants/", {**L4_FOR_GLOBEX, "guarantee": 2, "limit": 4}, format="json")
    response = client.post(
        f"{OP}/quota-grants/", {**L4_FOR_GLOBEX, "guarantee": 3, "limit": 3}, format="json"
    )
    assert (response.status_code, response.json()["limit"]) == (200, 3)
    assert QuotaGrant.objects.filter(organization__slug="globex").count() == 1


def test_a_projects_quota_is_set_within_its_organizations(cluster, globex, ops):
    _, client = ops
    ProjectFactory(organization=globex, slug="web")
    client.post(f"{OP}/quota-grants/", {**L4_FOR_GLOBEX, "guarantee": 2, "limit": 2}, format="json")
    response = client.post(
        f"{OP}/quota-grants/",
        {**L4_FOR_GLOBEX, "project": "web", "guarantee": 4, "limit": 4},
        format="json",
    )
    assert response.status_code == 400
    assert "limit" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"reason": " "}, "reason"),
        ({"organization": "nobody"}, "organization"),
        ({"gpu_class": "V100"}, "gpu_class"),
        ({"project": "none"}, "project"),
        ({"guarantee": -1}, "guarantee"),
        ({"resource": "mig", "mig_profile": "mig-9g.99gb"}, "mig_profile"),
    ],
)
def test_a_quota_that_cannot_be_set_is_a_field_error(cluster, globex, ops, change, field):
    _, client = ops
    body = {**L4_FOR_GLOBEX, "guarantee": 1, "limit": 1, **change}
    response = client.post(f"{OP}/quota-grants/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_removing_a_quota_deletes_it_audited_with_its_reason(cluster, globex, ops):
    _, client = ops
    client.post(f"{OP}/quota-grants/", {**L4_FOR_GLOBEX, "guarantee": 1, "limit": 1}, format="json")
    response = client.post(
        f"{OP}/quota-grants/remove/", {**L4_FOR_GLOBEX, "reason": "Pilot over"}, format="json"
    )
    assert response.status_code == 204
    assert not QuotaGrant.objects.filter(organization__slug="globex").exists()
    assert AuditEvent.objects.get(action="quota.delete").payload == {"reason": "Pilot over"}


def test_removing_a_quota_there_is_not_is_a_404(cluster, globex, ops):
    _, client = ops
    response = client.post(f"{OP}/quota-grants/remove/", L4_FOR_GLOBEX, format="json")
    assert response.status_code == 404


def test_a_limit_below_the_guarantee_is_a_field_error(cluster, globex, ops):
    _, client = ops
    body = {**L4_FOR_GLOBEX, "guarantee": 4, "limit": 2}
    response = client.post(f"{OP}/quota-grants/", body, format="json")
    assert response.status_code == 400
    assert "limit" in response.json()["error"]["fields"]
