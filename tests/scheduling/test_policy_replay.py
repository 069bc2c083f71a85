"""Policy replay of the portal's recorded work: today's settings give back what was recorded,
a change moves the figures, and the command refuses bad input with a clear error."""

import json
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from portal import clock, events
from portal.events import ExtensionPoint
from scheduling.selectors.replay import ReplayLimits, ReplayRefused, policy_replay_run
from scheduling.selectors.replay_change import ChangeError, PolicyChange, change_from_options

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


def replay(change: PolicyChange | None = None, **fields):
    now = clock.now()
    return policy_replay_run(since=now - DAY, until=now, change=change or PolicyChange(), **fields)


def test_todays_settings_give_back_the_recorded_gpu_hours(recorded_history):
    report = replay()
    assert report.current.gpu_hours["H100-80GB"] == pytest.approx(
        report.recorded_gpu_hours["H100-80GB"], abs=0.01
    )


def test_work_that_queued_behind_a_gang_waits_in_the_replay_too(recorded_history):
    [waits] = replay().current.waits
    assert waits.p95_minutes >= 60


def test_no_change_gives_the_same_figures_twice(recorded_history):
    report = replay()
    assert report.current == report.proposed


def test_another_placement_policy_is_replayed_under_its_own_name(recorded_history):
    report = replay(change_from_options(placement="packing"))
    assert report.change.lines() == ["placement policy: packing"]


def test_a_span_past_the_limit_is_refused_with_the_limit(recorded_history):
    limits = ReplayLimits(span=timedelta(hours=12), workloads=100, cycles=100)
    with pytest.raises(ReplayRefused, match="at most 12 h 00 min"):
        replay(limits=limits)


def test_more_workloads_than_the_limit_are_refused(recorded_history):
    with pytest.raises(ReplayRefused, match="8 workloads"):
        replay(limits=ReplayLimits(span=DAY * 2, workloads=5, cycles=1000))


def test_a_quota_of_an_unknown_organization_is_refused(recorded_history):
    with pytest.raises(ChangeError, match="no organization 'nobody'"):
        replay(change_from_options(quotas=["nobody:H100-80GB=8"]))


def test_a_quota_may_name_its_class_by_the_start_of_its_name(recorded_history):
    report = replay(change_from_options(quotas=["acme:H100=8"]))
    assert report.change.lines() == ["quota acme H100-80GB: guarantee 8"]


def command(*args) -> str:
    out = StringIO()
    call_command("policy_replay", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_both_scenarios_side_by_side(recorded_history):
    text = command("--since", "2d", "--weight", "acme=2")
    assert "current  proposed" in text and "weight acme: 2" in text


def test_the_command_answers_json_for_scripts(recorded_history):
    data = json.loads(command("--json", "--policy", "bestfit"))
    assert data["workloads"] == 8 and set(data["proposed"]) >= {"waits", "gpu_hours"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--since", "soon"], "not a span"),
        (["--weight", "acme=-1"], "above 0"),
        (["--weight", "acme"], "NAME=VALUE"),
        (["--policy", "spread"], "no placement policy 'spread'"),
        (["--set-quota", "acme:H100-80GB=8:4"], "below the guarantee"),
        (["--tier", "gold=5"], "no tier 'gold'"),
        (["--change", "/nonexistent.yaml"], "cannot read"),
    ],
)
def test_the_command_refuses_bad_input_with_a_clear_error(cluster, args, message):
    with pytest.raises(CommandError, match=message):
        command(*args)


def test_revenue_is_the_replayed_gpu_hours_at_the_catalog_price(recorded_history, monkeypatch):
    def catalog(**context):
        return {("H100-80GB", "", ""): Decimal("2.50")}

    monkeypatch.setitem(events._checks, ExtensionPoint.USAGE_PRICES, [catalog])
    report = replay()
    hours = Decimal(str(report.current.gpu_hours["H100-80GB"]))
    assert report.current.revenue["acme"] == pytest.approx(
        hours * Decimal("2.50"), abs=Decimal("0.05")
    )
