"""The API explorers (Swagger UI, ReDoc) come from the portal's own static files: no asset
from another host, so they work on a cluster without internet."""

import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db

ASSET = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


def assets(client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200
    return ASSET.findall(response.content.decode())


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_an_explorer_loads_nothing_from_another_host(client, url):
    foreign = [a for a in assets(client, url) if re.match(r"(https?:)?//", a)]
    assert foreign == []


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_an_explorers_scripts_are_static_files_of_the_portal(client, url):
    scripts = [a for a in assets(client, url) if a.endswith(".js")]
    missing = [a for a in scripts if not finders.find(a.removeprefix("/static/"))]
    assert (len(scripts) > 0, missing) == (True, [])
