"""The console's capacity strip and the reservation form's proposed windows."""

import re
from datetime import timedelta

import pytest

from scheduling.models import Reservation

from .capacity import next_hour, reserve_hours

pytestmark = pytest.mark.django_db

PAGE = "/orgs/acme/reservations/"
WINDOWS = "/orgs/acme/reservations/windows/"


@pytest.fixture
def owner(client, cluster, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def crowded(cluster, bruno, globex):
    """globex holds 60 of the 64 H100 for the next five hours: when they end."""
    reserve_hours(bruno, globex, from_hours=0, hours=5, gpus=60)
    return next_hour() + timedelta(hours=5)


def proposals(html: str) -> list[tuple[str, str]]:
    return re.findall(r'data-starts-at="([^"]+)" data-pool="([^"]+)"', html)


def test_the_page_shows_a_strip_of_14_days_of_hours_per_pool(owner):
    html = owner.get(PAGE).content.decode()
    assert html.count('aria-label="dgx-h100"') == 1
    strip = html.split('aria-label="dgx-h100"')[1].split("</section>")[0]
    assert strip.count('class="cell ') == 14 * 24


def test_the_form_proposes_the_first_window_where_the_block_fits(owner, crowded):
    query = "?gpu_class=H100-80GB&gpus=8&hours=4&pool=dgx-h100"
    html = owner.get(WINDOWS + query).content.decode()
    assert proposals(html)[0] == (f"{crowded:%Y-%m-%dT%H:%M}", "dgx-h100")
    assert f"8 H100-80GB on one node in dgx-h100: from {crowded:%A %H:%M}" in html


def test_a_proposed_window_submitted_by_the_form_is_reserved(owner, crowded, acme):
    form = {"gpu_class": "H100-80GB", "gpus": 8, "hours": 4, "pool": "", "weeks": 1}
    starts_at, pool = proposals(owner.get(WINDOWS, form).content.decode())[0]
    response = owner.post(PAGE, {**form, "starts_at": starts_at, "pool": pool})
    assert response.status_code == 302
    held = Reservation.objects.get(organization=acme)
    assert (held.pool.name, held.starts_at) == (pool, crowded)


def test_mig_instances_get_no_proposal(owner):
    query = "?gpu_class=A100-80GB&gpus=2&hours=4&mig_profile=mig-3g.40gb"
    assert proposals(owner.get(WINDOWS + query).content.decode()) == []


def test_another_organizations_proposals_are_a_404(client, cluster, bruno):
    client.force_login(bruno)
    assert client.get(WINDOWS + "?gpu_class=H100-80GB&gpus=8&hours=4").status_code == 404
