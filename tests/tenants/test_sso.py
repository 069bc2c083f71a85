"""An organization's single sign-on requirement: who reaches it, who sets it, whom it invites.

A console session carries the providers it signed in through (`Caller.signed_in_with`); the
browser tests (tests/e2e/test_sso_in_browser.py) sign in through a real provider."""

import json

import pytest
from django.core.exceptions import ValidationError

from portal.errors import Forbidden
from portal.settings.base import oidc_apps
from tenants import selectors, services
from tenants.models import AuditEvent, Role
from tenants.permissions import Caller, SsoRequired
from tenants.services.sso import SsoLockout

from ..factories import MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/"
THROUGH_CORP = frozenset({"corp"})
WITH_PASSWORD = frozenset()


@pytest.fixture(autouse=True)
def corp_configured(settings):
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "APPS": oidc_apps(
                {
                    "PORTAL_OIDC_PROVIDERS": json.dumps(
                        [{"id": "corp", "server_url": "https://idp.example", "client_id": "p"}]
                    )
                }
            )
        }
    }


@pytest.fixture
def acme_requires_corp(acme, alice):
    return services.organization_sso_set(
        caller=Caller(user=alice, signed_in_with=THROUGH_CORP),
        organization=acme,
        provider="corp",
        domains=["acme.example"],
    )


def test_a_member_signed_in_with_a_password_is_refused_the_organization_by_name(
    acme_requires_corp, mia
):
    with pytest.raises(SsoRequired, match="requires single sign-on"):
        selectors.organization_get(
            caller=Caller(user=mia, signed_in_with=WITH_PASSWORD), slug="acme"
        )


def test_a_member_signed_in_through_the_required_provider_reaches_the_organization(
    acme_requires_corp, mia
):
    caller = Caller(user=mia, signed_in_with=THROUGH_CORP)
    assert selectors.organization_get(caller=caller, slug="acme").my_role == Role.MEMBER


def test_a_password_session_still_reaches_the_members_other_organizations(
    acme_requires_corp, ai_dev, mia, globex
):
    MembershipFactory(organization=globex, user=mia, role=Role.MEMBER)
    caller = Caller(user=mia, signed_in_with=WITH_PASSWORD)
    assert [org.slug for org in selectors.organization_list(caller=caller)] == ["globex"]
    assert [p.organization.slug for p in selectors.project_list(caller=caller)] == []


def test_a_password_session_is_refused_writes_to_the_organization(acme_requires_corp, adam):
    with pytest.raises(SsoRequired):
        services.project_create(
            caller=Caller(user=adam, signed_in_with=WITH_PASSWORD),
            organization=acme_requires_corp,
            slug="vision",
            name="Vision",
        )


def test_a_stranger_still_gets_a_404_not_the_sso_refusal(acme_requires_corp, otto, api_as):
    response = api_as(otto).get(URL)
    assert response.status_code == 404


def test_the_api_refuses_a_password_session_with_the_sso_required_code(
    acme_requires_corp, mia, api_as
):
    response = api_as(mia).get(URL)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "sso_required"


def test_an_api_token_of_a_member_keeps_working_when_sso_becomes_required(
    acme, alice, mia, token_for
):
    _, client = token_for(mia, acme, scope="read")
    services.organization_sso_set(
        caller=Caller(user=alice, signed_in_with=THROUGH_CORP),
        organization=acme,
        provider="corp",
        domains=[],
    )
    assert client.get(URL).status_code == 200


def test_requiring_sso_is_audited_with_what_changed(acme_requires_corp, alice):
    event = AuditEvent.objects.get(action="organization.sso_set")
    assert (event.actor, event.payload) == (
        alice,
        {
            "sso_provider": {"from": "", "to": "corp"},
            "sso_domains": {"from": [], "to": ["acme.example"]},
        },
    )


def test_an_admin_may_not_require_sso(acme, adam):
    with pytest.raises(Forbidden):
        services.organization_sso_set(
            caller=Caller(user=adam, signed_in_with=THROUGH_CORP),
            organization=acme,
            provider="corp",
            domains=[],
        )


@pytest.mark.parametrize(
    ("provider", "domains", "field"),
    [("nowhere", [], "provider"), ("corp", ["not a domain"], "domains")],
    ids=["unknown provider", "invalid domain"],
)
def test_an_unknown_provider_or_an_invalid_domain_is_refused_on_its_field(
    acme, alice, provider, domains, field
):
    with pytest.raises(ValidationError) as refused:
        services.organization_sso_set(
            caller=Caller(user=alice, signed_in_with=THROUGH_CORP),
            organization=acme,
            provider=provider,
            domains=domains,
        )
    assert list(refused.value.message_dict) == [field]


