"""List endpoints lock their query count: it does not grow with the rows listed (no N+1)."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling import services
from scheduling.models import GpuClass, Node, NodePool, PriorityTier, QuotaGrant, WorkloadEvent
from tenants.permissions import Caller

from ...factories import ProjectFactory
from ...queries import assert_list_queries

pytestmark = pytest.mark.django_db

ORG = "/api/v1/organizations/acme"
WORKLOADS = f"{ORG}/projects/ai-dev/workloads"

# endpoint: queries for a session-authenticated list, whatever the number of rows
LOCKED = {
    "/api/v1/gpu-classes/": 3,
    "/api/v1/priority-tiers/": 3,
    f"{ORG}/quotas/": 6,
    f"{ORG}/quota-requests/": 5,
    f"{ORG}/reservations/": 5,
    f"{ORG}/reservation-timeline/": 7,
    f"{WORKLOADS}/": 6,
    f"{WORKLOADS}/first/events/": 6,
}

OP = "/api/v1/operator"
# The operator API's lists, through an operator token: the token, a count, a page.
OPERATOR_LOCKED = {
    f"{OP}/pools/": 3,
    f"{OP}/nodes/": 3,
    f"{OP}/gpu-classes/": 3,
    f"{OP}/priority-tiers/": 3,
    f"{OP}/quota-grants/": 3,
    f"{OP}/reservations/": 3,
    f"{OP}/quota-requests/": 3,
    f"{OP}/queue/": 3,
}


@pytest.fixture
def add_rows(quotas, alice, acme, submit):
    """A row more in each list: a GPU class with a pool and a node, a tier, a project's quota,
    a quota request, a reservation, a workload and an event of the first one."""
    first = submit(name="first")
    h100 = GpuClass.objects.get(name="H100-80GB")
    cluster = NodePool.objects.get(name="dgx-h100").cluster
    made = []

    def add(count: int) -> None:
        for _ in range(count):
            n = len(made)
            made.append(n)
            gpu_class = GpuClass.objects.create(name=f"X{n}", memory_gib=80)
            pool = NodePool.objects.create(
                name=f"x-{n}", cluster=cluster, gpu_class=gpu_class, purpose="training"
            )
            Node.objects.create(
                name=f"x-{n}-node", pool=pool, gpu_count=8, cpu_milli=1000, memory_mib=1024
            )
            PriorityTier.objects.create(name=f"tier-{n}", value=10 + n)
            project = ProjectFactory(organization=acme)
            QuotaGrant.objects.create(
                organization=acme, project=project, gpu_class=h100, guarantee=1, limit=1
            )
            services.quota_request_create(
                caller=Caller(user=alice),
                organization=acme,
                ask=services.QuotaAsk(gpu_class="H100-80GB", amount=1, reason="more"),
            )
            start = clock.now() + timedelta(hours=2 + n)
            services.reservations_request(
                caller=Caller(user=alice),
                organization=acme,
                request=services.ReservationRequest(
                    gpu_class="H100-80GB",
                    gpus=1,
                    starts_at=start,
                    ends_at=start + timedelta(hours=1),
                ),
            )
            submit(name=f"w-{n}")
            WorkloadEvent.objects.create(workload=first, kind="note", message=f"note {n}")

    return add


@pytest.mark.parametrize("url", list(LOCKED))
def test_a_list_takes_the_same_queries_for_many_rows_as_for_one(url, alice, api_as, add_rows):
    assert_list_queries(api_as(alice), url, add_rows=add_rows, queries=LOCKED[url])


@pytest.mark.parametrize("url", list(OPERATOR_LOCKED))
def test_an_operator_list_takes_the_same_queries_for_many_rows_as_for_one(url, ops, add_rows):
    assert_list_queries(ops[1], url, add_rows=add_rows, queries=OPERATOR_LOCKED[url])
