"""Quotas: guarantees, limits, cohort borrowing and reclaim, rejection at submission."""

from scheduling.engine import QuotaLedger, ReplicaPlacement, quota_capacity, validate_request

from .builders import admitted, cycle, node, on, quota, reason, request, running


def test_a_request_within_the_guarantee_is_admitted():
    decisions = cycle(nodes=[node("a")], pending=[request("job", gpus=4)], quotas=[quota(gpus=4)])
    assert admitted(decisions) == ["job"]


def test_a_request_over_the_limit_waits_with_the_quota_numbers():
    busy = running(request("old", gpus=8), on("a", *range(8)))
    decisions = cycle(
        nodes=[node("a", free=[0] * 8), node("b")],
        pending=[request("job", gpus=1)],
        running=[busy],
        quotas=[quota(gpus=8, limit=8, cohort="lab")],
    )
    assert reason(decisions, "job").message.startswith("H100-80GB: 8 of 8 in use by acme")


def test_a_tenant_without_quota_for_a_class_is_told_its_limit_is_zero():
    decisions = cycle(nodes=[node("a")], pending=[request("job", gpus=1)], quotas=[])
    assert "(H100-80GB: 0)" in reason(decisions, "job").message


def test_unused_cohort_guarantees_may_be_borrowed_up_to_the_limit():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=6)],
        quotas=[
            quota("acme", gpus=2, limit=6, cohort="lab"),
            quota("globex", gpus=4, cohort="lab"),
        ],
    )
    assert decisions.admissions[0].borrowed


def test_borrowed_work_is_admitted_as_preemptible():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=6, preemptible=False)],
        quotas=[
            quota("acme", gpus=2, limit=6, cohort="lab"),
            quota("globex", gpus=4, cohort="lab"),
        ],
    )
    assert decisions.admissions[0].preemptible


def test_without_a_cohort_and_with_every_gpu_guaranteed_the_guarantee_is_the_ceiling():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=4)],
        quotas=[quota(gpus=2, limit=6), quota("globex", gpus=6)],
    )
    assert reason(decisions, "job").code == "quota"


def test_gpus_no_guarantee_covers_are_lent_to_a_tenant_without_a_cohort_up_to_its_limit():
    decisions = cycle(
        nodes=[node("a")], pending=[request("job", gpus=4)], quotas=[quota(gpus=0, limit=4)]
    )
    assert decisions.admissions[0].borrowed


def test_the_shared_pool_is_lent_only_up_to_the_gpus_no_guarantee_covers():
    theirs = running(request("theirs", tenant="globex", gpus=2), on("a", 0, 1))
    decisions = cycle(
        nodes=[node("a", free=[0, 0, *[1000] * 6])],
        pending=[request("job", gpus=4)],
        running=[theirs],
        quotas=[quota(gpus=0, limit=8), quota("globex", gpus=0, limit=8), quota("initech", gpus=4)],
    )
    assert reason(decisions, "job").message == (
        "H100-80GB: 0 of 0 guaranteed in use by acme; nothing left to borrow (the 4 no"
        " guarantee covers are lent out)"
    )


def test_borrowing_stops_when_the_cohort_guarantees_are_in_use():
    theirs = running(request("theirs", tenant="globex", gpus=4), on("a", 0, 1, 2, 3))
    decisions = cycle(
        nodes=[node("a", free=[0, 0, 0, 0, 1000, 1000])],
        pending=[request("job", gpus=4)],
        running=[theirs],
        quotas=[
            quota("acme", gpus=2, limit=6, cohort="lab"),
            quota("globex", gpus=4, cohort="lab"),
        ],
    )
    assert "nothing left to borrow" in reason(decisions, "job").message


def test_a_project_limit_caps_the_project_inside_its_tenant():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=4)],
        quotas=[quota(gpus=8), quota(gpus=2, project="ai-dev")],
    )
    assert "acme/ai-dev" in reason(decisions, "job").message


def test_an_elastic_job_starts_with_the_replicas_its_quota_allows():
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=1, replicas=4, min_replicas=2)],
        quotas=[quota(gpus=3)],
    )
    assert len(decisions.admissions[0].placements) == 3


def test_a_tenant_under_its_guarantee_reclaims_borrowed_capacity():
    borrower = running(
        request("borrowed", tenant="globex", gpus=8), on("a", *range(8)), borrowed=True
    )
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("mine", gpus=4)],
        running=[borrower],
        quotas=[
            quota("acme", gpus=4, cohort="lab"),
            quota("globex", gpus=4, limit=8, cohort="lab"),
        ],
    )
    assert [(p.victim_id, p.reason) for p in decisions.preemptions] == [("borrowed", "reclaim")]


