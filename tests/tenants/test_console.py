"""The web console's tenancy pages, through Django's test client."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail

from tenants import services
from tenants.models import ApiToken, Membership, Organization, Project
from tenants.permissions import Caller

from ..factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in


def test_the_console_asks_an_anonymous_visitor_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_the_home_page_lists_the_users_organizations_only(alice, bruno, signed_in):
    page = signed_in(alice).get("/").content.decode()
    assert "Acme AI" in page
    assert "Globex" not in page


def test_creating_an_organization_from_the_console_opens_it(otto, signed_in):
    response = signed_in(otto).post("/", {"name": "Initech", "slug": "initech"})
    assert response.status_code == 302
    assert response.url == "/orgs/initech/"
    assert Organization.objects.get(slug="initech").memberships.get().user == otto


def test_a_bad_slug_in_the_console_shows_the_error_on_the_form(otto, signed_in):
    response = signed_in(otto).post("/", {"name": "Initech", "slug": "Init Tech"})
    assert response.status_code == 200
    assert response.context["form"].errors["slug"]


def test_an_admin_creates_a_project_from_the_organization_page(adam, acme, signed_in):
    client = signed_in(adam)
    client.post("/orgs/acme/", {"create_project": "", "name": "Vision", "slug": "vision"})
    assert Project.objects.get(slug="vision").namespace == "acme-vision"


def test_a_member_sees_no_project_form_and_cannot_post_one(mia, acme, signed_in):
    client = signed_in(mia)
    assert "Create project" not in client.get("/orgs/acme/").content.decode()
    response = client.post(
        "/orgs/acme/", {"create_project": "", "name": "Vision", "slug": "vision"}, follow=True
    )
    assert "does not allow" in response.content.decode()
    assert not Project.objects.exists()


def test_another_tenants_organization_page_is_a_404(bruno, acme, signed_in):
    assert signed_in(bruno).get("/orgs/acme/").status_code == 404


PROJECT = "/orgs/acme/projects/ai-dev/"


def test_an_owner_may_delete_a_project_from_its_page(alice, ai_dev, signed_in):
    page = signed_in(alice).get(PROJECT).content.decode()
    assert ("acme-ai-dev" in page, "Delete project" in page) == (True, True)


def test_a_member_sees_a_project_but_may_not_delete_it(mia, ai_dev, signed_in):
    page = signed_in(mia).get(PROJECT).content.decode()
    assert ("acme-ai-dev" in page, "Delete project" in page) == (True, False)


def test_another_tenants_project_page_is_a_404(bruno, ai_dev, signed_in):
    assert signed_in(bruno).get(PROJECT).status_code == 404


def test_issuing_a_token_shows_its_secret_once(mia, acme, signed_in):
    client = signed_in(mia)
    page = client.post(
        "/orgs/acme/tokens/", {"name": "laptop", "scope": "read"}, follow=True
    ).content.decode()
    secret = re.search(r'<pre id="issued-secret">([^<]+)</pre>', page).group(1)
    assert ApiToken.objects.get().prefix in secret
    assert secret not in client.get("/orgs/acme/tokens/").content.decode()


def test_the_audit_page_is_refused_to_a_member(mia, acme, signed_in):
    assert signed_in(mia).get("/orgs/acme/audit/").status_code == 403


def test_an_owner_changes_a_role_from_the_members_table(alice, mia, acme, signed_in):
    membership = Membership.objects.get(user=mia)
    signed_in(alice).post(f"/orgs/acme/members/{membership.pk}/role/", {"role": "viewer"})
    membership.refresh_from_db()
    assert membership.role == "viewer"


def test_an_invitation_link_lets_a_newcomer_sign_up_without_a_second_email_check(
    alice, acme, client
):
    invitation = services.member_invite(
        caller=Caller(user=alice), organization=acme, email="new@acme.example", role="member"
    )
    link = services.invitation_url(invitation).removeprefix("http://127.0.0.1:8000")
    assert "Create an account" in client.get(link).content.decode()
    response = client.post(
        f"/accounts/signup/?next={link}",
        {"email": "new@acme.example", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert EmailAddress.objects.get(email="new@acme.example").verified
    client.post(link)
    assert Membership.objects.filter(organization=acme, user__email="new@acme.example").exists()


def test_a_plain_sign_up_must_verify_its_email_before_signing_in(client):
    client.post(
        "/accounts/signup/",
        {"email": "solo@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert not EmailAddress.objects.get(email="solo@example.com").verified
    assert "solo@example.com" in mail.outbox[0].to
    assert client.get("/").status_code == 302


def test_signing_in_with_email_and_password_opens_the_console(alice, client):
    response = client.post(
        "/accounts/login/", {"login": "alice@acme.example", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def internal_username(user, name: str):
    """Give the user an internal username as sign-up makes them."""
    user.username = name
    user.save(update_fields=["username"])
    return user


def test_the_signed_in_message_names_the_user_by_e_mail_not_username(alice, client):
    internal_username(alice, "alice-a345ec")
    response = client.post(
        "/accounts/login/", {"login": "alice@acme.example", "password": PASSWORD}, follow=True
    )
    said = [str(m) for m in response.context["messages"]]
    assert (said, alice.username in response.content.decode()) == (
        ["Successfully signed in as alice@acme.example."],
        False,
    )


def test_the_audit_page_names_members_by_e_mail_not_username(alice, acme, mia, client):
    internal_username(mia, "mia-5e1f00")
    membership = acme.memberships.get(user=mia)
    services.member_role_change(caller=Caller(user=alice), membership=membership, role="viewer")
    client.force_login(alice)
    page = client.get("/orgs/acme/audit/").content.decode()
    assert ("mia@acme.example in Acme AI as viewer" in page, mia.username in page) == (
        True,
        False,
    )


def test_a_password_reset_mails_a_link(alice, client):
    client.post("/accounts/password/reset/", {"email": "alice@acme.example"})
    assert "/accounts/password/reset/key/" in mail.outbox[0].body


def test_a_forged_invitation_link_is_a_404_page(client):
    assert client.get("/invitations/forged-token/").status_code == 404


@pytest.fixture
def audited(alice, acme):
    """Two projects created by alice, then a token issued: three events of acme's."""
    for slug in ("one", "two"):
        services.project_create(caller=Caller(user=alice), organization=acme, name=slug, slug=slug)
    services.token_issue(caller=Caller(user=alice), organization=acme, name="ci", scope="read")


