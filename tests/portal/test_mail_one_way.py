"""One way to send mail: only the kernel's mail helper (portal/mail.py) hands mail to Django,
each event's mail is one template that carries its subject, and django-allauth's mails leave
through the helper too."""

import ast
import re
from pathlib import Path

import pytest
from allauth.account.adapter import get_adapter

from portal.celery import app
from portal.mail import mail_render, mail_where_it_stands
from tenants.accounts import AccountAdapter

from ..factories import UserFactory
from ..queued import MAIL_TASKS

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("portal", "tenants", "scheduling", "billing", "webhooks")
HELPER = "portal/mail.py"
MAIL_MODULE = "django.core.mail"
# Django's shortcuts that send mail themselves.
SENDING_NAMES = {"send_mail", "send_mass_mail", "mail_admins", "mail_managers"}
EVENT_TEMPLATES = sorted(
    path.relative_to(ROOT / "templates").as_posix()
    for path in (ROOT / "templates").glob("*/email/*.txt")
    if not path.name.startswith("_")  # a part the event templates extend
)


def _imports_mail(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.startswith(MAIL_MODULE) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if module == "django.core":
            return any(alias.name == "mail" for alias in node.names)
        return module.startswith(MAIL_MODULE)
    return False


def _sends(node: ast.AST) -> bool:
    """A call of a sending shortcut, or of a message's own ``send()`` (which takes nothing but
    ``fail_silently``; a signal's ``send`` takes its sender)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in SENDING_NAMES:
        return True
    own_send = isinstance(func, ast.Attribute) and func.attr in ("send", "send_messages")
    return (
        own_send
        and all(keyword.arg == "fail_silently" for keyword in node.keywords)
        and (not node.args or func.attr == "send_messages")
    )


def mail_senders(root: Path) -> list[str]:
    """Every import of Django's mail module and every send of a mail outside the helper."""
    found = []
    for top in SOURCES:
        for path in sorted((root / top).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where == HELPER:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=where)):
                if _imports_mail(node):
                    found.append(f"{where}:{node.lineno} imports {MAIL_MODULE}")
                elif _sends(node):
                    found.append(f"{where}:{node.lineno} sends mail")
    return found


def test_no_module_but_the_mail_helper_sends_mail():
    assert mail_senders(ROOT) == []


@pytest.mark.parametrize(
    "source",
    [
        "from django.core.mail import send_mail\n",
        "from django.core import mail\n",
        "import django.core.mail\n",
        "from django.core.mail.message import EmailMessage\n",
        "def f(message):\n    message.send()\n",
        "def f(message):\n    message.send(fail_silently=True)\n",
        "def f(connection, messages):\n    connection.send_messages(messages)\n",
        "import django\n\ndef f():\n    django.core.mail.send_mail('s', 'b', None, ['a@x'])\n",
    ],
    ids=[
        "send-mail",
        "mail-module",
        "import-mail-module",
        "email-message",
        "message-send",
        "message-send-quietly",
        "connection-send",
        "dotted-send-mail",
    ],
)
def test_a_mail_sent_outside_the_helper_is_caught(tmp_path, source):
    for top in SOURCES:
        (tmp_path / top).mkdir()
    (tmp_path / "billing" / "x.py").write_text(source)
    assert len(mail_senders(tmp_path)) == 1


def test_a_signal_sent_is_no_mail(tmp_path):
    for top in SOURCES:
        (tmp_path / top).mkdir()
    (tmp_path / "tenants" / "x.py").write_text("def f(signal):\n    signal.send(sender=f)\n")
    assert mail_senders(tmp_path) == []


def test_the_helper_itself_may_send(tmp_path):
    for top in SOURCES:
        (tmp_path / top).mkdir()
    (tmp_path / "portal" / "mail.py").write_text("from django.core.mail import EmailMessage\n")
    assert mail_senders(tmp_path) == []


def _source(template: str) -> str:
    """The template's text, or the text of the template it extends."""
    text = (ROOT / "templates" / template).read_text()
    extended = re.match(r'{% extends "([^"]+)" %}', text)
    return _source(extended.group(1)) if extended else text


@pytest.mark.parametrize("template", EVENT_TEMPLATES)
def test_each_event_template_begins_with_its_subject(template):
    assert _source(template).removeprefix("{% autoescape off %}").startswith("Subject: ")


def test_a_template_without_a_subject_line_is_refused(settings):
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [("django.template.loaders.locmem.Loader", {"x.txt": "Hello\n\nBody"})]
            },
        }
    ]
    with pytest.raises(ValueError, match="Subject"):
        mail_render("x.txt", {})


@pytest.mark.django_db
def test_an_event_of_a_request_without_a_template_mails_nobody(mailoutbox):
    requester = UserFactory(email="r@x.example")
    sent = mail_where_it_stands(
        key="order:1:draft",
        requester=requester,
        waits_for_operators=True,
        template="billing/email/order_draft.txt",
        context={},
    )
    assert (sent, mailoutbox) == (0, [])


def test_every_task_that_mails_runs_on_the_mail_queue():
    app.loader.import_default_modules()
    senders = sorted(name for name in app.tasks if name.endswith("_email_send"))
    queues = {app.amqp.router.route({}, name)["queue"].name.rsplit("-", 1)[1] for name in senders}
    assert (senders, queues) == (sorted(MAIL_TASKS), {"mail"})


def test_allauths_mails_leave_through_the_portals_adapter():
    assert isinstance(get_adapter(), AccountAdapter)
