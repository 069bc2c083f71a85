"""portal.db.EpochMicroseconds reads a timestamp column as integer microseconds since the
epoch, exactly, on PostgreSQL and SQLite alike."""

from datetime import UTC, datetime, timedelta

import pytest

from portal.db import EpochMicroseconds
from tenants.models import Project

from ..factories import ProjectFactory

pytestmark = pytest.mark.django_db

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 1, tzinfo=UTC),
        datetime(2026, 11, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 11, 30, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2026, 11, 15, 12, 30, 1, 500_000, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 250_000, tzinfo=UTC),
    ],
)
def test_a_timestamp_reads_as_its_microseconds_since_the_epoch(moment):
    project = ProjectFactory(deleted_at=moment)
    read = Project.objects.filter(pk=project.pk).values_list(
        EpochMicroseconds("deleted_at"), flat=True
    )
    assert read.get() == (moment - EPOCH) // timedelta(microseconds=1)


def test_a_null_timestamp_reads_as_null():
    project = ProjectFactory(deleted_at=None)
    read = Project.objects.filter(pk=project.pk).values_list(
        EpochMicroseconds("deleted_at"), flat=True
    )
    assert read.get() is None