def test_validation_rejects_a_request_larger_than_its_limit():
    errors = validate_request(request=request("big", gpus=8, replicas=2), quotas=[quota(gpus=8)])
    assert "asked, over the quota limit" in errors["gpus"][0]


def test_validation_accepts_a_request_within_its_limit():
    assert validate_request(request=request("ok", gpus=8), quotas=[quota(gpus=8)]) == {}


def test_validation_rejects_two_gpu_forms_at_once():
    errors = validate_request(request=request("odd", gpus=1, gpu_milli=500), quotas=[quota()])
    assert "gpus" in errors


def test_validation_rejects_a_share_of_a_whole_gpu_or_more():
    errors = validate_request(request=request("odd", gpu_milli=1000), quotas=[quota()])
    assert "gpu_milli" in errors


def test_validation_rejects_min_replicas_above_replicas():
    errors = validate_request(
        request=request("odd", gpus=1, replicas=2, min_replicas=3), quotas=[quota()]
    )
    assert "min_replicas" in errors


def test_validation_rejects_a_replica_bigger_than_any_node():
    errors = validate_request(
        request=request("wide", gpus=16), quotas=[quota(gpus=16)], nodes=[node("a")]
    )
    assert "largest node has 8" in errors["gpus"][0]


def test_validation_rejects_a_replica_with_more_memory_than_any_node():
    errors = validate_request(
        request=request("huge", gpus=1, memory_mib=8 * 1024 * 1024),
        quotas=[quota()],
        nodes=[node("a", memory=2_000_000)],
    )
    assert errors == {
        "memory_mib": ["8388608 MiB of memory per replica, but the largest node has 2000000 MiB."]
    }


def test_validation_rejects_cpu_only_work_with_more_memory_than_any_node():
    errors = validate_request(
        request=request("huge", classes=(), memory_mib=4_000_000),
        quotas=[],
        nodes=[node("a", memory=2_000_000), node("b", memory=1_000_000)],
    )
    assert list(errors) == ["memory_mib"]


def test_validation_rejects_a_replica_with_more_cpu_than_any_node_of_its_classes():
    errors = validate_request(
        request=request("wide", gpus=1, cpu_milli=300_000),
        quotas=[quota()],
        nodes=[node("a", cpu=224_000), node("l4", gpu_class="L4", cpu=512_000)],
    )
    assert "largest node has 224000" in errors["cpu_milli"][0]


def test_validation_accepts_a_replica_that_fits_the_largest_node():
    fits = request("fits", gpus=8, cpu_milli=224_000, memory_mib=2_000_000)
    assert validate_request(request=fits, quotas=[quota()], nodes=[node("a")]) == {}


def test_an_invalid_request_stays_pending_with_code_invalid():
    decisions = cycle(nodes=[node("a")], pending=[request("big", gpus=9)], quotas=[quota(gpus=8)])
    assert reason(decisions, "big").code == "invalid"


def _lab_quotas() -> list:
    return [quota("acme", gpus=4, cohort="lab"), quota("globex", gpus=4, limit=8, cohort="lab")]


def test_non_preemptible_work_on_borrowed_capacity_is_reclaimed_by_the_lender():
    service = request("serve", tenant="globex", gpus=4, preemptible=False)
    within = running(service, on("a", 0, 1, 2, 3))
    extra = request("serve-extra", tenant="globex", gpus=4, preemptible=False)
    borrower = running(extra, on("a", 4, 5, 6, 7), borrowed=True)
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("mine", gpus=4)],
        running=[within, borrower],
        quotas=_lab_quotas(),
    )
    assert [(p.victim_id, p.reason) for p in decisions.preemptions] == [("serve-extra", "reclaim")]


def test_non_preemptible_work_within_its_guarantee_is_never_reclaimed():
    service = request("serve", tenant="globex", gpus=4, preemptible=False)
    decisions = cycle(
        nodes=[node("a", gpus=4, free=[0] * 4)],
        pending=[request("mine", gpus=4)],
        running=[running(service, on("a", 0, 1, 2, 3))],
        quotas=_lab_quotas(),
    )
    assert decisions.preemptions == ()


def test_work_that_borrowed_once_is_not_reclaimed_when_its_tenant_is_back_within_its_guarantee():
    # It borrowed when admitted; the tenant's other work has ended since.
    extra = request("serve-extra", tenant="globex", gpus=4, preemptible=False)
    decisions = cycle(
        nodes=[node("a", gpus=4, free=[0] * 4)],
        pending=[request("mine", gpus=4)],
        running=[running(extra, on("a", 0, 1, 2, 3), borrowed=True)],
        quotas=_lab_quotas(),
    )
    assert decisions.preemptions == ()