@pytest.mark.parametrize(
    ("domains", "signed_in_with"),
    [([], WITH_PASSWORD), (["other.example"], THROUGH_CORP)],
    ids=["owner not signed in through it", "owner's address outside the domains"],
)
def test_a_requirement_that_would_lock_the_owner_out_is_refused_and_changes_nothing(
    acme, alice, domains, signed_in_with
):
    with pytest.raises(SsoLockout):
        services.organization_sso_set(
            caller=Caller(user=alice, signed_in_with=signed_in_with),
            organization=acme,
            provider="corp",
            domains=domains,
        )
    acme.refresh_from_db()
    assert (acme.sso_provider, acme.sso_domains) == ("", [])


def test_domains_are_kept_lowercase_sorted_and_once(acme, alice):
    services.organization_sso_set(
        caller=Caller(user=alice),
        organization=acme,
        provider="",
        domains=["Acme.Example", "@b.example", "acme.example"],
    )
    acme.refresh_from_db()
    assert acme.sso_domains == ["acme.example", "b.example"]


def test_invitations_go_to_the_allowed_domains_only(acme_requires_corp, alice):
    caller = Caller(user=alice, signed_in_with=THROUGH_CORP)
    with pytest.raises(ValidationError) as refused:
        services.member_invite(
            caller=caller, organization=acme_requires_corp, email="eve@gmail.example", role="member"
        )
    assert list(refused.value.message_dict) == ["email"]
    invited = services.member_invite(
        caller=caller, organization=acme_requires_corp, email="new@ACME.example", role="member"
    )
    assert invited.email == "new@ACME.example"


@pytest.mark.parametrize(
    ("role", "shown"), [("owner", True), ("admin", True), ("member", False), ("viewer", False)]
)
def test_the_organization_detail_shows_the_requirement_to_owners_and_admins_only(
    acme_requires_corp, actors, token_for, role, shown
):
    _, client = token_for(actors[role], acme_requires_corp, scope="read")
    sso = client.get(URL).json()["sso"]
    assert sso == ({"provider": "corp", "domains": ["acme.example"]} if shown else None)


def test_the_api_sets_the_requirement_through_an_owners_token(acme, alice, token_for):
    _, client = token_for(alice, acme)
    response = client.put(f"{URL}sso/", {"provider": "corp", "domains": []}, format="json")
    assert (response.status_code, response.json()["sso"]) == (
        200,
        {"provider": "corp", "domains": []},
    )


def test_an_owners_token_clears_a_requirement_whose_provider_is_gone(
    acme_requires_corp, alice, token_for, settings
):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    _, client = token_for(alice, acme_requires_corp)
    response = client.put(f"{URL}sso/", {"provider": "", "domains": []}, format="json")
    assert (response.status_code, response.json()["sso"]) == (200, {"provider": "", "domains": []})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"domains": []}, "provider"),
        ({"provider": "corp"}, "domains"),
        ({"provider": "corp", "domains": "acme.example"}, "domains"),
        ({"provider": "nowhere", "domains": []}, "provider"),
        ({"provider": "", "domains": ["-bad-.example"]}, "domains.0"),
    ],
)
def test_invalid_sso_input_is_a_400_naming_the_field(acme, alice, token_for, body, field):
    _, client = token_for(alice, acme)
    response = client.put(f"{URL}sso/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [field]


def test_no_provider_is_configured_by_default():
    assert oidc_apps({}) == []


def test_the_single_provider_variables_still_configure_one_provider():
    (app,) = oidc_apps(
        {
            "OIDC_SERVER_URL": "https://login.example/realms/gpu",
            "OIDC_CLIENT_ID": "portal",
            "OIDC_CLIENT_SECRET": "s",
        }
    )
    assert (app["provider_id"], app["name"], app["settings"]["server_url"]) == (
        "sso",
        "Single sign-on",
        "https://login.example/realms/gpu",
    )


def test_several_providers_come_from_portal_oidc_providers():
    given = [
        {
            "id": "entra",
            "name": "Microsoft",
            "server_url": "https://a.example/v2.0",
            "client_id": "a",
        },
        {"id": "okta", "server_url": "https://b.example", "client_id": "b", "secret": "x"},
    ]
    apps = oidc_apps({"PORTAL_OIDC_PROVIDERS": json.dumps(given)})
    assert [(app["provider_id"], app["name"], app["secret"]) for app in apps] == [
        ("entra", "Microsoft", ""),
        ("okta", "okta", "x"),
    ]
