"""tests/module_state.py: rows a module's tests share, while each test's own are rolled back."""

import pytest

from tenants.models import Organization

from .factories import OrganizationFactory
from .module_state import kept_for_the_module

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker):
    with kept_for_the_module(django_db_blocker):
        yield OrganizationFactory(slug="shared")
    with django_db_blocker.unblock():
        assert not Organization.objects.exists()  # gone with the module


@pytest.mark.parametrize("writer", ["one", "another"])
def test_each_test_sees_the_shared_rows_and_none_of_another_tests(shared, writer):
    # Whichever runs second would see the first one's organization if it were kept.
    assert list(Organization.objects.values_list("slug", flat=True)) == ["shared"]
    OrganizationFactory(slug=writer)