def test_borrowed_work_admitted_moments_ago_is_not_reclaimed_yet():
    borrower = running(
        request("borrowed", tenant="globex", gpus=8),
        on("a", *range(8)),
        borrowed=True,
        started_minutes_ago=2,
    )
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("mine", gpus=4)],
        running=[borrower],
        quotas=_lab_quotas(),
    )
    assert decisions.preemptions == ()


MIG = "mig-1g.10gb"


def test_mig_instances_count_against_their_profile_quota_not_the_class_gpus():
    decisions = cycle(
        nodes=[node("a", gpus=0, mig_free={MIG: 7})],
        pending=[request("job", mig_profile=MIG, mig_count=4)],
        quotas=[quota(gpus=0), quota(gpus=4, mig_profile=MIG)],
    )
    assert admitted(decisions) == ["job"]


def test_mig_instances_beyond_the_profile_limit_wait_with_the_instance_numbers():
    held = running(
        request("old", mig_profile=MIG, mig_count=3),
        ReplicaPlacement(node="a", mig_profile=MIG, mig_count=3),
    )
    decisions = cycle(
        nodes=[node("a", gpus=0, mig_free={MIG: 4})],
        pending=[request("job", mig_profile=MIG, mig_count=2)],
        running=[held],
        quotas=[quota(gpus=8), quota(gpus=4, mig_profile=MIG)],
    )
    assert reason(decisions, "job").message == (
        f"H100-80GB {MIG}: 3 instances of 4 in use by acme, 2 instances more requested"
    )


def test_a_gpu_share_counts_in_milli_gpu_against_the_shares_quota():
    decisions = cycle(
        nodes=[node("a")],
        pending=[
            request("small", gpu_milli=500, submitted_minutes_ago=20),
            request("big", gpu_milli=600),
        ],
        quotas=[quota(gpus=8), quota(gpus=1000, shared=True)],
    )
    assert reason(decisions, "big").message == (
        "H100-80GB shares: 500 milli-GPU of 1000 in use by acme, 600 milli-GPU more requested"
    )


def test_a_mig_request_without_a_profile_quota_is_rejected_at_submission():
    errors = validate_request(
        request=request("job", mig_profile=MIG, mig_count=1), quotas=[quota(gpus=8)]
    )
    assert errors == {
        "mig_count": [f"1 instance asked, over the quota limit of acme (H100-80GB {MIG}: 0)."]
    }


def _ledger(*, quotas, running_work=(), nodes=None):
    nodes = nodes or [node("a"), node("b")]
    return QuotaLedger(
        quotas=quotas, running=running_work, capacity=quota_capacity(nodes, running_work)
    )


def test_headroom_is_the_unused_guarantee_then_the_gpus_no_guarantee_covers():
    ledger = _ledger(quotas=[quota(gpus=4, limit=16), quota("globex", gpus=8)])
    assert ledger.headroom(tenant="acme", resource="H100-80GB") == 4 + 4


def test_headroom_shrinks_by_what_others_borrow():
    theirs = running(request("theirs", tenant="initech", gpus=3), on("b", 0, 1, 2))
    ledger = _ledger(
        quotas=[
            quota(gpus=4, limit=16),
            quota("globex", gpus=8),
            quota("initech", gpus=0, limit=8),
        ],
        running_work=[theirs],
        nodes=[node("a"), node("b", free=[0, 0, 0, *[1000] * 5])],
    )
    assert ledger.headroom(tenant="acme", resource="H100-80GB") == 4 + 1


def test_headroom_stops_at_the_limit():
    ledger = _ledger(quotas=[quota(gpus=4, limit=6), quota("globex", gpus=8)])
    assert ledger.headroom(tenant="acme", resource="H100-80GB") == 6


def test_headroom_counts_the_cohorts_unused_guarantees():
    ledger = _ledger(
        quotas=[quota(gpus=2, limit=16, cohort="lab"), quota("globex", gpus=14, cohort="lab")]
    )
    assert ledger.headroom(tenant="acme", resource="H100-80GB") == 16


def test_without_a_quota_there_is_no_headroom():
    assert (
        _ledger(quotas=[quota("globex", gpus=8)]).headroom(tenant="acme", resource="H100-80GB") == 0
    )


def test_a_cycle_leaves_each_tenants_borrowing_with_what_it_admitted():
    # One 8-GPU node: acme guaranteed 2 (limit 6), globex 4 in the same cohort; acme's 5-GPU
    # job borrows 3 of globex's unused guarantee, and 1 more could still be borrowed.
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("job", gpus=5)],
        quotas=[
            quota("acme", gpus=2, limit=6, cohort="lab"),
            quota("globex", gpus=4, cohort="lab"),
        ],
    )
    standing = {(s.tenant, s.borrowed, s.borrowable) for s in decisions.standings}
    assert standing == {("acme", 3, 1), ("globex", 0, 0)}
