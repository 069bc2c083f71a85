"""Fairness over time: decayed past usage, added to the share held now and divided by the
weight, orders the queue and bounds fair-share reclaim."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduling.engine import QuotaLedger
from scheduling.engine.fairness import DecayedUsage, UsageDecay
from scheduling.engine.quota import dominant_shares

from .builders import NOW, admitted, cycle, node, quota, request
from .test_fair_share import GPUS, holding, one_gpu_jobs, settle

WEEK = UsageDecay(half_life=timedelta(days=7))


def test_a_half_life_later_past_usage_counts_half():
    usage = DecayedUsage(WEEK, as_of=NOW, totals={"acme": 1000.0})
    usage.advance(NOW + timedelta(days=7))
    assert usage.totals["acme"] == pytest.approx(500.0)


def test_two_half_lives_later_it_counts_a_quarter():
    usage = DecayedUsage(WEEK, as_of=NOW, totals={"acme": 1000.0})
    usage.advance(NOW + timedelta(days=7))
    usage.advance(NOW + timedelta(days=14))
    assert usage.totals["acme"] == pytest.approx(250.0)


def test_a_gpu_held_for_a_moment_counts_its_gpu_seconds():
    held = WEEK.held(
        gpu_milli=2000,
        gpu_class="H100",
        started_at=NOW - timedelta(seconds=10),
        ended_at=NOW,
        now=NOW,
    )
    assert held == pytest.approx(20.0, rel=1e-4)


def test_a_class_weight_multiplies_its_gpu_seconds():
    weighted = UsageDecay(half_life=timedelta(days=7), class_weights={"H100": 3.0})
    args = {"gpu_milli": 1000, "started_at": NOW - timedelta(hours=1), "ended_at": NOW, "now": NOW}
    assert weighted.held(gpu_class="H100", **args) == pytest.approx(
        3 * weighted.held(gpu_class="L4", **args)
    )


def test_usage_shares_are_each_tenants_part_of_all_decayed_usage():
    assert WEEK.shares({"acme": 3000.0, "zeta": 1000.0}) == {"acme": 0.75, "zeta": 0.25}


def test_a_half_life_of_zero_counts_no_usage():
    off = UsageDecay(half_life=timedelta(0))
    held = off.held(
        gpu_milli=1000, gpu_class="H100", started_at=NOW - timedelta(days=1), ended_at=NOW, now=NOW
    )
    assert (held, off.shares({"acme": 5.0})) == (0.0, {})


def one_gpu_for_acme_or_zeta(**usage: float) -> list[str]:
    """What one free GPU admits of acme's job (submitted first) and zeta's."""
    decisions = cycle(
        nodes=[node("a", free=[1000] + [0] * 7)],
        pending=[
            request("acme-1", tenant="acme", gpus=1, submitted_minutes_ago=30),
            request("zeta-1", tenant="zeta", gpus=1, submitted_minutes_ago=1),
        ],
        tenant_usage=usage,
    )
    return admitted(decisions)


def test_a_tenant_that_used_much_recently_queues_behind_one_that_did_not():
    assert one_gpu_for_acme_or_zeta(acme=0.4) == ["zeta-1"]


def test_without_past_usage_the_earlier_submission_goes_first():
    assert one_gpu_for_acme_or_zeta() == ["acme-1"]


def test_a_weight_divides_past_usage_too():
    ledger = QuotaLedger(
        quotas=[quota("acme"), quota("zeta")],
        running=[],
        weights={"acme": 2.0},
        usage={"acme": 0.5, "zeta": 0.25},
    )
    shares = dominant_shares(ledger=ledger, nodes=[node("a")])
    assert shares == {"acme": 0.25, "zeta": 0.25}


def test_reclaim_leaves_more_to_the_tenant_that_used_less_recently():
    # globex used a quarter of the cluster lately: it reclaims until acme's borrowed share
    # equals its own plus that quarter (10 and 6 of 16 GPUs), not to the even halves.
    held, _ = settle(
        holding("acme", GPUS),
        one_gpu_jobs("globex", GPUS),
        cycles=3,
        tenant_usage={"globex": 0.25},
    )
    assert held == {"acme": 10, "globex": 6}


@given(past=st.floats(min_value=0, max_value=10), weight=st.floats(min_value=0.01, max_value=100))
def test_more_past_usage_never_moves_a_tenant_ahead(past, weight):
    def key(usage: float) -> float:
        ledger = QuotaLedger(quotas=[], running=[], weights={"acme": weight}, usage={"acme": usage})
        return dominant_shares(ledger=ledger, nodes=[node("a")])["acme"]

    assert key(past + 0.1) > key(past)


def test_the_worked_example_of_the_docs_orders_umbrella_zeta_acme():
    # docs/users/quotas.md: acme ran 24 GPUs and zeta 8 for three days; umbrella (weight 2)
    # nothing. One GPU frees at a time: umbrella's job goes first, then zeta's, then acme's.
    usage = WEEK.shares(
        {
            tenant: WEEK.held(
                gpu_milli=gpus * 1000,
                gpu_class="H100-80GB",
                started_at=NOW - timedelta(days=3),
                ended_at=NOW,
                now=NOW,
            )
            for tenant, gpus in (("acme", 24), ("zeta", 8))
        }
    )
    decisions = cycle(
        nodes=[node("a", free=[1000] + [0] * 7)],
        pending=[
            request(f"{tenant}-1", tenant=tenant, gpus=1, submitted_minutes_ago=minutes)
            for tenant, minutes in (("acme", 30), ("zeta", 20), ("umbrella", 10))
        ],
        tenant_weights={"umbrella": 2.0},
        tenant_usage=usage,
    )
    queued = sorted(decisions.pending, key=lambda p: p.queue_position)
    assert (admitted(decisions), [p.request_id for p in queued]) == (
        ["umbrella-1"],
        ["zeta-1", "acme-1"],
    )


@given(
    hours=st.floats(min_value=0.01, max_value=500),
    split=st.floats(min_value=0.0, max_value=1.0),
    ago=st.floats(min_value=0, max_value=500),
)
def test_a_stretch_counts_the_same_whole_or_in_two_parts(hours, split, ago):
    end = NOW - timedelta(hours=ago)
    start = end - timedelta(hours=hours)
    middle = start + timedelta(hours=hours * split)
    args = {"gpu_milli": 1000, "gpu_class": "H100", "now": NOW}
    whole = WEEK.held(started_at=start, ended_at=end, **args)
    parts = WEEK.held(started_at=start, ended_at=middle, **args) + WEEK.held(
        started_at=middle, ended_at=end, **args
    )
    assert parts == pytest.approx(whole, rel=1e-9, abs=1e-6)


@given(first=st.floats(min_value=0, max_value=1000), second=st.floats(min_value=0, max_value=1000))
def test_decaying_in_two_steps_is_decaying_once(first, second):
    stepped = DecayedUsage(WEEK, as_of=NOW, totals={"acme": 1000.0})
    stepped.advance(NOW + timedelta(hours=first))
    stepped.advance(NOW + timedelta(hours=first + second))
    once = DecayedUsage(WEEK, as_of=NOW, totals={"acme": 1000.0})
    once.advance(NOW + timedelta(hours=first + second))
    assert stepped.totals["acme"] == pytest.approx(once.totals["acme"], rel=1e-9, abs=1e-12)
