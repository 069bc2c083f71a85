"""The demo's recorded days: finished work of three organizations in several tiers, which
the policy replay turns into a story (a larger guarantee for globex shortens its waits)."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from billing.models import ContractCredit
from portal import clock
from scheduling.models import Eviction, Workload
from scheduling.selectors.replay import policy_replay_run
from scheduling.selectors.replay_change import change_from_options

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("seed_demo", stdout=io.StringIO())


def test_the_demo_records_finished_work_of_three_organizations_in_four_tiers(demo):
    finished = Workload.objects.filter(state__in=Workload.FINAL_STATES)
    assert (
        finished.values("project__organization").distinct().count(),
        finished.values("tier").distinct().count(),
    ) == (3, 4)


def test_in_the_demo_a_larger_guarantee_shortens_globexs_batch_waits(demo):
    now = clock.now()
    report = policy_replay_run(
        since=now - timedelta(days=7),
        until=now,
        change=change_from_options(quotas=["globex:H100=16:32"]),
    )
    [before] = [w for w in report.current.waits if (w.organization, w.tier) == ("globex", "batch")]
    [after] = [w for w in report.proposed.waits if (w.organization, w.tier) == ("globex", "batch")]
    assert after.p95_minutes < before.p95_minutes


def test_seeding_twice_records_the_days_once(demo):
    count = Workload.objects.count()
    call_command("seed_demo", stdout=io.StringIO())
    assert Workload.objects.count() == count


def test_the_demos_evictions_of_credited_tiers_are_credited_and_of_spot_tiers_not(demo):
    evicted = Eviction.objects.filter(reason__in=["priority", "reclaim", "fair-share"])
    credited = set(
        ContractCredit.objects.filter(kind="lost_work_credit").values_list(
            "eviction__workload__tier__name", flat=True
        )
    )
    assert (evicted.exists(), credited) == (True, {"training"})
