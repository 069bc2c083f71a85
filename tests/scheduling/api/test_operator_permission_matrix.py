"""The operator API of scheduling, cell by cell: every endpoint answers the operator (a token
with the operator scope, or staff signed in) and is a 404 to every other caller."""

from datetime import timedelta

import pytest

from portal import clock
from scheduling import services
from scheduling.models import GpuClass, QuotaGrant
from tenants.permissions import Caller

from ...conftest import ai_dev_create, tenancy_create
from ...module_state import kept_for_the_module
from ...operators import CALLERS, assert_reached_only_by_operators, operator_api_caller
from ..conftest import cluster_sync, demo_backend, quotas_grant, submitted

pytestmark = pytest.mark.django_db

OP = "/api/v1/operator"
NODE = f"{OP}/nodes/dgx-h100-01"

# name: (method, path, body, status for an operator)
OPERATIONS = {
    "pools list": ("get", f"{OP}/pools/", None, 200),
    "nodes list": ("get", f"{OP}/nodes/", None, 200),
    "node retrieve": ("get", f"{NODE}/", None, 200),
    "node cordon": ("post", f"{NODE}/cordon/", None, 200),
    "node uncordon": ("post", f"{NODE}/uncordon/", None, 200),
    "node drain": ("post", f"{NODE}/drain/", None, 200),
    "gpu classes list": ("get", f"{OP}/gpu-classes/", None, 200),
    "gpu class retrieve": ("get", f"{OP}/gpu-classes/L4/", None, 200),
    "gpu class update": ("patch", f"{OP}/gpu-classes/L4/", {"memory_gib": 24}, 200),
    "priority tiers list": ("get", f"{OP}/priority-tiers/", None, 200),
    "priority tier retrieve": ("get", f"{OP}/priority-tiers/batch/", None, 200),
    "priority tier update": (
        "patch",
        f"{OP}/priority-tiers/batch/",
        {"description": "Batch work"},
        200,
    ),
    "quota grants list": ("get", f"{OP}/quota-grants/", None, 200),
    "quota grant set": (
        "post",
        f"{OP}/quota-grants/",
        {
            "organization": "globex",
            "gpu_class": "H100-80GB",
            "guarantee": 2,
            "limit": 4,
            "reason": "Pilot",
        },
        201,
    ),
    "quota grant remove": (
        "post",
        f"{OP}/quota-grants/remove/",
        {"organization": "globex", "gpu_class": "L4", "reason": "Pilot over"},
        204,
    ),
    "reservations list": ("get", f"{OP}/reservations/?state=requested", None, 200),
    "reservation approve": ("post", f"{OP}/reservations/{{reservation}}/approve/", None, 200),
    "reservation reject": (
        "post",
        f"{OP}/reservations/{{reservation}}/reject/",
        {"reason": "No room"},
        200,
    ),
    "quota requests list": ("get", f"{OP}/quota-requests/?state=requested", None, 200),
    "quota request approve": (
        "post",
        f"{OP}/quota-requests/{{quota_request}}/approve/",
        {},
        200,
    ),
    "quota request reject": (
        "post",
        f"{OP}/quota-requests/{{quota_request}}/reject/",
        {"reason": "Not now"},
        200,
    ),
    "queue": ("get", f"{OP}/queue/", None, 200),
    "insights": ("get", f"{OP}/insights/", None, 200),
    "estimate calibration": ("get", f"{OP}/estimates/calibration/?days=7", None, 200),
    "fair share list": ("get", f"{OP}/fair-share/", None, 200),
    "fair share weight update": ("patch", f"{OP}/fair-share/globex/", {"weight": "2.5"}, 200),
}


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The demo cluster and the tenancy actors, built once for the module (each cell runs in a
    transaction of its own, rolled back): acme, with every GPU in quota, waits on a
    reservation and a quota request, and has work queued; globex's L4 quota is what is set and
    deleted."""
    with kept_for_the_module(django_db_blocker):
        tenancy = tenancy_create()
        acme, globex, actors = tenancy["acme"], tenancy["globex"], tenancy["actors"]
        backend = demo_backend()
        cluster_sync(backend)
        quotas_grant(acme)
        owner = Caller(user=actors["owner"])
        starts = clock.now().replace(microsecond=0) + timedelta(days=2)
        [reservation] = services.reservations_request(
            caller=owner,
            organization=acme,
            request=services.ReservationRequest(
                gpu_class="H100-80GB",
                gpus=8,
                starts_at=starts,
                ends_at=starts + timedelta(hours=4),
            ),
        )
        quota_request = services.quota_request_create(
            caller=owner,
            organization=acme,
            ask=services.QuotaAsk(gpu_class="H100-80GB", amount=8, reason="A new model"),
        )
        submitted(backend, user=actors["member"], project=ai_dev_create(acme), name="waiting")
        QuotaGrant.objects.create(
            organization=globex, gpu_class=GpuClass.objects.get(name="L4"), guarantee=1, limit=1
        )
        yield {
            **tenancy,
            "ids": {"reservation": reservation.pk, "quota_request": quota_request.pk},
        }


@pytest.fixture
def acme(world):
    return world["acme"]


@pytest.fixture
def actors(world):
    return world["actors"]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_only_operators_reach_the_operator_api(operation, caller, world, actors, acme, token_for):
    client = operator_api_caller(caller, actors, acme, token_for)
    assert_reached_only_by_operators(OPERATIONS[operation], caller, world["ids"], client)
