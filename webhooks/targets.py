"""Where a delivery may go and how it is sent: only http and https, only to public addresses
(unless the operator allows private ones: PORTAL_WEBHOOKS_ALLOW_PRIVATE), checked when an
endpoint is registered and again before each attempt, since DNS may have changed since. The
request goes to the address that was checked (never resolved twice), follows no redirect and
gives up after the timeout, so a receiver can neither reach inside the network nor hold a
worker."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError

from portal import clock

SCHEMES = ("http", "https")
# What an attempt keeps of the receiver's answer.
RESPONSE_KEPT = 1000


class TargetRefused(ValueError):
    """A URL a delivery may not be sent to; its message says why."""


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _refused(address: Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return (
        not address.is_global
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def target_addresses(url: str, *, allow_private: bool) -> list[Address]:
    """The addresses `url`'s host resolves to, all of them allowed; TargetRefused otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise TargetRefused("Only http and https URLs.")
    if not parts.hostname:
        raise TargetRefused("A URL with a host name.")
    if parts.username or parts.password:
        raise TargetRefused("No user name or password in the URL.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except ValueError as error:
        raise TargetRefused(f"Not a valid port: {error}.") from error
    except (OSError, UnicodeError) as error:
        raise TargetRefused(f"{parts.hostname} does not resolve.") from error
    addresses = list(
        dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in found)
    )
    refused = [address for address in addresses if _refused(address)]
    if refused and not allow_private:
        raise TargetRefused(
            f"{parts.hostname} resolves to {refused[0]}: private, loopback, link-local,"
            " multicast and reserved addresses are refused."
        )
    return addresses


@dataclass(frozen=True)
class Answer:
    """How a receiver answered an attempt: its status and the start of its body, or the
    error that stopped it (refused, timed out, no connection)."""

    status_code: int | None = None
    body: str = ""
    error: str = ""
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def post(url: str, *, address: Address, body: bytes, headers: dict, timeout: float) -> Answer:
    """POST `body` to `url` at `address` (the checked one), without following redirects;
    connecting and each read wait at most `timeout` seconds."""
    parts = urlsplit(url)
    started = clock.monotonic()
    options = {
        "host": str(address),
        "port": parts.port or (443 if parts.scheme == "https" else 80),
        "timeout": urllib3.Timeout(connect=timeout, read=timeout),
        "retries": False,
        "maxsize": 1,
    }
    if parts.scheme == "https":
        # The certificate is checked against the URL's host, not the address.
        pool = urllib3.HTTPSConnectionPool(
            server_hostname=parts.hostname, assert_hostname=parts.hostname, **options
        )
    else:
        pool = urllib3.HTTPConnectionPool(**options)
    path = parts.path or "/"
    target = f"{path}?{parts.query}" if parts.query else path
    host = parts.netloc.rpartition("@")[2]
    try:
        response = pool.urlopen(
            "POST",
            target,
            body=body,
            headers={**headers, "Host": host, "Accept-Encoding": "identity"},
            redirect=False,
            retries=False,
            preload_content=False,
        )
        try:
            kept = response.read(RESPONSE_KEPT * 4, decode_content=False)
        finally:
            response.release_conn()
        return Answer(
            status_code=response.status,
            body=kept.decode("utf-8", "replace")[:RESPONSE_KEPT],
            duration_ms=_since(started),
        )
    except (HTTPError, OSError) as error:
        return Answer(error=_error_text(error), duration_ms=_since(started))
    finally:
        pool.close()


def _since(started: float) -> int:
    return int((clock.monotonic() - started) * 1000)


def _error_text(error: Exception) -> str:
    kind = "timed out" if "timed out" in str(error).lower() else "no answer"
    return f"{kind}: {type(error).__name__}: {error}"[:500]
