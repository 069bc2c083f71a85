"""The verification snippet of docs/api/webhooks.md, run as a receiver would run it, against
a real delivery the local receiver got: it accepts it, and refuses it tampered with, signed
with another secret, or replayed later."""

import re
from pathlib import Path

import pytest

from webhooks import services

from .conftest import received

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_private")]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api" / "webhooks.md"


@pytest.fixture(scope="module")
def verify():
    """The documented `verify`, taken from the page's code block marked as run by this test."""
    text = PAGE.read_text()
    [code] = re.findall(r"<!-- verify-snippet:[^>]*-->\n```python\n(.*?)```", text, re.S)
    namespace: dict = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace["verify"]


@pytest.fixture
def delivery(httpserver, register, delivered_workload):
    """(secret, headers, body) of a delivery as the receiver got it."""
    httpserver.expect_request("/hook").respond_with_data("ok")
    _, secret = register(httpserver.url_for("/hook"))
    [made] = delivered_workload()
    services.delivery_attempt(delivery_id=made.pk)
    [(headers, _, body)] = received(httpserver)
    return secret, headers, body


def test_the_documented_check_accepts_a_real_delivery(verify, delivery):
    secret, headers, body = delivery
    assert verify(secret, headers, body) is True


def test_the_documented_check_refuses_a_changed_body(verify, delivery):
    secret, headers, body = delivery
    assert verify(secret, headers, body.replace(b'"acme"', b'"evil"')) is False


def test_the_documented_check_refuses_another_secret(verify, delivery):
    _, headers, body = delivery
    assert verify("whsec_someone-elses-secret", headers, body) is False


def test_the_documented_check_refuses_a_delivery_replayed_ten_minutes_later(verify, delivery):
    secret, headers, body = delivery
    later = int(headers["Portal-Webhook-Timestamp"]) + 600
    assert verify(secret, headers, body, now=later) is False
