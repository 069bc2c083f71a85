"""Every pending workload gets a code, a sentence with the numbers, a position, an estimate."""

from datetime import timedelta

from .builders import NOW, cycle, node, on, quota, reason, request, running


def test_fragmentation_is_named_when_free_gpus_are_spread_over_nodes():
    decisions = cycle(
        nodes=[node("a", free=[1000, 1000, 1000, 0]), node("b", free=[1000, 1000, 1000, 0])],
        pending=[request("job", gpus=4)],
        preemption=False,
    )
    assert reason(decisions, "job").message == (
        "6 H100-80GB free in total, but no node has 4 free."
    )


def test_capacity_is_named_when_too_few_gpus_are_free_anywhere():
    decisions = cycle(
        nodes=[node("a", free=[1000, 0, 0, 0])], pending=[request("job", gpus=2)], preemption=False
    )
    assert reason(decisions, "job").message == (
        "H100-80GB: 1 H100-80GB free on eligible nodes, 2 H100-80GB needed per replica."
    )


def test_cpu_shortage_next_to_free_gpus_is_named():
    decisions = cycle(nodes=[node("a", cpu=1000)], pending=[request("job", gpus=1, cpu_milli=8000)])
    assert "8 CPU" in reason(decisions, "job").message


def test_a_share_that_fits_no_single_gpu_is_fragmentation_in_milli_gpu():
    decisions = cycle(nodes=[node("a", free=[300, 200])], pending=[request("job", gpu_milli=400)])
    assert reason(decisions, "job").message == (
        "500 milli-GPU of H100-80GB free in total, but no GPU has 400 milli-GPU free."
    )


def test_capacity_waits_get_an_estimate_from_running_max_runtimes():
    busy = running(
        request("busy", gpus=8, max_runtime=timedelta(hours=2)),
        on("a", *range(8)),
        started_minutes_ago=60,
    )
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("job", gpus=8)],
        running=[busy],
        preemption=False,
    )
    assert reason(decisions, "job").estimated_start == NOW + timedelta(hours=1)


def test_without_max_runtimes_there_is_no_estimate():
    busy = running(request("busy", gpus=8), on("a", *range(8)))
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("job", gpus=8)],
        running=[busy],
        preemption=False,
    )
    assert reason(decisions, "job").estimated_start is None


def test_a_later_request_in_the_queue_gets_a_later_estimate():
    releases = [
        running(
            request(f"busy-{i}", gpus=4, max_runtime=timedelta(hours=i + 1)),
            on(f"n{i}", 0, 1, 2, 3),
            started_minutes_ago=0,
        )
        for i in range(2)
    ]
    decisions = cycle(
        nodes=[node("n0", free=[0] * 4), node("n1", free=[0] * 4)],
        pending=[request("first", gpus=4), request("second", gpus=4, submitted_minutes_ago=1)],
        running=releases,
        preemption=False,
    )
    first, second = (reason(decisions, r).estimated_start for r in ("first", "second"))
    assert first < second


def test_a_replica_larger_than_every_node_left_waits_as_never_fits_with_the_numbers():
    # Submitted when 16-GPU nodes existed; the cluster now has 8-GPU nodes only.
    decisions = cycle(
        nodes=[node("a")],
        pending=[request("huge", gpus=16)],
        node_shapes=[node("shape")],
        quotas=[quota(gpus=64)],
    )
    waiting = reason(decisions, "huge")
    assert (waiting.code, waiting.message) == (
        "never_fits",
        "H100-80GB: no schedulable node can hold one replica, even empty: 16 GPUs per replica,"
        " but the largest node has 8. It waits until such a node joins the cluster.",
    )


def test_a_replica_that_fits_an_empty_node_waits_for_capacity_not_as_never_fits():
    decisions = cycle(
        nodes=[node("a", free=[0] * 8)],
        pending=[request("job", gpus=8)],
        node_shapes=[node("shape")],
    )
    assert reason(decisions, "job").code == "capacity"
