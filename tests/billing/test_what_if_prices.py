"""What billing tells a submission's what-if: its cost at the catalog's prices, and a spent
hard-stop budget's refusal, as an answer."""

from datetime import timedelta
from decimal import Decimal

import pytest

from scheduling import services as scheduling
from scheduling.models import GpuClass, QuotaGrant
from tenants.permissions import Caller

from .conftest import budget, spent_today

pytestmark = pytest.mark.django_db


@pytest.fixture
def h100_quota(acme, cluster):
    QuotaGrant.objects.create(
        organization=acme, gpu_class=GpuClass.objects.get(name="H100-80GB"), guarantee=16, limit=16
    )


def what_if(user, project, **fields):
    request = scheduling.WorkloadRequest(
        **{
            "name": "train",
            "kind": "training",
            "tier": "training",
            "image": "pytorch:latest",
            "gpu_classes": ("H100-80GB",),
            "gpus": 8,
            **fields,
        }
    )
    (answer,) = scheduling.workloads_what_if(
        caller=Caller(user=user), project=project, requests=[request]
    ).workloads
    return answer


def test_the_cost_is_for_its_max_runtime_at_the_catalogs_price(on_demand, h100_quota, mia, ai_dev):
    answer = what_if(mia, ai_dev, replicas=2, max_runtime=timedelta(hours=3))
    # 16 GPUs x 3 hours x 2.90
    assert (answer.cost.amount, answer.cost.per) == (Decimal("139.20"), "run")


def test_without_a_max_runtime_the_cost_is_per_hour(on_demand, h100_quota, mia, ai_dev):
    answer = what_if(mia, ai_dev, gpus=2)
    assert (answer.cost.amount, answer.cost.per) == (Decimal("5.80"), "hour")


def test_what_the_catalog_does_not_price_has_no_cost(h100_quota, mia, ai_dev):
    assert what_if(mia, ai_dev).cost is None


@pytest.mark.usefixtures("mid_month")  # spending counts within the month
def test_a_spent_hard_stop_budget_is_a_refusal_in_the_answer(
    on_demand, h100_quota, alice, acme, vision, mia, ai_dev
):
    budget(alice, acme, "20", hard_stop=True)
    spent_today(vision, 1)  # 23.20 of 20
    answer = what_if(mia, ai_dev)
    assert answer.outcome == "refused"
    assert list(answer.refusal) == ["budget_exhausted"]
