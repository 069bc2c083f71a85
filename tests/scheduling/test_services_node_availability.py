"""Node availability history: the inventory sync and cordoning record each node's spans of
one state (the operator's books read them), one open span per node, a change only when there
is one."""

import pytest

from portal import clock
from scheduling import services
from scheduling.models import Node, NodeAvailability
from tenants.permissions import Caller

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_first_sync_opens_one_available_span_per_node(cluster):
    spans = NodeAvailability.objects.all()
    assert spans.count() == Node.objects.count()
    assert {(s.state, s.ends_at) for s in spans} == {("available", None)}


def test_a_sync_that_changes_nothing_records_nothing(cluster, backend):
    before = NodeAvailability.objects.count()
    clock.advance(seconds=60)
    services.inventory_sync(backend=backend)
    assert NodeAvailability.objects.count() == before


def test_cordoning_closes_the_available_span_and_opens_a_cordoned_one(cluster):
    node = Node.objects.order_by("name").first()
    clock.advance(seconds=60)
    services.node_cordon(caller=Caller(user=UserFactory(is_staff=True)), node=node)
    closed, opened = NodeAvailability.objects.filter(node=node).order_by("starts_at")
    assert closed.ends_at == opened.starts_at > closed.starts_at
    assert (opened.state, opened.ends_at) == ("cordoned", None)


def test_a_failed_node_is_not_ready_from_the_next_sync(cluster, backend):
    node = Node.objects.order_by("name").first()
    clock.advance(seconds=60)
    backend.node_fail(name=node.name)
    services.inventory_sync(backend=backend)
    assert NodeAvailability.objects.get(node=node, ends_at__isnull=True).state == "not_ready"
