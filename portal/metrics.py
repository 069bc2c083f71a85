"""The portal's Prometheus metrics: what a process counts as it works (Celery task failures and
retries here; the scheduling cycle's in scheduling), and what the database says at scrape time,
from collectors that the apps register in their ``ready()`` (the kernel imports no app).

Multi-process mode: with PROMETHEUS_MULTIPROC_DIR set (before the process starts; an empty
folder each start), every gunicorn worker and every Celery pool process writes its counters
there, and a scrape merges them. Without it, each process counts for itself (the demo, tests).
"""

import hmac
import logging
import os
import threading
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import REGISTRY, CollectorRegistry, Counter, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

logger = logging.getLogger(__name__)

CELERY_TASK_FAILURES = Counter(
    "portal_celery_task_failures",
    "Celery tasks that raised (a retried task counts once it gives up).",
    ["task"],
)
CELERY_TASK_RETRIES = Counter(
    "portal_celery_task_retries", "Celery tasks that asked to be retried.", ["task"]
)

# name -> a function that reads the database and returns metric families, at scrape time.
_collectors: dict[str, Callable[[], Iterable[Metric]]] = {}


def collector_register(name: str, collect: Callable[[], Iterable[Metric]]) -> None:
    """Serve what ``collect()`` returns on /metrics (once per name: ``ready()`` may run again)."""
    _collectors[name] = collect


class _Forward:
    """Another registry's metrics inside a registry built for one scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self):
        yield from self.registry.collect()


class _DatabaseCollectors:
    """Every registered collector; one that fails (the database is down) is left out and
    reported as ``portal_metrics_collector_up 0`` instead of failing the whole scrape."""

    def collect(self):
        up = GaugeMetricFamily(
            "portal_metrics_collector_up",
            "1 when the collector read the database at this scrape, 0 when it failed.",
            labels=["collector"],
        )
        for name, collect in sorted(_collectors.items()):
            try:
                families = list(collect())
            except Exception:
                logger.exception("Metrics collector %s failed", name)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from families
        yield up


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def process_registry() -> CollectorRegistry:
    """What the processes counted: merged from PROMETHEUS_MULTIPROC_DIR in multi-process mode,
    else this process's own registry."""
    if multiprocess_dir() is None:
        return REGISTRY
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry)
    return registry


def metrics_exposition(*, accept: str | None) -> tuple[bytes, str]:
    """The body and content type of a scrape of the web: the processes' counters and the
    database collectors (in the exposition format that ``accept`` asks for)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Forward(process_registry()))
    registry.register(_DatabaseCollectors())
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


def bearer_token_matches(authorization: str, token: str) -> bool:
    """Whether an Authorization header carries ``token`` as a bearer token (constant time)."""
    scheme, _, given = authorization.partition(" ")
    return (
        bool(token)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(given.strip().encode(), token.encode())
    )


def protected_wsgi_app(*, token: str, registry: CollectorRegistry):
    """prometheus_client's WSGI app behind the same bearer token as the web's /metrics."""
    app = make_wsgi_app(registry)

    def protected(environ, start_response):
        if not bearer_token_matches(environ.get("HTTP_AUTHORIZATION", ""), token):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [b"A bearer token is required.\n"]
        return app(environ, start_response)

    return protected


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # every scrape would be a line in the worker's log
        pass


def worker_metrics_serve(*, port: int, token: str) -> ThreadingWSGIServer:
    """Serve the worker's process metrics (not the database's: the web serves those once) on
    ``port``, from a daemon thread of the worker's main process."""
    # Every address: a pod's port, guarded by the token and a network policy.
    server = make_server(
        "0.0.0.0",
        port,
        protected_wsgi_app(token=token, registry=process_registry()),
        server_class=ThreadingWSGIServer,
        handler_class=_QuietHandler,
    )
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    logger.info("Worker metrics on port %s", port)
    return server


def celery_task_failed(sender=None, **_signal) -> None:
    CELERY_TASK_FAILURES.labels(task=getattr(sender, "name", "unknown")).inc()


def celery_task_retried(sender=None, request=None, **_signal) -> None:
    name = getattr(sender, "name", None) or getattr(request, "task", None) or "unknown"
    CELERY_TASK_RETRIES.labels(task=name).inc()
