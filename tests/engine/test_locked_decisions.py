"""Speed work must not change a decision: seeded cycles decide exactly as locked here.

The fingerprints were taken with the engine of commit f977d0e, before the work that took
the scale benchmark's cycle under a second, and cover every admission and placement,
preemption, and pending reason with its sentence, queue position and estimate. A change
that means to alter decisions (a policy, a rule) updates them and says so in its commit; a
speed-up never does. Updated twice since: a tenant at its quota limit may evict its own
lower-tier work (mixed seed 2 and the benchmark cycles changed; nothing else); and pending
sentences name the binding constraint (a gang whose GPUs are not there at all is `capacity`,
not `gang`; a backfill candidate waits behind a head of its own tier "ahead in the queue", not
"higher-priority"; "1 node"; CPU-only work says "CPU:"), checked with every admission,
placement, preemption, queue position and estimate unchanged on all ten locked cycles.
"""

from dataclasses import replace
from datetime import timedelta

import pytest

from bench.scheduler_scale import GPU_CLASS, POOLS, build
from scheduling.engine import Policy, Reservation, schedule

from .builders import NOW
from .scenarios import decisions_digest, mixed_cluster

MIXED_LOCKED = [
    (0, "fgd_small_first", "b5561c6cae5b6d4b"),
    (1, "bestfit", "2fdea1b01715d5df"),
    (2, "random", "0adf2c519a981efe"),
    (3, "packing", "337e888f314573ee"),
    (4, "clustering", "5e04f625cb4b4f5f"),
    (5, "fgd", "2bd6b7782b3e1e26"),
    (6, "dotprod", "551682ecd8cbfb90"),
    (7, "fgd_small_first", "47bd308005f6b9d0"),
]

# The scale benchmark's workload, a tenth of its size: 100 nodes, 1,000 pending gangs.
BENCH_LOCKED = [(1, "e44edc7eb18f0529"), (2, "5fcf4b274c80f7ea")]
# The same with four tenants holding 16 GPUs each in one pool, and half the queue firm
# (not preemptible), which must keep out of pools held for others.
HELD_LOCKED = [(3, "ebe7d3a1cb2688b7"), (4, "51143e3b5dd7964c")]


@pytest.mark.parametrize(("seed", "placement", "locked"), MIXED_LOCKED)
def test_a_seeded_mixed_cycle_decides_as_locked(seed, placement, locked):
    snapshot, pending, running = mixed_cluster(seed)
    decisions = schedule(
        snapshot=snapshot,
        pending=pending,
        running=running,
        now=NOW,
        policy=Policy(placement=placement, seed=seed),
    )
    assert decisions_digest(decisions) == locked


@pytest.mark.parametrize(("seed", "locked"), BENCH_LOCKED)
def test_a_seeded_benchmark_cycle_decides_as_locked(seed, locked):
    snapshot, pending, running = build(nodes=100, pending=1_000, tenants=10, seed=seed)
    decisions = schedule(
        snapshot=snapshot,
        pending=pending,
        running=running,
        now=NOW,
        policy=Policy(placement="fgd_small_first", seed=seed),
    )
    assert decisions_digest(decisions) == locked


@pytest.mark.parametrize(("seed", "locked"), HELD_LOCKED)
def test_a_seeded_benchmark_cycle_with_reservations_decides_as_locked(seed, locked):
    snapshot, pending, running = build(nodes=100, pending=1_000, tenants=10, seed=seed)
    holds = tuple(
        Reservation(
            id=f"hold-{i}",
            tenant=f"tenant-{i:03d}",
            gpu_class=GPU_CLASS,
            gpus=16,
            pool=POOLS[i % len(POOLS)],
            starts_at=NOW - timedelta(hours=1),
            ends_at=NOW + timedelta(hours=5),
        )
        for i in range(4)
    )
    decisions = schedule(
        snapshot=replace(snapshot, reservations=holds),
        pending=[replace(r, preemptible=i % 2 == 0) for i, r in enumerate(pending)],
        running=running,
        now=NOW,
        policy=Policy(placement="fgd_small_first", seed=seed),
    )
    assert decisions_digest(decisions) == locked
