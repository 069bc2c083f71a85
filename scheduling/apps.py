from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        from portal.events import Event, subscribe
        from portal.metrics import collector_register

        from . import metrics, tasks

        subscribe(Event.PROJECT_CREATED, tasks.project_provision.delay)
        subscribe(Event.PROJECT_CHANGED, tasks.project_provision.delay)
        subscribe(Event.PROJECT_DELETED, tasks.project_deprovision.delay)
        subscribe(Event.WORKLOADS_SUBMITTED, tasks.scheduling_cycle_request)
        subscribe(Event.WORKLOADS_ADMITTED, tasks.workloads_launch_request)
        subscribe(Event.WORKLOAD_RELEASED, tasks.workload_objects_delete.delay)
        subscribe(Event.RESERVATION_CHANGED, tasks.reservation_email_send.delay)
        subscribe(Event.QUOTA_REQUEST_CHANGED, tasks.quota_request_email_send.delay)
        # The queue, pools, reservations and the cycle's heartbeat on /metrics.
        collector_register("scheduling", metrics.scheduling_metrics)
