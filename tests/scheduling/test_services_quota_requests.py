from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from portal import clock
from portal.errors import Conflict, Forbidden
from scheduling import services, tasks
from scheduling.models import GpuClass, QuotaGrant, QuotaRequest
from scheduling.services import QuotaAsk
from tenants.models import AuditEvent
from tenants.permissions import Caller

from ..factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db):
    return UserFactory(email="ops@example.com", is_staff=True)


def ask(user, organization, **fields) -> QuotaRequest:
    return services.quota_request_create(
        caller=Caller(user=user),
        organization=organization,
        ask=QuotaAsk(
            gpu_class=fields.pop("gpu_class", "H100-80GB"),
            amount=fields.pop("amount", 8),
            reason=fields.pop("reason", "Fine-tuning sprint"),
            **fields,
        ),
    )


def h100_grant(organization, **scope) -> QuotaGrant:
    return QuotaGrant.objects.get(
        organization=organization, gpu_class__name="H100-80GB", resource="gpus", **scope
    )


def test_an_owner_asks_for_more_and_it_waits_for_an_operator(cluster, alice, acme):
    quota_request = ask(alice, acme)
    assert (
        quota_request.state,
        AuditEvent.objects.filter(action="quota_request.create").count(),
    ) == (
        QuotaRequest.State.REQUESTED,
        1,
    )


def test_a_member_may_not_ask_for_quota(cluster, mia, acme):
    with pytest.raises(Forbidden):
        ask(mia, acme)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"gpu_class": "Z9"}, "gpu_class"),
        ({"reason": "  "}, "reason"),
        ({"amount": 0}, "amount"),
        ({"project": "nope"}, "project"),
        ({"resource": "mig", "mig_profile": "mig-7g.80gb", "gpu_class": "L4"}, "mig_profile"),
        ({"resource": "gpus", "mig_profile": "mig-1g.10gb"}, "mig_profile"),
        ({"resource": "disks"}, "resource"),
    ],
)
def test_a_malformed_request_is_refused_on_its_field_and_nothing_is_saved(
    cluster, alice, acme, fields, field
):
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, **fields)
    assert (field in refused.value.message_dict, QuotaRequest.objects.count()) == (True, 0)


def test_an_end_in_the_past_is_refused_on_until(cluster, alice, acme):
    with pytest.raises(ValidationError) as refused:
        ask(alice, acme, until=clock.now() - timedelta(hours=1))
    assert list(refused.value.message_dict) == ["until"]


def test_approval_raises_the_grant_and_reprovisions_the_namespaces(
    quotas, alice, acme, ai_dev, operator, django_capture_on_commit_callbacks
):
    quota_request = ask(alice, acme, amount=8)
    with django_capture_on_commit_callbacks() as callbacks:
        services.quota_request_approve(caller=Caller(user=operator), quota_request=quota_request)
    grant = h100_grant(acme, project__isnull=True)
    provisioning = [c for c in callbacks if c.func == tasks.project_provision_in_cluster]
    assert ((grant.guarantee, grant.limit), len(provisioning)) == ((72, 72), 1)


def test_an_operator_may_grant_less_and_for_a_shorter_time(cluster, alice, acme, operator):
    until = clock.now() + timedelta(days=30)
    quota_request = ask(alice, acme, amount=8)
    services.quota_request_approve(
        caller=Caller(user=operator), quota_request=quota_request, amount=4, until=until
    )
    quota_request.refresh_from_db()
    grant = h100_grant(acme, project__isnull=True)
    assert (quota_request.granted_amount, quota_request.granted_until, grant.limit) == (
        4,
        until,
        4,
    )


def test_a_temporary_increase_reverts_at_its_end(quotas, alice, acme, operator):
    quota_request = ask(alice, acme, amount=8, until=clock.now() + timedelta(days=1))
    services.quota_request_approve(caller=Caller(user=operator), quota_request=quota_request)
    services.quota_requests_advance(now=clock.now() + timedelta(days=1))
    quota_request.refresh_from_db()
    grant = h100_grant(acme, project__isnull=True)
    assert (quota_request.state, grant.guarantee, grant.limit) == (
        QuotaRequest.State.REVERTED,
        64,
        64,
    )


