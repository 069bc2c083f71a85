"""Mail about a request that moves through states: its requester is told where it stands, and
the operators too while it waits for them."""

from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.template.loader import render_to_string


def operator_emails() -> list[str]:
    """Whom a request waiting for an operator is mailed to: active staff."""
    return list(
        get_user_model()
        .objects.filter(is_staff=True, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
    )


def mail_where_it_stands(
    *, requester, waits_for_operators: bool, subject: str, template: str, context: dict
) -> bool:
    """Mail ``template`` to the requester (a user, or None) and, when ``waits_for_operators``,
    to the operators, each once; False when there is nobody to tell."""
    recipients = [requester.email] if requester is not None and requester.email else []
    if waits_for_operators:
        recipients += operator_emails()
    if not recipients:
        return False
    send_mail(
        subject=subject,
        message=render_to_string(template, context),
        from_email=None,
        recipient_list=sorted(set(recipients)),
    )
    return True
