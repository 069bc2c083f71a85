import pytest

from tenants.models import Invitation

from .conftest import wait_for

pytestmark = pytest.mark.worker


def test_an_invitation_made_in_the_api_is_mailed_by_a_real_worker(
    alice, acme, api_as, celery_worker
):
    response = api_as(alice).post(
        "/api/v1/organizations/acme/invitations/", {"email": "new@acme.example"}, format="json"
    )
    assert response.status_code == 201
    invitation = wait_for(
        lambda: Invitation.objects.filter(pk=response.json()["id"], sent_at__isnull=False).first()
    )
    mailed = "".join(path.read_text() for path in celery_worker.iterdir())
    assert "To: new@acme.example" in mailed
    assert "/invitations/" in mailed
    assert invitation.state() == "pending"
