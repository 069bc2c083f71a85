"""https receivers: the attempt connects to the address it checked, and still verifies the
certificate against the URL's host name (a receiver with a certificate for another name is
not sent to)."""

import shutil
import ssl
import subprocess

import pytest
from pytest_httpserver import HTTPServer

from webhooks import services

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("allow_private"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificate"),
]


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch):
    """An https receiver on localhost whose certificate (for the name given) this process
    trusts; the receiver."""
    servers = []

    def start(name: str) -> HTTPServer:
        cert, key = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
        command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        command += ["-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}"]
        command += ["-addext", f"subjectAltName=DNS:{name}"]
        subprocess.run(command, check=True, capture_output=True)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        server = HTTPServer(host="localhost", port=0, ssl_context=context)
        server.start()
        servers.append(server)
        server.expect_request("/hook").respond_with_data("ok")
        return server

    yield start
    for server in servers:
        server.clear()
        server.stop()


def test_an_https_receiver_with_a_certificate_for_its_name_is_delivered_to(
    tls_receiver, register, delivered_workload
):
    receiver = tls_receiver("localhost")
    register(receiver.url_for("/hook"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, len(receiver.log)) == ("delivered", 1)


def test_an_https_receiver_with_a_certificate_for_another_name_is_not(
    tls_receiver, register, delivered_workload
):
    receiver = tls_receiver("elsewhere.example")
    register(receiver.url_for("/hook").replace("elsewhere.example", "localhost"))
    [delivery] = delivered_workload()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.state, receiver.log) == ("pending", [])
    assert "hostname 'localhost' doesn't match" in delivery.last_error
