"""The preemption contract in the console: the checkpoint interval on the submit form, and a
workload's page showing its tier's contract, its checkpoints and each eviction's notice and
work lost."""

from datetime import timedelta

import pytest

from scheduling.models import PriorityTier, Workload

from .conftest import simulated_runtime
from .test_console import FORM, PAGE

pytestmark = pytest.mark.django_db


def test_a_member_declares_a_checkpoint_interval_from_the_console(signed_in, mia):
    signed_in(mia).post(PAGE, {**FORM, "checkpoint_interval_minutes": "30"})
    assert Workload.objects.get(name="train-1").checkpoint_interval == timedelta(minutes=30)


def test_the_workload_page_shows_its_tiers_preemption_contract(signed_in, mia, submit):
    PriorityTier.objects.filter(name="training").update(
        min_run_time=timedelta(hours=1), notice_seconds=120
    )
    submit(name="train-1")
    page = signed_in(mia).get(f"{PAGE}train-1/").content.decode()
    assert "runs at least 1 h 00 min before it may be preempted; 120 s notice" in page


def test_the_victims_page_shows_the_notice_given_and_the_work_lost(
    signed_in, mia, submit, cycle, advance, globex_serving
):
    for n in range(8):
        submit(name=f"fill-{n}", gpus=8, **simulated_runtime(86400))
    cycle()
    advance(60)
    advance(600)
    globex_serving()
    cycle()
    victim = Workload.objects.get(preempted_by__isnull=False)
    page = signed_in(mia).get(f"{PAGE}{victim.name}/").content.decode()
    assert "Notice: 30 s; work lost: 4800 GPU-seconds since its start" in page
