"""The cycle keeps each organization's decayed usage: ended work added once, halved by each
half-life, nothing read or written with a half-life of 0."""

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Placement, TenantUsage
from scheduling.services.fairness import tenant_usage_update
from scheduling.services.lifecycle import workloads_evict

from .conftest import simulated_runtime

pytestmark = pytest.mark.django_db

HOUR = 3600


@pytest.fixture
def acme_ran_an_hour(submit, cycle, advance):
    """acme held 8 H100 for an hour and a minute (the sync saw its end a minute late)."""
    submit(name="hour", gpus=8, **simulated_runtime(HOUR))
    cycle()
    advance(HOUR + 60)
    assert not Placement.objects.filter(ended_at__isnull=True).exists()


def test_ended_work_counts_its_gpu_seconds_for_its_organization(acme_ran_an_hour, acme):
    usage = tenant_usage_update(now=clock.now())
    assert usage["acme"] == pytest.approx(8 * (HOUR + 60), rel=0.01)


def test_ended_work_is_counted_once(acme_ran_an_hour):
    first = tenant_usage_update(now=clock.now())
    again = tenant_usage_update(now=clock.now())
    assert again == pytest.approx(first)


def test_a_half_life_later_the_usage_is_halved(acme_ran_an_hour, settings):
    settings.PORTAL_FAIR_SHARE_HALF_LIFE_HOURS = 24
    before = tenant_usage_update(now=clock.now())["acme"]
    clock.advance(seconds=24 * HOUR)
    assert tenant_usage_update(now=clock.now())["acme"] == pytest.approx(before / 2)


def test_a_class_weight_multiplies_the_usage(acme_ran_an_hour, settings):
    settings.PORTAL_FAIR_SHARE_CLASS_WEIGHTS = {"H100-80GB": 3.0}
    assert tenant_usage_update(now=clock.now())["acme"] == pytest.approx(24 * (HOUR + 60), rel=0.01)


def test_work_evicted_back_to_the_queue_counts_at_its_class_weight(
    submit, cycle, advance, settings
):
    settings.PORTAL_FAIR_SHARE_CLASS_WEIGHTS = {"H100-80GB": 3.0}
    workload = submit(name="evicted", gpus=8, **simulated_runtime(4 * HOUR))
    cycle()
    advance(HOUR)
    key = str(workload.pk)
    workloads_evict(reasons={key: "Evicted."}, preempted_by={key: None}, event_data={key: {}})
    held = Placement.objects.get()
    seconds = (held.ended_at - held.started_at).total_seconds()
    assert tenant_usage_update(now=clock.now())["acme"] == pytest.approx(3 * 8 * seconds, rel=0.01)


@pytest.fixture
def decay_off(settings):
    settings.PORTAL_FAIR_SHARE_HALF_LIFE_HOURS = 0


def test_with_a_half_life_of_zero_the_cycle_keeps_no_usage(decay_off, acme_ran_an_hour):
    services.scheduling_cycle_run()
    assert not TenantUsage.objects.exists()
