from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        from django.conf import settings

        from portal import clock
        from portal.events import Event, subscribe
        from portal.health import Heartbeat, heartbeat_register
        from portal.metrics import collector_register

        from . import metrics, selectors, tasks

        subscribe(Event.PROJECT_CREATED, tasks.project_provision.delay)
        # An operator's rerun names the cluster of the record it reruns.
        subscribe(Event.PROJECT_CHANGED, tasks.project_provision_in_cluster)
        subscribe(Event.CLUSTER_CHANGED, tasks.cluster_provision_in_cluster)
        subscribe(Event.PROJECT_DELETED, tasks.project_deprovision_in_cluster)
        subscribe(Event.WORKLOADS_SUBMITTED, tasks.scheduling_cycle_request)
        subscribe(Event.WORKLOADS_ADMITTED, tasks.workloads_launch_request)
        subscribe(Event.WORKLOAD_RELEASED, tasks.workload_objects_delete.delay)
        subscribe(Event.RESERVATION_CHANGED, tasks.reservation_email_send.delay)
        subscribe(Event.QUOTA_REQUEST_CHANGED, tasks.quota_request_email_send.delay)
        # The queue, pools, reservations and the cycle's heartbeat on /metrics.
        collector_register("scheduling", metrics.scheduling_metrics)
        # A cycle that stopped finishing, on /healthz/workers, /metrics and operators' pages.
        heartbeat_register(
            Heartbeat(
                name="scheduling_cycle",
                silence="no scheduling cycle has finished",
                last_seen=selectors.last_cycle_at,
                period_seconds=lambda: settings.PORTAL_CYCLE_SECONDS,
                now=clock.now,  # the cycle writes its time in the portal clock's now()
            )
        )