def test_an_undecided_request_expires_at_its_end(cluster, alice, acme):
    quota_request = ask(alice, acme, until=clock.now() + timedelta(hours=2))
    services.quota_requests_advance(now=clock.now() + timedelta(hours=2))
    quota_request.refresh_from_db()
    assert quota_request.state == QuotaRequest.State.EXPIRED


def test_project_grants_never_add_up_to_more_than_the_organizations(
    quotas, alice, acme, ai_dev, operator
):
    services.quota_request_approve(
        caller=Caller(user=operator),
        quota_request=ask(alice, acme, project="ai-dev", amount=60),
    )
    ProjectFactory(organization=acme, slug="ai-prod")
    with pytest.raises(ValidationError) as refused:
        services.quota_request_approve(
            caller=Caller(user=operator),
            quota_request=ask(alice, acme, project="ai-prod", amount=8),
        )
    assert list(refused.value.message_dict) == ["limit"]


def test_a_denial_needs_a_reason_and_keeps_the_grants(quotas, alice, acme, operator):
    quota_request = ask(alice, acme)
    with pytest.raises(ValidationError):
        services.quota_request_reject(
            caller=Caller(user=operator), quota_request=quota_request, reason=""
        )
    services.quota_request_reject(
        caller=Caller(user=operator), quota_request=quota_request, reason="No H100s free."
    )
    quota_request.refresh_from_db()
    assert (quota_request.state, h100_grant(acme, project__isnull=True).limit) == (
        QuotaRequest.State.DENIED,
        64,
    )


def test_only_operators_decide(cluster, alice, acme):
    with pytest.raises(Forbidden):
        services.quota_request_approve(caller=Caller(user=alice), quota_request=ask(alice, acme))


def test_deciding_twice_is_a_conflict(cluster, alice, acme, operator):
    quota_request = ask(alice, acme)
    services.quota_request_approve(caller=Caller(user=operator), quota_request=quota_request)
    with pytest.raises(Conflict):
        services.quota_request_approve(caller=Caller(user=operator), quota_request=quota_request)


def test_a_mig_request_grows_the_profiles_grant(cluster, alice, acme, operator):
    quota_request = ask(
        alice, acme, gpu_class="A100-80GB", resource="mig", mig_profile="mig-1g.10gb", amount=4
    )
    services.quota_request_approve(caller=Caller(user=operator), quota_request=quota_request)
    grant = QuotaGrant.objects.get(
        organization=acme, gpu_class=GpuClass.objects.get(name="A100-80GB"), resource="mig"
    )
    assert (grant.mig_profile, grant.limit) == ("mig-1g.10gb", 4)


def test_a_new_request_is_mailed_to_the_requester_and_the_operators(cluster, alice, acme, operator):
    quota_request = ask(alice, acme)
    services.quota_request_email_send(quota_request_id=str(quota_request.pk))
    assert sorted(m.to[0] for m in mail.outbox) == sorted([alice.email, operator.email])


def test_each_step_of_a_quota_request_queues_its_mail(
    cluster, alice, acme, operator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        quota_request = ask(alice, acme)
        services.quota_request_reject(
            caller=Caller(user=operator), quota_request=quota_request, reason="Not now."
        )
    mails = [c for c in callbacks if c.func == tasks.quota_request_email_send.delay]
    assert [(c.func, c.keywords) for c in mails] == [
        (
            tasks.quota_request_email_send.delay,
            {"quota_request_id": str(quota_request.pk), "change": change},
        )
        for change in ("requested", "denied")
    ]


def a100_grant(organization, guarantee: int, limit: int) -> QuotaGrant:
    return QuotaGrant.objects.create(
        organization=organization,
        gpu_class=GpuClass.objects.get(name="A100-80GB"),
        guarantee=guarantee,
        limit=limit,
    )


def test_temporary_increases_of_one_grant_ending_together_are_all_taken_back(
    cluster, alice, acme, operator
):
    grant = a100_grant(acme, 0, 4)
    until = clock.now() + timedelta(hours=1)
    for amount in (1, 2):
        services.quota_request_approve(
            caller=Caller(user=operator),
            quota_request=ask(alice, acme, gpu_class="A100-80GB", amount=amount, until=until),
        )
    grant.refresh_from_db()
    raised = (grant.guarantee, grant.limit)
    services.quota_requests_advance(now=until)
    grant.refresh_from_db()
    assert (raised, (grant.guarantee, grant.limit)) == ((3, 7), (0, 4))
