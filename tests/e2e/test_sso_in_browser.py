"""Single sign-on through a real OpenID Connect provider (panva's node-oidc-provider, started
by the `oidc_provider` fixture: tests/e2e/oidc.py), in Chromium.

The first sign-in through the provider creates the user with its verified address; the next
signs the same user in; a verified address of an existing local account signs in to (and is
connected to) that account. An owner requires single sign-on for an organization; its members
then reach it only through the provider (a password session is refused that organization, not
the portal), an invited address of an allowed domain joins through it, and an API token of an
SSO user works until it is revoked, whatever the session does. Screenshots go to
var/test-artifacts/sso_*.png (to look at, not compared)."""

import json
import urllib.error
import urllib.request

import pytest

from ..factories import PASSWORD, MembershipFactory, OrganizationFactory, UserFactory
from .browser import ARTIFACTS
from .oidc import PROVIDER_ID, signed_in_through_provider

pytestmark = pytest.mark.e2e


def shoot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"sso_{name}.png"), full_page=True)


def fresh_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


@pytest.fixture
def corp(transactional_db):
    """An organization that requires single sign-on through the provider, for corp.example."""
    return OrganizationFactory(
        slug="corp", name="Corp", sso_provider=PROVIDER_ID, sso_domains=["corp.example"]
    )


def test_a_first_sign_in_through_the_provider_creates_the_user_with_a_verified_address(
    sso, page, transactional_db
):
    from allauth.account.models import EmailAddress

    signed_in_through_provider(page, "ada")
    page.wait_for_url("**/")
    shoot(page, "first_sign_in")

    address = EmailAddress.objects.get(email="ada@corp.example")
    assert address.verified and address.user.socialaccount_set.get().uid == "ada"


def test_an_address_the_provider_has_not_verified_is_confirmed_by_mail_first(
    sso, page, mailoutbox, transactional_db
):
    from allauth.account.models import EmailAddress

    signed_in_through_provider(page, "eve")
    page.wait_for_url("**/accounts/confirm-email/")

    assert not EmailAddress.objects.get(email="eve@corp.example").verified
    assert [message.to for message in mailoutbox] == [["eve@corp.example"]]


def test_a_second_sign_in_with_the_same_identity_signs_the_same_user_in(
    sso, browser, live_server, transactional_db
):
    from django.contrib.auth import get_user_model

    first = signed_in_through_provider(fresh_page(browser, live_server), "ada")
    first.wait_for_url("**/")
    second = signed_in_through_provider(fresh_page(browser, live_server), "ada")
    second.wait_for_url("**/")

    assert "Successfully signed in as ada@corp.example" in second.content()
    assert list(get_user_model().objects.values_list("email", flat=True)) == ["ada@corp.example"]


def test_a_verified_address_of_an_existing_account_signs_in_to_it_and_connects_to_it(
    sso, page, transactional_db
):
    grace = UserFactory(email="grace@corp.example")

    signed_in_through_provider(page, "grace")
    page.wait_for_url("**/")

    assert page.get_by_text("grace@corp.example").first.is_visible()
    assert grace.socialaccount_set.get().uid == "grace"


def test_an_owner_signed_in_through_the_provider_requires_it_for_the_organization(
    sso, page, transactional_db
):
    from tenants import services
    from tenants.models import AuditEvent, Organization
    from tenants.permissions import Caller

    signed_in_through_provider(page, "ada")
    page.wait_for_url("**/")
    ada = UserFactory._meta.model.objects.get(email="ada@corp.example")
    services.organization_create(caller=Caller(user=ada), slug="corp", name="Corp")

    page.goto("/orgs/corp/")
    page.get_by_label("Require sign-in through").select_option(label="Corp SSO")
    page.get_by_label("Allowed e-mail domains").fill("corp.example")
    page.get_by_role("button", name="Save single sign-on").click()
    page.get_by_text("Single sign-on settings saved.").wait_for()
    shoot(page, "required")

    corp = Organization.objects.get(slug="corp")
    assert (corp.sso_provider, corp.sso_domains) == (PROVIDER_ID, ["corp.example"])
    assert AuditEvent.objects.filter(organization=corp, action="organization.sso_set").exists()


def test_a_member_signed_in_with_a_password_is_refused_the_organization_that_requires_sso(
    sso, corp, open_as
):
    grace = UserFactory(email="grace@corp.example")
    MembershipFactory(organization=corp, user=grace, role="member")
    MembershipFactory(organization=OrganizationFactory(slug="lab"), user=grace, role="member")

    page = open_as("grace@corp.example", PASSWORD)
    response = page.goto("/orgs/corp/")
    shoot(page, "password_refused")

    assert response.status == 403
    assert "requires single sign-on" in page.content()
    assert page.goto("/orgs/lab/").status == 200


def test_a_member_signed_in_through_the_provider_reaches_the_organization(sso, corp, page):
    grace = UserFactory(email="grace@corp.example")
    MembershipFactory(organization=corp, user=grace, role="member")

    signed_in_through_provider(page, "grace")
    page.wait_for_url("**/")

    assert page.goto("/orgs/corp/").status == 200


def test_an_invited_address_of_an_allowed_domain_signs_up_through_the_provider_and_joins(
    sso, corp, page
):
    from tenants import services
    from tenants.permissions import Caller

    owner = UserFactory(email="owner@corp.example")
    MembershipFactory(organization=corp, user=owner, role="owner")
    invitation = services.member_invite(
        caller=Caller(user=owner), organization=corp, email="linus@corp.example", role="member"
    )

    page.goto(f"/invitations/{services.invitation_token(invitation)}/")
    page.get_by_role("link", name="sign in", exact=True).click()
    signed_in_through_provider(page, "linus", from_login_page=True)
    page.get_by_role("button", name="Accept invitation").click()
    page.wait_for_url("**/orgs/corp/")
    shoot(page, "joined")

    assert corp.memberships.filter(user__email="linus@corp.example", role="member").exists()


def api_status(live_server, secret: str, path: str = "/api/v1/organizations/corp/") -> int:
    request = urllib.request.Request(
        live_server.url + path, headers={"Authorization": f"Bearer {secret}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            json.load(answer)
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_an_api_token_of_an_sso_user_works_after_sign_out_until_revoked(
    sso, corp, page, live_server
):
    from tenants import services
    from tenants.permissions import Caller

    grace = UserFactory(email="grace@corp.example")
    MembershipFactory(organization=corp, user=grace, role="member")
    signed_in_through_provider(page, "grace")
    page.wait_for_url("**/")

    page.goto("/orgs/corp/tokens/")
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Issue token").click()
    secret = page.locator("#issued-secret").inner_text().strip()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/login/**")
    assert api_status(live_server, secret) == 200

    services.token_revoke(caller=Caller(user=grace), token=grace.api_tokens.get())
    assert api_status(live_server, secret) == 401