def audit_rows(page: str) -> list[str]:
    return re.findall(r"<td><code>([a-z_.]+)</code></td>", page)


def test_the_audit_page_filters_by_action_as_the_api_does(audited, alice, signed_in):
    page = signed_in(alice).get("/orgs/acme/audit/?action=project.create").content.decode()
    assert audit_rows(page) == ["project.create", "project.create"]


def test_the_audit_page_filters_by_actor_in_any_case(audited, alice, signed_in):
    page = signed_in(alice).get("/orgs/acme/audit/?actor=ALICE@acme.example").content.decode()
    assert len(audit_rows(page)) >= 3


def test_an_unreadable_time_filter_is_explained_and_lists_nothing(audited, alice, signed_in):
    page = signed_in(alice).get("/orgs/acme/audit/?since=yesterday").content.decode()
    assert ("No event matches these filters" in page, 'role="alert"' in page) == (True, True)


def test_the_audit_page_pages_fifty_events_at_a_time(alice, acme, signed_in):
    for n in range(51):
        services.project_create(
            caller=Caller(user=alice), organization=acme, name=f"p{n}", slug=f"p{n}"
        )
    page = signed_in(alice).get("/orgs/acme/audit/").content.decode()
    assert (len(audit_rows(page)), "Page 1 of 2" in page) == (50, True)


def test_the_audit_filter_form_sent_with_empty_fields_filters_nothing(audited, alice, signed_in):
    query = {"action": "", "actor": "", "target_type": "", "since": "", "until": ""}
    page = signed_in(alice).get("/orgs/acme/audit/", query).content.decode()
    assert len(audit_rows(page)) >= 3
