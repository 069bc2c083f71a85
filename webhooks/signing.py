"""How a delivery is signed, as Stripe and GitHub sign theirs: HMAC-SHA256 with the
endpoint's secret over "{timestamp}.{body}", the timestamp being sent alongside, so that a
receiver can check both who sent it and that it is recent (docs/api/webhooks.md shows how)."""

import hashlib
import hmac

ID_HEADER = "Portal-Webhook-Id"
EVENT_HEADER = "Portal-Webhook-Event"
TIMESTAMP_HEADER = "Portal-Webhook-Timestamp"
SIGNATURE_HEADER = "Portal-Webhook-Signature"
SCHEME = "v1"


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    signed = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"{SCHEME}={digest}"


def signed_headers(
    *, delivery_id: str, event_type: str, secret: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "gpu-cloud-portal-webhooks/1",
        ID_HEADER: delivery_id,
        EVENT_HEADER: event_type,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret=secret, timestamp=timestamp, body=body),
    }
