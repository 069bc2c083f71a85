"""Per-region caps on a quota: a tenant's quota stays global, and may also cap what it holds in
one region. A region at its cap takes none of the tenant's work there; other regions still do;
a request pinned to a capped region larger than the cap is invalid."""

from scheduling.engine import ReplicaPlacement, validate_request

from .builders import admitted, cycle, node, quota, reason, request, running


def in_region(name, region, **fields):
    return node(name, cluster=region, region=region, **fields)


NODES = [in_region("eu-1", "eu-west"), in_region("us-1", "us-east"), in_region("us-2", "us-east")]
CAPPED = quota(gpus=64, region_limits=(("us-east", 8),))


def test_work_goes_to_another_region_once_one_is_at_its_cap():
    holding = running(
        request("held", gpus=8), ReplicaPlacement(node="us-1", gpu_indices=tuple(range(8)))
    )
    decisions = cycle(
        nodes=[in_region("eu-1", "eu-west"), in_region("us-1", "us-east", free=[0] * 8), NODES[2]],
        running=[holding],
        quotas=[CAPPED],
        pending=[request("train", gpus=8)],
    )
    assert [p.node for a in decisions.admissions for p in a.placements] == ["eu-1"]


def test_admissions_in_one_cycle_stop_at_the_regions_cap():
    nodes = [in_region("us-1", "us-east"), in_region("us-2", "us-east")]
    decisions = cycle(
        nodes=nodes, quotas=[CAPPED], pending=[request("a", gpus=8), request("b", gpus=8)]
    )
    assert admitted(decisions) == ["a"]


def test_work_waiting_on_a_regions_cap_says_so():
    nodes = [in_region("us-1", "us-east"), in_region("us-2", "us-east")]
    decisions = cycle(
        nodes=nodes, quotas=[CAPPED], pending=[request("a", gpus=8), request("b", gpus=8)]
    )
    assert (reason(decisions, "b").code, reason(decisions, "b").message) == (
        "quota",
        "H100-80GB in us-east: 8 of 8 in use by acme, 8 more requested",
    )


def test_a_pinned_request_over_its_regions_cap_is_invalid():
    errors = validate_request(request=request("big", gpus=16, region="us-east"), quotas=[CAPPED])
    assert errors == {
        "gpus": ["16 GPUs asked, over the quota limit of acme in us-east (H100-80GB: 8)."]
    }


def test_an_unpinned_request_over_one_regions_cap_is_valid():
    assert validate_request(request=request("big", gpus=16), quotas=[CAPPED]) == {}


def test_two_requests_pinned_to_two_regions_each_run_in_their_own_in_one_cycle():
    nodes = [in_region("eu-1", "eu-west"), in_region("us-1", "us-east")]
    decisions = cycle(
        nodes=nodes,
        pending=[request("a", gpus=8, region="eu-west"), request("b", gpus=8, region="us-east")],
    )
    placed = {a.request_id: a.placements[0].node for a in decisions.admissions}
    assert placed == {"a": "eu-1", "b": "us-1"}
