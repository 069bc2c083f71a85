"""Each app's side effects reach the other app's tasks through events, queued after commit.

The callbacks are captured, not run: running them would send to the broker. What each one
would queue is compared with the task it must queue. The submission's cycle and the cycle's
launches and teardowns run through a real worker in tests/worker.
"""

import pytest
from django.core.exceptions import ValidationError

from scheduling import tasks as scheduling_tasks
from tenants import services
from tenants import tasks as tenant_tasks
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def queued(callbacks) -> list[tuple[object, dict]]:
    return [(callback.func, callback.keywords) for callback in callbacks]


def test_creating_a_project_queues_its_provisioning(
    alice, acme, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        project = services.project_create(
            caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Dev"
        )
    expected = (scheduling_tasks.project_provision.delay, {"project_id": str(project.pk)})
    assert queued(callbacks) == [expected]


def test_deleting_a_project_queues_its_deprovisioning(
    alice, ai_dev, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        services.project_delete(caller=Caller(user=alice), project=ai_dev)
    expected = (scheduling_tasks.project_deprovision_in_cluster, {"project_id": str(ai_dev.pk)})
    assert queued(callbacks) == [expected]


def test_inviting_a_member_queues_the_invitation_mail(
    alice, acme, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        invitation = services.member_invite(
            caller=Caller(user=alice), organization=acme, email="n@x.example", role="member"
        )
    expected = (tenant_tasks.invitation_email_send.delay, {"invitation_id": str(invitation.pk)})
    assert queued(callbacks) == [expected]


def test_a_refused_project_queues_nothing(alice, acme, ai_dev, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(ValidationError):
        services.project_create(
            caller=Caller(user=alice), organization=acme, slug="ai-dev", name="Again"
        )
    assert callbacks == []
