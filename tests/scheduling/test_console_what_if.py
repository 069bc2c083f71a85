"""The submit form's "Check" button: the what-if's answer on the page, nothing submitted."""

import pytest

from scheduling.models import Workload

from .test_console import FORM, PAGE

pytestmark = pytest.mark.django_db

CHECK = {**FORM, "fallback_gpu_class": "", "check": "1"}


@pytest.fixture
def member(client, quotas, ai_dev, mia, cycle):
    cycle()
    client.force_login(mia)
    return client


def test_check_shows_where_it_would_start_and_submits_nothing(member):
    response = member.post(PAGE, CHECK)
    assert response.status_code == 200
    assert "Would start now" in response.text and "H100-80GB" in response.text
    assert not Workload.objects.exists()


def test_check_keeps_the_form_filled_in_for_submitting(member):
    response = member.post(PAGE, CHECK)
    assert response.context["form"]["name"].value() == "train-1"


def test_check_shows_a_refusal_as_its_answer(member):
    response = member.post(PAGE, {**CHECK, "replicas": "9"})
    assert "Would be refused" in response.text
    assert not Workload.objects.exists()


def test_a_viewer_checking_is_told_no_and_nothing_is_answered(client, quotas, ai_dev, vic):
    client.force_login(vic)
    response = client.post(PAGE, CHECK, follow=True)
    assert response.context["what_if"] is None
    assert not Workload.objects.exists()
