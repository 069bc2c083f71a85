"""The reads the console's pages and the operators' insights took from views, forms and
insights: each is scoped to the caller's organizations (another tenant's answers 404) or
refused to any but an operator."""

from datetime import timedelta

import pytest

from portal import clock
from portal.errors import Forbidden, NotFound
from scheduling import selectors
from scheduling.models import GpuClass, NodePool, ProvisioningRecord, Reservation
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def test_the_most_granted_quota_class_is_the_one_of_the_highest_gpu_limit(alice, acme, quotas):
    most = selectors.quota_class_most_granted(caller=Caller(user=alice), organization=acme)
    assert most == "H100-80GB"  # 64 GPUs, against 16 L4 and 8 A100


def test_an_organization_without_gpu_quota_has_no_most_granted_class(alice, acme, cluster):
    assert selectors.quota_class_most_granted(caller=Caller(user=alice), organization=acme) is None


def test_another_tenant_gets_a_404_for_the_most_granted_quota_class(bruno, acme, quotas):
    with pytest.raises(NotFound):
        selectors.quota_class_most_granted(caller=Caller(user=bruno), organization=acme)


def test_a_projects_provisioning_is_its_records(mia, ai_dev):
    record = ProvisioningRecord.objects.create(project=ai_dev)
    assert selectors.project_provisioning(caller=Caller(user=mia), project=ai_dev) == [record]


def test_another_tenant_gets_a_404_for_a_projects_provisioning(bruno, ai_dev):
    ProvisioningRecord.objects.create(project=ai_dev)
    with pytest.raises(NotFound):
        selectors.project_provisioning(caller=Caller(user=bruno), project=ai_dev)


def held(acme, *, state: str, days: int) -> Reservation:
    starts_at = clock.now() + timedelta(days=days)
    return Reservation.objects.create(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        pool=NodePool.objects.get(name="dgx-h100"),
        gpus=8,
        starts_at=starts_at,
        ends_at=starts_at + timedelta(hours=4),
        state=state,
    )


def test_the_reservations_on_record_leave_out_the_completed_and_expired_soonest_first(
    alice, acme, cluster
):
    later = held(acme, state=Reservation.State.APPROVED, days=3)
    sooner = held(acme, state=Reservation.State.CANCELLED, days=2)
    held(acme, state=Reservation.State.COMPLETED, days=1)
    held(acme, state=Reservation.State.EXPIRED, days=1)
    listed = selectors.reservations_on_record(caller=Caller(user=alice), organization=acme)
    assert list(listed) == [sooner, later]


def test_another_tenant_gets_a_404_for_the_reservations_on_record(bruno, acme, cluster):
    held(acme, state=Reservation.State.APPROVED, days=2)
    with pytest.raises(NotFound):
        selectors.reservations_on_record(caller=Caller(user=bruno), organization=acme)


def test_a_tenant_may_not_read_the_gpu_work_waiting_across_tenants(alice, submit):
    submit(name="waits")
    with pytest.raises(Forbidden):
        selectors.gpu_workloads_waiting(caller=Caller(user=alice))


def test_a_tenant_may_not_read_the_gpu_work_monitoring_saw_across_tenants(alice, cluster):
    with pytest.raises(Forbidden):
        selectors.gpu_workloads_seen(caller=Caller(user=alice), since=clock.now())
