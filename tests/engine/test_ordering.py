"""Queue order (tier, fair share, submit time) and backfill that never delays the head."""

from datetime import timedelta

from .builders import NOW, admitted, cycle, node, on, reason, request, running


def test_a_higher_tier_is_admitted_before_an_older_lower_tier():
    decisions = cycle(
        nodes=[node("a", gpus=4)],
        pending=[
            request("low", gpus=4, tier=1, submitted_minutes_ago=60),
            request("high", gpus=4, tier=5),
        ],
    )
    assert admitted(decisions) == ["high"]


def test_within_a_tier_the_tenant_with_the_smaller_share_goes_first():
    heavy = running(request("heavy-old", tenant="acme", gpus=4), on("b", 0, 1, 2, 3))
    decisions = cycle(
        nodes=[node("a", gpus=4), node("b", gpus=4, free=[0] * 4)],
        pending=[
            request("acme-job", tenant="acme", gpus=4, submitted_minutes_ago=60),
            request("globex-job", tenant="globex", gpus=4),
        ],
        running=[heavy],
        preemption=False,
    )
    assert admitted(decisions) == ["globex-job"]


def test_with_equal_shares_the_earlier_submission_goes_first():
    decisions = cycle(
        nodes=[node("a", gpus=4)],
        pending=[request("late", gpus=4, submitted_minutes_ago=1), request("early", gpus=4)],
    )
    assert admitted(decisions) == ["early"]


def test_queue_positions_follow_the_queue_order():
    decisions = cycle(
        nodes=[node("a", gpus=1, free=[0])],
        pending=[request("second", gpus=1, submitted_minutes_ago=1), request("first", gpus=1)],
        preemption=False,
    )
    assert [(p.request_id, p.queue_position) for p in decisions.pending] == [
        ("first", 1),
        ("second", 2),
    ]


def blocked_head_setup(small_runtime):
    # Node a is busy for another hour; node b has 4 idle GPUs. The head needs 8 on one node.
    busy = running(
        request("busy", gpus=4, max_runtime=timedelta(hours=1, minutes=30)),
        on("a", 0, 1, 2, 3),
        started_minutes_ago=30,
    )
    return cycle(
        nodes=[node("a", free=[0, 0, 0, 0, 1000, 1000, 1000, 1000]), node("b", gpus=4)],
        pending=[
            request("head", gpus=8, tier=5),
            request("small", gpus=4, tier=1, max_runtime=small_runtime),
        ],
        running=[busy],
        preemption=False,
    )


def test_a_short_job_backfills_when_it_ends_before_the_head_can_start():
    decisions = blocked_head_setup(small_runtime=timedelta(minutes=30))
    assert admitted(decisions) == ["small"]


def test_a_long_job_may_not_take_the_nodes_the_head_is_waiting_for():
    decisions = blocked_head_setup(small_runtime=timedelta(hours=3))
    assert [a.placements[0].node for a in decisions.admissions] == ["b"]


def endless_behind_head(*, head_tier: int):
    """A head of 8 GPUs waits for a busy half-node that frees in an hour; after it in the queue,
    a job of 4 without a max runtime, which may not take the held GPUs."""
    return cycle(
        nodes=[node("a", free=[0, 0, 0, 0, 1000, 1000, 1000, 1000])],
        pending=[
            request("head", gpus=8, tier=head_tier),
            request("endless", gpus=4, submitted_minutes_ago=5),
        ],
        running=[
            running(
                request("busy", gpus=4, max_runtime=timedelta(hours=1)),
                on("a", 0, 1, 2, 3),
            )
        ],
        preemption=False,
    )


def test_a_job_without_a_max_runtime_never_backfills_onto_held_nodes():
    assert reason(endless_behind_head(head_tier=5), "endless").code == "priority"


def test_work_held_back_by_a_head_of_its_own_tier_is_told_the_head_is_ahead_in_the_queue():
    assert reason(endless_behind_head(head_tier=1), "endless").message.startswith(
        "H100-80GB: waiting behind head, ahead in the queue, planned to start at"
    )


def test_work_held_back_by_a_higher_tier_head_is_told_so():
    assert reason(endless_behind_head(head_tier=5), "endless").message.startswith(
        "H100-80GB: waiting behind higher-priority head, planned to start at"
    )


def test_the_blocked_head_gets_its_planned_start_as_estimate():
    decisions = blocked_head_setup(small_runtime=timedelta(minutes=30))
    assert reason(decisions, "head").estimated_start == NOW + timedelta(hours=1)
