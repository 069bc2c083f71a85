"""`services.workload_alternatives`: the engine's alternatives for the one workload shown, by
the portal's rule for less GPU, computed once per cycle."""

import pytest

from scheduling import selectors, services
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_h100_free(submit, cycle):
    """Seven DGX nodes full and half of the eighth: 4 H100s free, on one node."""
    for n in range(7):
        submit(name=f"fill-{n}", gpus=8)
    submit(name="half", gpus=4)
    cycle()


def _kinds(workload, user) -> dict[str, str]:
    shown = services.workload_alternatives(caller=Caller(user=user), workload=workload)
    return {a.kind: a.change for a in shown}


def test_a_training_job_may_run_on_fewer_gpus_per_replica(four_h100_free, submit, cycle, mia):
    job = submit(name="job", gpus=8)
    cycle()
    job.refresh_from_db()
    assert _kinds(job, mia)["fewer_gpus"] == "4 GPUs per replica instead of 8"


def test_an_inference_service_is_never_offered_fewer_gpus(four_h100_free, submit, cycle, mia):
    service = submit(name="svc", gpus=8, kind="inference")
    cycle()
    service.refresh_from_db()
    assert (service.state, "fewer_gpus" in _kinds(service, mia)) == ("Pending", False)


def test_a_second_look_within_the_same_cycle_asks_the_engine_no_more(
    waiting_for_h100, ai_dev, mia, django_assert_num_queries
):
    workload = selectors.workload_get(caller=Caller(user=mia), project=ai_dev, name="waits")
    first = services.workload_alternatives(caller=Caller(user=mia), workload=workload)
    # The caller's role, and the last cycle's time for the key: no state, no engine.
    with django_assert_num_queries(2):
        again = services.workload_alternatives(caller=Caller(user=mia), workload=workload)
    assert (again, bool(first)) == (first, True)
