"""`manage.py usage_reconcile`: yesterday's placed and billed seconds compared, a failure on
any difference."""

import io

import pytest
from django.core.management import CommandError, call_command

from billing import services
from scheduling.models import Placement

from .conftest import ran

pytestmark = pytest.mark.django_db


def yesterdays_run(project):
    """An hour of 8 GPUs yesterday (UTC), 01:00 to 02:00."""
    ran(project, start=-47, end=-46)


def test_the_command_compares_yesterday_and_prints_the_totals(on_demand, vision):
    yesterdays_run(vision)
    out = io.StringIO()
    call_command("usage_reconcile", stdout=out)
    assert "1 organizations, 28800.000000 placed and 28800.000000 billed seconds." in out.getvalue()


def test_the_command_fails_on_a_difference(on_demand, vision):
    yesterdays_run(vision)
    services.usage_meter()
    Placement.objects.update(running_at=None)  # the rows no longer say it ran
    with pytest.raises(CommandError):
        call_command("usage_reconcile", stdout=io.StringIO())
