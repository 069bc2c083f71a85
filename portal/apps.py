from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        from portal import health
        from portal.metrics import collector_register

        # Whether a worker takes tasks, on /healthz/workers, /metrics and the operators' pages.
        health.heartbeat_register(health.WORKER_HEARTBEAT)
        collector_register("heartbeats", health.heartbeat_metrics)
