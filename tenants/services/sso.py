"""Single sign-on required of an organization's members: set by its owner, audited.

Where it is enforced: `tenants.permissions` (each access to the organization by a console
session); which addresses its invitations may go to: `members.member_invite`.
"""

import re

from django.core.exceptions import ValidationError
from django.db import transaction

from portal.errors import Conflict

from ..accounts import sso_providers
from ..models import Organization
from ..permissions import Action, Caller, authorize
from .audit import audit_record


class SsoLockout(Conflict):
    """A requirement that would shut out the owner who sets it."""

    code = "sso_would_lock_out"


# A DNS name of at least two labels, at most 253 characters (the API's schema states it too);
# kept lowercase, as e-mail domains compare without case.
DOMAIN_PATTERN = r"^([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$"
DOMAIN_MAX = 253


def sso_domains_parsed(domains: list[str]) -> list[str]:
    """The allowed e-mail domains, lowercase, sorted, each once; an invalid one is a field
    error."""
    parsed = sorted({domain.strip().lower().lstrip("@") for domain in domains if domain.strip()})
    invalid = [
        domain
        for domain in parsed
        if len(domain) > DOMAIN_MAX or not re.fullmatch(DOMAIN_PATTERN, domain)
    ]
    if invalid:
        raise ValidationError({"domains": f"Not an e-mail domain: {', '.join(invalid)}."})
    return parsed


@transaction.atomic
def organization_sso_set(
    *, caller: Caller, organization: Organization, provider: str, domains: list[str]
) -> Organization:
    """Require single sign-on through ``provider`` (empty: no longer require it) and allow
    invitations to ``domains`` only (empty: any). The owner who requires it must be able to
    come back: signed in through that provider, with an address of an allowed domain."""
    authorize(caller=caller, organization=organization, action=Action.SSO_MANAGE)
    domains = sso_domains_parsed(domains)
    if provider:
        if provider not in sso_providers():
            raise ValidationError(
                {"provider": f"No single sign-on provider {provider!r} is configured."}
            )
        if caller.signed_in_with is not None and provider not in caller.signed_in_with:
            raise SsoLockout(
                "Sign in through this provider first: requiring it now would lock you out of"
                " the organization."
            )
    domain = caller.user.email.rpartition("@")[2].lower()
    if domains and domain not in domains:
        raise SsoLockout(
            f"Your own address ({caller.user.email}) is not of an allowed domain: add"
            f" {domain}, or you could not be invited back."
        )
    changes = {
        field: {"from": getattr(organization, field), "to": value}
        for field, value in (("sso_provider", provider), ("sso_domains", domains))
        if getattr(organization, field) != value
    }
    organization.sso_provider, organization.sso_domains = provider, domains
    if changes:
        organization.save(update_fields=["sso_provider", "sso_domains", "updated_at"])
        audit_record(
            caller=caller,
            organization=organization,
            action="organization.sso_set",
            target=organization,
            payload=changes,
        )
    return organization
