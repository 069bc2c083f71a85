"""Single sign-on through a real OpenID Connect provider (tests/e2e/oidc.py), in Chromium."""

import pytest

from .browser import ARTIFACTS
from .oidc import signed_in_through_provider

pytestmark = pytest.mark.e2e


def shoot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"sso_{name}.png"), full_page=True)


def test_a_first_sign_in_through_the_provider_creates_the_user_with_a_verified_address(
    sso, page, transactional_db
):
    from allauth.account.models import EmailAddress

    signed_in_through_provider(page, "ada")
    page.wait_for_url("**/")
    shoot(page, "first_sign_in")

    address = EmailAddress.objects.get(email="ada@corp.example")
    assert address.verified and address.user.socialaccount_set.get().uid == "ada"
