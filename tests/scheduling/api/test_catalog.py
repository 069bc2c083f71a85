import pytest

pytestmark = pytest.mark.django_db


def test_signed_in_users_see_the_gpu_classes(cluster, otto, api_as):
    names = [c["name"] for c in api_as(otto).get("/api/v1/gpu-classes/").json()]
    assert names == ["A100-80GB", "H100-80GB", "L4"]


def test_the_priority_tiers_come_highest_first(cluster, otto, api_as):
    names = [t["name"] for t in api_as(otto).get("/api/v1/priority-tiers/").json()]
    assert names == ["inference-prod", "training", "batch", "dev"]


def test_the_priority_tiers_say_which_credit_lost_work(cluster, otto, api_as):
    tiers = api_as(otto).get("/api/v1/priority-tiers/").json()
    assert {t["name"]: t["lost_work_credited"] for t in tiers} == {
        "inference-prod": True,
        "training": True,
        "batch": False,
        "dev": False,
    }


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
    rows = api_as(alice).get("/api/v1/organizations/acme/quotas/?page_size=100").json()["results"]
    assert {(r["gpu_class"], r["guarantee"], r["limit"]) for r in rows if r["unit"] == "GPUs"} == {
        ("H100-80GB", 64, 64),
        ("A100-80GB", 8, 8),
        ("L4", 16, 16),
    }


def test_the_quota_list_counts_mig_instances_per_profile_and_shares_in_milli_gpu(
    quotas, alice, api_as
):
    rows = api_as(alice).get("/api/v1/organizations/acme/quotas/?page_size=100").json()["results"]
    assert {
        (r["resource"], r["mig_profile"], r["unit"], r["limit"])
        for r in rows
        if r["gpu_class"] == "A100-80GB"
    } == {
        ("gpus", "", "GPUs", 8),
        ("shared", "", "milli-GPU", 8000),
        ("mig", "mig-1g.10gb", "instances", 56),
        ("mig", "mig-3g.40gb", "instances", 56),
    }


def test_the_quota_list_shows_what_running_work_holds_in_each_unit(
    quotas, alice, api_as, submit, cycle
):
    submit(name="shard", gpu_classes=("A100-80GB",), gpus=0, mig_profile="mig-1g.10gb", mig_count=2)
    submit(name="share", gpu_classes=("L4",), gpus=0, gpu_milli=250, replicas=2)
    cycle()
    rows = api_as(alice).get("/api/v1/organizations/acme/quotas/?page_size=100").json()["results"]
    held = {(r["gpu_class"], r["resource"], r["mig_profile"]): r["in_use"] for r in rows}
    assert (held[("A100-80GB", "mig", "mig-1g.10gb")], held[("L4", "shared", "")]) == (2, 500)
