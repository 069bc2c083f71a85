"""portal.db.rows_update and values_update write the named fields of many rows in one go, and
nothing else; values_insert inserts rows given as values, rows_insert unsaved rows."""

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.db import rows_insert, rows_update, values_insert, values_update
from scheduling.models import Workload, WorkloadEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(submit) -> list[Workload]:
    return [submit(name=f"wait-{n}", gpus=1) for n in range(3)]


def test_the_named_fields_of_every_row_are_written(waiting):
    soon = timezone.now() + timedelta(hours=1)
    for position, workload in enumerate(waiting, start=1):
        workload.queue_position, workload.estimated_start = position, soon
        workload.pending_code = "capacity"
    rows_update(waiting, ["queue_position", "estimated_start", "pending_code"])
    stored = Workload.objects.filter(pk__in=[w.pk for w in waiting]).order_by("queue_position")
    assert [(w.queue_position, w.estimated_start, w.pending_code) for w in stored] == [
        (1, soon, "capacity"),
        (2, soon, "capacity"),
        (3, soon, "capacity"),
    ]


def test_a_none_is_written_as_null(waiting):
    Workload.objects.update(queue_position=7)
    for workload in waiting:
        workload.queue_position = None
    rows_update(waiting, ["queue_position"])
    assert set(Workload.objects.values_list("queue_position", flat=True)) == {None}


def test_fields_not_named_are_left_alone(waiting):
    waiting[0].name, waiting[0].queue_position = "renamed", 4
    rows_update(waiting[:1], ["queue_position"])
    waiting[0].refresh_from_db()
    assert (waiting[0].name, waiting[0].queue_position) == ("wait-0", 4)


def test_no_rows_is_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        rows_update([], ["queue_position"])


def test_values_given_as_tuples_are_written_key_first(waiting):
    soon = timezone.now() + timedelta(hours=1)
    values_update(
        Workload,
        ["queue_position", "estimated_start"],
        [(w.pk, position, soon) for position, w in enumerate(waiting, start=1)],
    )
    stored = Workload.objects.filter(pk__in=[w.pk for w in waiting]).order_by("queue_position")
    assert [(w.name, w.queue_position, w.estimated_start) for w in stored] == [
        ("wait-0", 1, soon),
        ("wait-1", 2, soon),
        ("wait-2", 3, soon),
    ]


def test_no_values_is_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        values_update(Workload, ["queue_position"], [])


def test_rows_given_as_values_are_inserted_with_their_json(waiting):
    soon = timezone.now() + timedelta(hours=1)
    values_insert(
        WorkloadEvent,
        ["workload", "at", "kind", "message", "data"],
        [(w.pk, soon, "pending", f"waits {n}", {"code": n}) for n, w in enumerate(waiting)],
    )
    stored = WorkloadEvent.objects.filter(kind="pending").order_by("message")
    assert [(e.workload_id, e.at, e.message, e.data) for e in stored] == [
        (w.pk, soon, f"waits {n}", {"code": n}) for n, w in enumerate(waiting)
    ]


def test_no_rows_to_insert_is_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        values_insert(WorkloadEvent, ["workload", "kind"], [])


def test_unsaved_rows_are_inserted_with_what_varies_and_what_they_share(waiting):
    soon = timezone.now() + timedelta(hours=1)
    rows_insert(
        [
            WorkloadEvent(workload=w, at=soon, kind="pending", message=f"waits {n}", data={})
            for n, w in enumerate(waiting)
        ]
    )
    stored = WorkloadEvent.objects.filter(kind="pending").order_by("message")
    assert [(e.workload_id, e.at, e.message, e.data) for e in stored] == [
        (w.pk, soon, f"waits {n}", {}) for n, w in enumerate(waiting)
    ]


def test_unsaved_rows_alike_in_every_column_are_each_inserted(waiting):
    soon = timezone.now() + timedelta(hours=1)
    workload = waiting[0]
    rows_insert(
        [WorkloadEvent(workload=workload, at=soon, kind="pending", message="waits") for _ in "ab"]
    )
    assert WorkloadEvent.objects.filter(workload=workload, kind="pending").count() == 2


def test_inserted_rows_are_no_longer_being_added(waiting):
    rows = [WorkloadEvent(workload=waiting[0], kind="pending", message="waits")]
    rows_insert(rows)
    assert rows[0]._state.adding is False
