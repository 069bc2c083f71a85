"""A quota's per-region cap at admission (the cycle) and at submission: acme may use 16 L4
overall but only 2 in us-east, where the L4s are."""

import pytest
from django.core.exceptions import ValidationError

from scheduling.models import Placement, QuotaGrant, Workload

pytestmark = pytest.mark.django_db


def l4_capped_in_us_east(amount: int) -> None:
    QuotaGrant.objects.filter(
        organization__slug="acme", gpu_class__name="L4", resource="gpus"
    ).update(region_limits={"us-east": amount})


def l4_in_use() -> int:
    placements = Placement.objects.filter(ended_at__isnull=True, node__pool__gpu_class__name="L4")
    return sum(len(p.gpu_indices) for p in placements)


def test_the_cycle_admits_up_to_the_regions_cap_and_no_more(submit, cycle):
    l4_capped_in_us_east(2)
    for n in range(3):
        submit(name=f"serve-{n}", gpu_classes=("L4",), gpus=1)
    cycle()
    assert l4_in_use() == 2


def test_work_over_the_regions_cap_waits_saying_so(submit, cycle):
    l4_capped_in_us_east(1)
    submit(name="serve-0", gpu_classes=("L4",), gpus=1)
    waiting = submit(name="serve-1", gpu_classes=("L4",), gpus=1)
    cycle()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.pending_code) == (Workload.State.PENDING, "quota")
    assert waiting.pending_message == "L4 in us-east: 1 of 1 in use by acme, 1 more requested"


def test_a_submission_pinned_to_a_region_over_its_cap_is_refused_on_the_gpus(submit):
    l4_capped_in_us_east(2)
    with pytest.raises(ValidationError) as refused:
        submit(name="big", gpu_classes=("L4",), gpus=4, region="us-east")
    assert "over the quota limit of acme in us-east" in refused.value.message_dict["gpus"][0]


def test_the_quota_page_shows_a_regions_cap_under_the_limit(signed_in, mia):
    l4_capped_in_us_east(2)
    page = signed_in(mia).get("/orgs/acme/projects/ai-dev/workloads/").content.decode()
    assert "at most 2 in us-east" in page
