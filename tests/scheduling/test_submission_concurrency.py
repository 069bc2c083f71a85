"""Submissions racing each other on PostgreSQL: the unique name decides, never a 500."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from scheduling import services
from scheduling.models import Workload
from tenants.permissions import Caller

from ..threads import run_together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are raced on PostgreSQL; set DATABASE_URL")


def request_named(name: str) -> services.WorkloadRequest:
    return services.WorkloadRequest(
        name=name,
        kind="training",
        tier="training",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        gpu_classes=("H100-80GB",),
        gpus=1,
    )


def test_five_submissions_of_one_name_make_one_workload_and_four_name_errors(submit, mia, ai_dev):
    submit(name="warm-up")  # the project's namespace is provisioned once, before the race
    request = request_named("race")

    def submit_race():
        return services.workload_submit(caller=Caller(user=mia), project=ai_dev, request=request)

    outcomes = run_together(*[submit_race] * 5)
    assert Workload.objects.filter(project=ai_dev, name="race").count() == 1
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert len(errors) == 4
    assert all(
        isinstance(error, ValidationError) and list(error.message_dict) == ["name"]
        for error in errors
    ), errors


def test_batches_racing_for_one_name_make_one_batch_and_name_the_others_taken_name(
    submit, mia, ai_dev
):
    submit(name="warm-up")

    def batch(n: int):
        return lambda: services.workloads_submit(
            caller=Caller(user=mia),
            project=ai_dev,
            requests=[request_named(f"own-{n}"), request_named("shared")],
        )

    outcomes = run_together(*[batch(n) for n in range(4)])
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert Workload.objects.filter(project=ai_dev, name__startswith="own-").count() == 1
    assert len(errors) == 3
    assert all(
        isinstance(error, ValidationError) and list(error.message_dict) == ["workloads.1.name"]
        for error in errors
    ), errors
