"""The console's workload page lists what would unblock a pending workload; a quota request
alternative links to the quota form filled in with the missing amount."""

from html import unescape

import pytest

pytestmark = pytest.mark.django_db

PAGE = "/orgs/acme/projects/ai-dev/workloads/"
QUOTAS = "/orgs/acme/quotas/"


@pytest.mark.parametrize(
    ("caller", "status"),
    [("owner", 200), ("admin", 200), ("member", 200), ("viewer", 200), ("foreign", 404)],
)
def test_every_member_sees_what_would_unblock_a_pending_workload_and_nobody_else(
    waiting_for_h100, client, caller, status
):
    client.force_login(waiting_for_h100[caller])
    response = client.get(f"{PAGE}waits/")
    assert response.status_code == status
    if status == 200:
        assert (
            "A100-80GB instead of H100-80GB: <strong>starts now</strong>"
            in response.content.decode()
        )


def test_a_quota_limited_workload_links_to_the_quota_form_filled_in(over_quota, client):
    client.force_login(over_quota["member"])
    page = unescape(client.get(f"{PAGE}second/").content.decode())
    assert f"{QUOTAS}?gpu_class=H100-80GB&resource=gpus&mig_profile=&amount=8" in page


def test_the_quota_form_opens_with_the_fields_the_link_gives(quotas, actors, client):
    client.force_login(actors["owner"])
    page = client.get(f"{QUOTAS}?gpu_class=L4&resource=shared&amount=500&reason=waits").content
    form = page.decode()
    assert ('value="500"' in form, '<option value="L4" selected>' in form) == (True, True)


def test_a_running_workloads_page_offers_no_alternatives(over_quota, client):
    client.force_login(over_quota["member"])
    assert "What would unblock it" not in client.get(f"{PAGE}first/").content.decode()
