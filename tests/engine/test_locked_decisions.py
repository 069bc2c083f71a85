"""Speed work must not change a decision: seeded cycles decide exactly as locked here.

The fingerprints were taken with the engine of commit f977d0e, before the work that took
the scale benchmark's cycle under a second, and cover every admission and placement,
preemption, and pending reason with its sentence, queue position and estimate. A change
that means to alter decisions (a policy, a rule) updates them and says so in its commit; a
speed-up never does. Updated three times since: a tenant at its quota limit may evict its own
lower-tier work (mixed seed 2 and the benchmark cycles changed; nothing else); and pending
sentences name the binding constraint (a gang whose GPUs are not there at all is `capacity`,
not `gang`; a backfill candidate waits behind a head of its own tier "ahead in the queue", not
"higher-priority"; "1 node"; CPU-only work says "CPU:"), checked with every admission,
placement, preemption, queue position and estimate unchanged on all ten locked cycles; and
victim sets are the cheapest by set cost (highest tier, work lost, count; ties by what the
victims hold, not their ids): mixed seed 5 evicts a set losing less work; the four benchmark
cycles break ties between equally cheap sets by node instead of id; mixed seed 2 (random
placement) only draws differently, the search trying fewer placements. Every search of every
locked cycle, run beside the old greedy one on the same state, chose a set as cheap or cheaper.
Then, on purpose, quotas changed what they count (all ten changed): GPU shares and MIG
instances count against quotas of their own (the scenarios give them as much as the whole
GPUs), capacity no guarantee covers is lent to every tenant, and a tenant below its fair share
of lent capacity reclaims from one above it; the old and new decisions were compared, and the
differences are quota verdicts and what they let through (the benchmark cycles, whose shares
had eaten into the GPU quota, are now bound by capacity instead: 436 quota refusals become 174).
Then reservations became per resource (whole GPUs, or instances of one MIG profile, which are
separate capacity on a node): a MIG request is no longer kept off a pool by another tenant's
whole-GPU reservation, nor steered to its own; mixed seeds 1 and 2 changed, and only through
those two rules (with either undone the old decisions come back exactly).
"""

from dataclasses import replace
from datetime import timedelta

import pytest

from bench.scheduler_scale import GPU_CLASS, POOLS, build
from scheduling.engine import Policy, Reservation, schedule

from .builders import NOW
from .scenarios import decisions_digest, mixed_cluster

MIXED_LOCKED = [
    (0, "fgd_small_first", "62c3bca062d701f6"),
    (1, "bestfit", "92d1496e6a91b8fb"),
    (2, "random", "e9cf4c2a2459f2c4"),
    (3, "packing", "ff6cc78bd918b39c"),
    (4, "clustering", "ad96ee7d04568b9d"),
    (5, "fgd", "8c84c239842b9c86"),
    (6, "dotprod", "a7193c4efb06bcaf"),
    (7, "fgd_small_first", "356ba657907cedab"),
]

# The scale benchmark's workload, a tenth of its size: 100 nodes, 1,000 pending gangs.
BENCH_LOCKED = [(1, "078d70b0f03ff3f7"), (2, "4617da03375ffb63")]
# The same with four tenants holding 16 GPUs each in one pool, and half the queue firm
# (not preemptible), which must keep out of pools held for others.
HELD_LOCKED = [(3, "987f6453da6a1848"), (4, "283127fe04a56444")]


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
