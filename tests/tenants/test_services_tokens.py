from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from tenants import services
from tenants.models import ApiToken, AuditEvent
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def test_only_a_digest_of_the_secret_is_stored(mia, acme):
    token, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    stored = ApiToken.objects.get(pk=token.pk)
    assert secret not in (stored.digest, stored.prefix)
    assert secret.startswith(f"gcp_{stored.prefix}_")


def test_a_token_authenticates_its_owner(mia, acme):
    _, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    assert services.token_authenticate(secret=secret).owner == mia


def test_authenticating_records_when_the_token_was_last_used(mia, acme):
    token, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    services.token_authenticate(secret=secret)
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_tampered_secret_is_refused(mia, acme):
    _, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    with pytest.raises(PermissionDenied, match="Invalid"):
        services.token_authenticate(secret=secret[:-2] + "xx")


def test_a_malformed_secret_is_refused(db):
    with pytest.raises(PermissionDenied, match="Malformed"):
        services.token_authenticate(secret="hello")


def test_a_revoked_token_is_refused(mia, acme):
    token, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    services.token_revoke(caller=Caller(user=mia), token=token)
    with pytest.raises(PermissionDenied, match="revoked"):
        services.token_authenticate(secret=secret)


def test_an_expired_token_is_refused(mia, acme):
    token, secret = services.token_issue(
        caller=Caller(user=mia),
        organization=acme,
        name="ci",
        expires_at=timezone.now() + timedelta(hours=1),
    )
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    with pytest.raises(PermissionDenied, match="expired"):
        services.token_authenticate(secret=secret)


def test_an_expiry_in_the_past_is_a_field_error(mia, acme):
    with pytest.raises(ValidationError) as error:
        services.token_issue(
            caller=Caller(user=mia),
            organization=acme,
            name="ci",
            expires_at=timezone.now() - timedelta(minutes=1),
        )
    assert "expires_at" in error.value.message_dict


def test_a_viewer_cannot_issue_a_write_token(vic, acme):
    with pytest.raises(PermissionDenied):
        services.token_issue(caller=Caller(user=vic), organization=acme, name="ci", scope="write")
    assert not ApiToken.objects.exists()


def test_a_member_cannot_revoke_someone_elses_token(mia, adam, acme):
    token, _ = services.token_issue(caller=Caller(user=adam), organization=acme, name="ci")
    with pytest.raises(PermissionDenied):
        services.token_revoke(caller=Caller(user=mia), token=token)
    token.refresh_from_db()
    assert token.state() == "active"


def test_an_admin_can_revoke_a_members_token(mia, adam, acme):
    token, _ = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    services.token_revoke(caller=Caller(user=adam), token=token)
    token.refresh_from_db()
    assert token.state() == "revoked"


def test_revoking_twice_writes_one_audit_event(mia, acme):
    token, _ = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    services.token_revoke(caller=Caller(user=mia), token=token)
    services.token_revoke(caller=Caller(user=mia), token=token)
    assert AuditEvent.objects.filter(action="token.revoke").count() == 1


def test_a_token_of_a_deactivated_user_is_refused(mia, acme):
    _, secret = services.token_issue(caller=Caller(user=mia), organization=acme, name="ci")
    mia.is_active = False
    mia.save()
    with pytest.raises(PermissionDenied, match="deactivated"):
        services.token_authenticate(secret=secret)


def test_an_action_through_a_token_names_the_token_in_the_audit_trail(alice, acme, token_for):
    token, _ = token_for(alice, acme)
    services.project_create(
        caller=Caller(user=alice, token=token), organization=acme, slug="p1", name="P"
    )
    assert AuditEvent.objects.get(action="project.create").via_token == token
