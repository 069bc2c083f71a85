"""GET /api/v1/operator/estimates/calibration/ and the staff page /staff/estimates/: how the
first estimates held against actual starts, overall and per GPU class."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling import selectors
from scheduling.models import GpuClass, Workload
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/operator/estimates/calibration/"
HOUR = timedelta(hours=1)


def _started(submit, name: str, *, off_by: timedelta, gpu_class: str = "H100-80GB", ago=HOUR):
    """A workload estimated to start at 10:00 (between 09:00 and 11:00) that started
    ``off_by`` later, ``ago`` before now."""
    workload = submit(name=name, gpus=1)
    actual = clock.now() - ago
    likely = actual - off_by
    Workload.objects.filter(pk=workload.pk).update(
        state=Workload.State.RUNNING,
        gpu_class=GpuClass.objects.get(name=gpu_class),
        admitted_at=actual,
        first_estimate_at=likely - 3 * HOUR,
        first_estimate=likely,
        first_estimate_low=likely - HOUR,
        first_estimate_high=likely + HOUR,
        first_estimate_actual=actual,
    )
    return workload


@pytest.fixture
def history(submit):
    """Four H100 starts 0, 30 min, 90 min and 3 h after their most likely start (the first two
    inside their interval of an hour either side), and one L4 start on time."""
    for name, minutes in (("a", 0), ("b", 30), ("c", 90), ("d", 180)):
        _started(submit, name, off_by=timedelta(minutes=minutes))
    _started(submit, "e", off_by=timedelta(0), gpu_class="L4")


def _figures(ops, days: int = 30) -> dict:
    until = clock.now()
    found = selectors.estimate_calibration(
        caller=Caller(user=ops[0]), since=until - timedelta(days=days), until=until
    )
    return {f.gpu_class: f for f in found}


def test_the_share_inside_the_interval_is_counted_per_class(history, ops):
    assert _figures(ops)["H100-80GB"].within == 0.5


def test_the_median_error_of_the_most_likely_start_is_counted_per_class(history, ops):
    assert _figures(ops)["H100-80GB"].median_error_seconds == 60 * 60


def test_all_classes_come_first_with_every_start(history, ops):
    overall = _figures(ops)[""]
    assert (overall.estimates, overall.within) == (5, 0.6)


def test_starts_before_the_period_are_left_out(submit, ops):
    _started(submit, "old", off_by=timedelta(0), ago=timedelta(days=3))
    assert _figures(ops, days=2)[""].estimates == 0


def test_the_operator_api_gives_the_figures(history, ops):
    rows = ops[1].get(URL).json()
    assert rows[0] == {
        "gpu_class": "",
        "estimates": 5,
        "within": 0.6,
        "median_error_seconds": 30 * 60.0,
    }


def test_a_period_out_of_range_is_a_400_naming_days(ops):
    response = ops[1].get(URL, {"days": "0"})
    assert response.status_code == 400
    assert "days" in response.json()["error"]["fields"]


def test_a_tenant_token_gets_a_404(history, token_for, mia, acme):
    _, client = token_for(mia, acme, "write")
    assert client.get(URL).status_code == 404


def test_the_staff_page_shows_the_share_inside_the_interval(history, operator_client):
    page = operator_client.get("/staff/estimates/?days=7").content.decode()
    assert "50%" in page


def test_a_tenant_is_refused_the_staff_page(alice, client):
    client.force_login(alice)
    assert client.get("/staff/estimates/").status_code == 403
