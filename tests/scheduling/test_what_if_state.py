"""The state a cycle keeps for what-ifs is the cluster the next cycle reads from the database."""

import pickle

import pytest

from portal import clock
from scheduling.models import CycleEndState
from scheduling.services.cycle import cycle_inputs

pytestmark = pytest.mark.django_db


def kept():
    return pickle.loads(bytes(CycleEndState.objects.get().state))


def test_the_kept_nodes_are_those_the_next_cycle_reads(submit, cycle):
    submit(name="whole", gpus=8, replicas=2)
    submit(name="share", gpu_classes=("L4",), gpus=0, gpu_milli=500)
    submit(name="mig", gpu_classes=("A100-80GB",), gpus=0, mig_profile="mig-1g.10gb", mig_count=2)
    assert len(cycle().admitted) == 3
    loaded = cycle_inputs(now=clock.now())
    by_name = sorted(loaded.snapshot.nodes, key=lambda n: n.name)
    assert list(kept().snapshot.nodes) == by_name


def test_the_kept_running_work_is_what_the_next_cycle_reads(submit, cycle):
    submit(name="whole", gpus=8, replicas=2)
    cycle()
    loaded = cycle_inputs(now=clock.now())
    assert sorted(kept().running, key=lambda w: w.request.id) == sorted(
        loaded.running, key=lambda w: w.request.id
    )
