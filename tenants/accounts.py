"""Users are their e-mail addresses: the username Django keeps is internal (made unique from the
address at sign-up) and never shown. django-allauth's mails leave as all the portal's do."""

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core import context as allauth_context
from django.conf import settings
from django.contrib.sites.shortcuts import get_current_site

from portal.mail import mail_deliver


def user_display(user) -> str:
    """How a user is named to people: allauth's messages ("Successfully signed in as …"),
    admin's lists and choices, audit labels."""
    return user.email or user.get_username()


class AccountAdapter(DefaultAccountAdapter):
    """allauth's mails (sign-up confirmation, password reset, …) are rendered by allauth from
    its templates and handed to the mail backend by the portal's one mail helper. They are
    sent in the request that asks for them, whose writes are committed by then (allauth holds
    no transaction open around a send), and not keyed as events: a user who asks for another
    link is sent another, within allauth's rate limits."""

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        request = allauth_context.request
        defaults = {"request": request, "email": email, "current_site": get_current_site(request)}
        mail_deliver(self.render_mail(template_prefix, email, defaults | context))


def sso_providers() -> dict[str, str]:
    """The portal's OpenID Connect providers as configured (settings), provider_id → name."""
    providers = settings.SOCIALACCOUNT_PROVIDERS.get("openid_connect", {})
    return {app["provider_id"]: app["name"] for app in providers.get("APPS", [])}
