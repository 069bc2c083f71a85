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


def test_five_submissions_of_one_name_make_one_workload_and_four_name_errors(submit, mia, ai_dev):
    submit(name="warm-up")  # the project's namespace is provisioned once, before the race
    request = services.WorkloadRequest(
        name="race",
        kind="training",
        tier="training",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        gpu_classes=("H100-80GB",),
        gpus=1,
    )

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
