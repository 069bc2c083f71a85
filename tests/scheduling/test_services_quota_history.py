"""A grant's history: each creation, change and deletion through the quota services closes the
span in force and opens the next, in the same transaction, so the books read the guarantees as
they stood."""

import pytest

from portal import clock
from scheduling import services
from scheduling.models import GpuClass, QuotaGrant, QuotaGrantHistory
from scheduling.services import GrantKey
from tenants.permissions import Caller

from ..factories import UserFactory

pytestmark = pytest.mark.django_db

H100 = "H100-80GB"


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


@pytest.fixture
def h100(cluster):
    return GpuClass.objects.get(name=H100)


def grant_set(operator, guarantee, *, organization="acme"):
    return services.quota_grant_set(
        caller=Caller(user=operator),
        key=GrantKey(organization=organization, gpu_class=H100),
        guarantee=guarantee,
        limit=guarantee,
        reason="capacity planning",
    )[0]


def test_a_new_grant_opens_its_history(operator, acme, h100):
    grant = grant_set(operator, 4)

    [span] = QuotaGrantHistory.objects.filter(grant=grant)
    assert (span.guarantee, span.limit, span.valid_to) == (4, 4, None)


def test_a_change_closes_the_span_in_force_and_opens_the_next(operator, acme, h100):
    grant = grant_set(operator, 4)
    clock.advance(seconds=3600)

    grant_set(operator, 6)

    first, second = QuotaGrantHistory.objects.filter(grant=grant)
    assert first.valid_from < first.valid_to == second.valid_from
    assert (first.guarantee, second.guarantee, second.valid_to) == (4, 6, None)


def test_a_deleted_grants_history_ends_and_is_kept(operator, acme, h100):
    grant = grant_set(operator, 4)
    clock.advance(seconds=60)

    services.quota_grant_remove(
        caller=Caller(user=operator),
        key=GrantKey(organization="acme", gpu_class=H100),
        reason="no longer needed",
    )

    [span] = QuotaGrantHistory.objects.filter(organization=acme)
    assert not QuotaGrant.objects.filter(pk=grant.pk).exists()
    assert span.grant is None
    assert span.valid_to > span.valid_from


def test_changes_in_one_instant_keep_the_last(operator, acme, h100):
    grant = grant_set(operator, 4)
    now = QuotaGrantHistory.objects.get().valid_from
    grant.guarantee = grant.limit = 5

    services.quota_grant_history_record(grant=grant, now=now)

    assert list(QuotaGrantHistory.objects.values_list("guarantee", flat=True)) == [5]
