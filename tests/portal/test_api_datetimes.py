"""Every time a request body carries is ISO 8601 with its UTC offset, in the years 2000 to
2100 (portal.api.serializers.AwareDateTimeField): a naive time or a date alone is a 400 on the
field, not read in the server's zone."""

import pytest

from portal.api.serializers import AwareDateTimeField

pytestmark = pytest.mark.django_db

ACME = "/api/v1/organizations/acme"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/quota-requests/",
            {"gpu_class": "H100-80GB", "amount": 1, "reason": "r", "until": "2027-01-01T00:00"},
            "until",
        ),
        (
            "/quota-requests/",
            {"gpu_class": "H100-80GB", "amount": 1, "reason": "r", "until": "2027-01-01"},
            "until",
        ),
        ("/tokens/", {"name": "ci", "expires_at": "2027-01-01T00:00:00"}, "expires_at"),
        ("/tokens/", {"name": "ci", "expires_at": "2027-01-01"}, "expires_at"),
        ("/tokens/", {"name": "ci", "expires_at": "9999-12-31T23:59:59-05:00"}, "expires_at"),
    ],
)
def test_a_naive_date_only_or_far_time_is_a_400_on_its_field(alice, api_as, path, body, field):
    response = api_as(alice).post(f"{ACME}{path}", body, format="json")
    assert (response.status_code, list(response.json()["error"]["fields"])) == (400, [field])


@pytest.mark.parametrize(
    ("sent", "taken"),
    [
        ("2027-01-01T09:00:00Z", "2027-01-01T09:00:00+00:00"),
        ("2027-01-01T09:00:00+02:00", "2027-01-01T07:00:00+00:00"),
        ("2027-01-01T09:00-05:30", "2027-01-01T14:30:00+00:00"),
    ],
)
def test_a_time_with_its_offset_is_taken_in_utc(sent, taken):
    assert AwareDateTimeField().to_internal_value(sent).isoformat() == taken
