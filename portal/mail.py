"""The one way the portal sends mail: one mail per event and recipient, never twice.

A service that tells people about an event calls `mail_send` with the event's key (what
happened to which object, e.g. ``order:<id>:approved``): each recipient that has not had that
key yet is mailed and recorded (`SentMail`, unique by key and recipient) in one transaction,
so a repeated call or a retried task sends nothing more, and a failed send records nothing (the
retry sends it). It is called from tasks, which run after the event's transaction committed:
mail never tells of a write that was rolled back."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string

from . import clock
from .models import SentMail


def operator_emails() -> list[str]:
    """Whom a request waiting for an operator is mailed to: active staff."""
    return list(
        get_user_model()
        .objects.filter(is_staff=True, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
    )


def mail_send(
    *, key: str, recipients: Iterable[str], subject: str, template: str, context: dict
) -> int:
    """Mail ``template`` rendered with ``context`` to each of ``recipients`` (one mail each)
    that was not yet sent the event ``key``; how many were mailed now."""
    addresses = sorted(
        {r.strip().lower(): r.strip() for r in recipients if r and r.strip()}.items()
    )
    if not addresses:
        return 0
    body = render_to_string(template, context)
    sent = 0
    for recipient, address in addresses:
        try:
            with transaction.atomic():
                SentMail.objects.create(
                    key=key[:200],
                    recipient=recipient,
                    subject=subject[:300],
                    sent_at=clock.wall(),
                )
                send_mail(subject=subject, message=body, from_email=None, recipient_list=[address])
        except IntegrityError:  # sent already (or being sent by another run right now)
            continue
        sent += 1
    return sent


def mail_where_it_stands(
    *,
    key: str,
    requester,
    waits_for_operators: bool,
    subject: str,
    template: str,
    context: dict,
) -> int:
    """Mail an event of a request to its requester (a user, or None) and, when
    ``waits_for_operators``, to the operators: each once (`mail_send`)."""
    recipients = [requester.email] if requester is not None and requester.email else []
    if waits_for_operators:
        recipients += operator_emails()
    return mail_send(
        key=key, recipients=recipients, subject=subject, template=template, context=context
    )
