"""The one way the portal sends mail: one mail per event and recipient, never twice.

A service that tells people about an event calls `mail_send` with the event's key (what
happened to which object, e.g. ``order:<id>:approved``) and the event's template: each
recipient that has not had that key yet is mailed and recorded (`SentMail`, unique by key and
recipient) in one transaction, so a repeated call or a retried task sends nothing more, and a
failed send records nothing (the retry sends it). It is called from tasks on the ``mail``
queue, which the event's publication queues after its transaction committed: mail never tells
of a write that was rolled back, and no lock on the event's rows is held while the mail
server answers (only the new `SentMail` row's, so that a second run waits, then sends nothing).

An event's template is the whole mail (``templates/<app>/email/<object>_<event>.txt``, which
may extend a part its object's events share, ``_<object>.txt``): its first line is
``Subject: …``, a blank line ends it, and the body follows.

Every message leaves through `mail_deliver`, django-allauth's too (through its
ACCOUNT_ADAPTER): no other module hands mail to Django (a test walks them all)."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

from . import clock
from .models import SentMail

SUBJECT = "Subject: "


def mail_deliver(message: EmailMessage) -> None:
    """Hand one message to the mail backend: the only place the portal does."""
    message.send()


def mail_render(template: str, context: dict) -> tuple[str, str]:
    """The subject and the body of an event's mail: ``template`` rendered with ``context``,
    its ``Subject:`` line (folded onto one line) and what follows the blank line below it."""
    head, _, body = get_template(template).render(context).partition("\n\n")
    if not head.startswith(SUBJECT):
        raise ValueError(f"{template} does not begin with a {SUBJECT!r} line")
    return " ".join(head.removeprefix(SUBJECT).split()), body


def operator_emails() -> list[str]:
    """Whom a request waiting for an operator is mailed to: active staff."""
    return list(
        get_user_model()
        .objects.filter(is_staff=True, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
    )


def mail_send(*, key: str, recipients: Iterable[str], template: str, context: dict) -> int:
    """Mail ``template`` rendered with ``context`` to each of ``recipients`` (one mail each)
    that was not yet sent the event ``key``; how many were mailed now."""
    addresses = sorted(
        {r.strip().lower(): r.strip() for r in recipients if r and r.strip()}.items()
    )
    if not addresses:
        return 0
    subject, body = mail_render(template, context)
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
                mail_deliver(EmailMessage(subject=subject, body=body, to=[address]))
        except IntegrityError:  # sent already (or being sent by another run right now)
            continue
        sent += 1
    return sent


def mail_where_it_stands(
    *, key: str, requester, waits_for_operators: bool, template: str, context: dict
) -> int:
    """Mail an event of a request to its requester (a user, or None) and, when
    ``waits_for_operators``, to the operators: each once (`mail_send`). The events of a
    request that have no template of their own (a draft, an opening) mail nobody."""
    try:
        get_template(template)
    except TemplateDoesNotExist:
        return 0
    recipients = [requester.email] if requester is not None and requester.email else []
    if waits_for_operators:
        recipients += operator_emails()
    return mail_send(key=key, recipients=recipients, template=template, context=context)
