import pytest

pytestmark = pytest.mark.django_db


def test_signed_in_users_see_the_gpu_classes(cluster, otto, api_as):
    names = [c["name"] for c in api_as(otto).get("/api/v1/gpu-classes/").json()]
    assert names == ["A100-80GB", "H100-80GB", "L4"]


def test_the_priority_tiers_come_highest_first(cluster, otto, api_as):
    names = [t["name"] for t in api_as(otto).get("/api/v1/priority-tiers/").json()]
    assert names == ["inference-prod", "training", "batch", "dev"]


def test_anonymous_callers_get_no_catalog(cluster, api):
    assert api.get("/api/v1/gpu-classes/").status_code == 401


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("viewer", 200), ("foreign", 404), ("outsider", 404)],
)
def test_quotas_are_visible_to_members_only(quotas, actors, api_as, caller, status):
    response = api_as(actors[caller]).get("/api/v1/organizations/acme/quotas/")
    assert response.status_code == status


def test_the_quota_list_shows_guarantee_and_limit(quotas, alice, api_as):
    rows = api_as(alice).get("/api/v1/organizations/acme/quotas/").json()["results"]
    assert {(r["gpu_class"], r["guarantee"], r["limit"]) for r in rows} == {
        ("H100-80GB", 64, 64),
        ("A100-80GB", 8, 8),
        ("L4", 16, 16),
    }
