"""REST endpoints of scheduling: the GPU catalog, quotas, reservations, and workloads of a
project."""

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from portal import clock
from portal.api.schema import ERROR_REF
from portal.api.views import ApiView, CollectionApiView, list_response
from portal.errors import Unavailable
from scheduling import selectors, services
from scheduling.backends import workload_backend
from scheduling.cluster import ClusterError
from scheduling.models import QuotaGrant, QuotaRequest, Reservation, Workload
from tenants.lookups import organization_of, project_of
from tenants.permissions import caller_of

from .alternative_serializers import WorkloadDetailOutput
from .batch_serializers import WorkloadBatchInput, workloads_submitted_data
from .filters import WorkloadFilter
from .log_serializers import WorkloadLogsQuery
from .serializers import (
    GpuClassOutput,
    PoolTimelineOutput,
    PriorityTierOutput,
    QuotaOutput,
    QuotaRequestInput,
    QuotaRequestOutput,
    ReservationInput,
    ReservationOutput,
    TimelineQuery,
    WorkloadCheckpointInput,
    WorkloadEventOutput,
    WorkloadOutput,
    WorkloadSubmitInput,
)


class GpuClassListApi(ApiView):
    @extend_schema(operation_id="gpu_classes_list", responses=GpuClassOutput(many=True))
    def get(self, request):
        return Response(GpuClassOutput(selectors.gpu_class_list(), many=True).data)


class PriorityTierListApi(ApiView):
    @extend_schema(operation_id="priority_tiers_list", responses=PriorityTierOutput(many=True))
    def get(self, request):
        return Response(PriorityTierOutput(selectors.tier_list(), many=True).data)


class QuotaListApi(CollectionApiView):
    queryset = QuotaGrant.objects.none()
    ordering_fields = ["gpu_class__name", "resource", "guarantee", "limit"]

    @extend_schema(operation_id="quotas_list", responses=QuotaOutput(many=True))
    def get(self, request, org_slug: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.quota_list(caller=caller, organization=organization),
            serializer_class=QuotaOutput,
            context={"usage": selectors.quota_usage(caller=caller, organization=organization)},
        )


class WorkloadCollectionApi(CollectionApiView):
    queryset = Workload.objects.none()
    filterset_class = WorkloadFilter
    ordering_fields = ["submitted_at", "name", "state"]

    @extend_schema(operation_id="workloads_list", responses=WorkloadOutput(many=True))
    def get(self, request, org_slug: str, project_slug: str):
        project = project_of(request, org_slug, project_slug)
        return list_response(
            view=self,
            queryset=selectors.workload_list(caller=caller_of(request), project=project),
            serializer_class=WorkloadOutput,
        )

    @extend_schema(
        operation_id="workloads_submit",
        request=WorkloadSubmitInput,
        responses={201: WorkloadOutput},
    )
    def post(self, request, org_slug: str, project_slug: str):
        project = project_of(request, org_slug, project_slug)
        serializer = WorkloadSubmitInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        workload = services.workload_submit(
            caller=caller_of(request),
            project=project,
            request=serializer.to_request(),
        )
        workload.active_placements = []  # a workload just submitted is placed nowhere yet
        return Response(WorkloadOutput(workload).data, status=status.HTTP_201_CREATED)


class WorkloadBatchApi(ApiView):
    # 10,000 workloads take 2 to 3 MiB of JSON as usually written; commands and env take more.
    body_max_bytes = 16 * 1024 * 1024

    @extend_schema(
        operation_id="workloads_submit_batch",
        request=WorkloadBatchInput,
        responses={201: WorkloadOutput(many=True)},
        description=(
            f"Submit 1 to {services.BATCH_MAX} workloads at once (a job array): all are "
            "queued, or none, with each refusal under `workloads.<index>.<field>`. The body"
            " may be up to 16 MiB."
        ),
    )
    def post(self, request, org_slug: str, project_slug: str):
        project = project_of(request, org_slug, project_slug)
        serializer = WorkloadBatchInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        workloads = services.workloads_submit(
            caller=caller_of(request), project=project, requests=serializer.to_requests()
        )
        return Response(workloads_submitted_data(workloads), status=status.HTTP_201_CREATED)


class WorkloadDetailApi(ApiView):
    @extend_schema(operation_id="workloads_retrieve", responses=WorkloadDetailOutput)
    def get(self, request, org_slug: str, project_slug: str, name: str):
        caller = caller_of(request)
        project = project_of(request, org_slug, project_slug)
        workload = selectors.workload_get(caller=caller, project=project, name=name)
        shown = services.workload_alternatives(caller=caller, workload=workload)
        return Response(WorkloadDetailOutput(workload, context={"alternatives": shown}).data)


class WorkloadCancelApi(ApiView):
    @extend_schema(operation_id="workloads_cancel", request=None, responses=WorkloadOutput)
    def post(self, request, org_slug: str, project_slug: str, name: str):
        caller = caller_of(request)
        project = project_of(request, org_slug, project_slug)
        workload = selectors.workload_get(caller=caller, project=project, name=name)
        services.workload_cancel(caller=caller, workload=workload)
        workload = selectors.workload_get(caller=caller, project=project, name=name)
        return Response(WorkloadOutput(workload).data)


class WorkloadCheckpointApi(ApiView):
    @extend_schema(
        operation_id="workloads_checkpoint",
        request=WorkloadCheckpointInput,
        responses=WorkloadOutput,
    )
    def post(self, request, org_slug: str, project_slug: str, name: str):
        caller = caller_of(request)
        project = project_of(request, org_slug, project_slug)
        workload = selectors.workload_get(caller=caller, project=project, name=name)
        checkpoint = WorkloadCheckpointInput(data=request.data)
        checkpoint.is_valid(raise_exception=True)
        services.workload_checkpoint_report(
            caller=caller, workload=workload, at=checkpoint.validated_data.get("at")
        )
        workload = selectors.workload_get(caller=caller, project=project, name=name)
        return Response(WorkloadOutput(workload).data)


class WorkloadEventListApi(ApiView):
    @extend_schema(operation_id="workload_events_list", responses=WorkloadEventOutput(many=True))
    def get(self, request, org_slug: str, project_slug: str, name: str):
        project = project_of(request, org_slug, project_slug)
        workload = selectors.workload_get(caller=caller_of(request), project=project, name=name)
        return Response(
            WorkloadEventOutput(selectors.workload_events(workload=workload), many=True).data
        )


LOG_MEDIA_TYPE = "text/plain; charset=utf-8"

# The headers that say where the lines come from: the cluster, or the tail kept at teardown.
LOG_HEADERS = [
    OpenApiParameter(
        "X-Logs-Source",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200],
        enum=["cluster", "kept-tail"],
        description="`cluster`: read from the workload's containers; `kept-tail`: the last"
        " lines of each replica's log kept when its containers were removed (at most"
        " PORTAL_LOGS_KEPT_LINES lines and PORTAL_LOGS_KEPT_BYTES bytes each).",
    ),
    OpenApiParameter(
        "X-Logs-Kept-At",
        OpenApiTypes.DATETIME,
        OpenApiParameter.HEADER,
        response=[200],
        description="With `kept-tail`: when the tail was kept (ISO 8601, UTC).",
    ),
    OpenApiParameter(
        "X-Logs-Truncated",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200],
        enum=["true", "false"],
        description="With `kept-tail`: `true` when a replica's log was longer than what was"
        " kept (its beginning is lost).",
    ),
]


def _source_headers(response, kept: selectors.KeptTail | None):
    response["X-Logs-Source"] = "cluster" if kept is None else "kept-tail"
    if kept is not None:
        response["X-Logs-Kept-At"] = kept.captured_at.isoformat()
        response["X-Logs-Truncated"] = "true" if kept.truncated else "false"
    return response


class WorkloadLogsApi(ApiView):
    query_serializer = WorkloadLogsQuery

    def perform_content_negotiation(self, request, force=False):
        # The lines are text/plain whatever Accept says; a refusal is the API's JSON error.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="workload_logs",
        parameters=[WorkloadLogsQuery, *LOG_HEADERS],
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR,
                description="One log line per line, oldest first (UTF-8). Followed, the"
                " answer stays open and new lines come as they are written.",
            ),
            (503, "application/json"): OpenApiResponse(
                ERROR_REF, description="The cluster's API server did not answer."
            ),
        },
        description="The workload's container logs. 409 `workload_not_started` before it"
        " was launched. Once it ended and its containers were removed, the tail of each"
        " replica's log kept then (`X-Logs-Source: kept-tail`; `tail` and `since` apply,"
        " `follow` just ends); 409 `logs_gone` when nothing was kept. A follower whose answer"
        " ends reads on with `since`. An error of the cluster while following ends the answer"
        " with a line `[portal] …`.",
    )
    def get(self, request, org_slug: str, project_slug: str, name: str):
        project = project_of(request, org_slug, project_slug)
        workload = selectors.workload_get(caller=caller_of(request), project=project, name=name)
        query = WorkloadLogsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        options = query.validated_data
        logs = selectors.workload_logs(
            workload=workload, backend=workload_backend(workload.pk), **options
        )
        shown = 1 if options.get("replica") is not None else workload.replicas
        texts = (f"{selectors.log_text(line, replicas_shown=shown)}\n" for line in logs.lines)
        if options["follow"]:
            streamed = StreamingHttpResponse(_streamed(texts), content_type=LOG_MEDIA_TYPE)
            return _source_headers(streamed, logs.kept)
        try:
            return _source_headers(
                HttpResponse("".join(texts), content_type=LOG_MEDIA_TYPE), logs.kept
            )
        except ClusterError as error:
            raise Unavailable(f"The cluster did not answer: {error}") from error


def _streamed(texts):
    """The lines as they come; a cluster error ends them with a line that says so (the
    status, 200, has left already)."""
    try:
        yield from texts
    except ClusterError as error:
        yield f"[portal] The log stream ended: the cluster did not answer: {error}\n"
    finally:
        texts.close()


class ReservationCollectionApi(CollectionApiView):
    queryset = Reservation.objects.none()
    ordering_fields = ["starts_at", "requested_at", "state"]

    @extend_schema(operation_id="reservations_list", responses=ReservationOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.reservation_list(
                caller=caller_of(request), organization=organization
            ),
            serializer_class=ReservationOutput,
        )

    @extend_schema(
        operation_id="reservations_request",
        request=ReservationInput,
        responses={201: ReservationOutput(many=True)},
        description="Hold GPUs of a pool over a window (weekly for `weeks` weeks), all or none."
        " A window that does not fit answers 409 `reservation_short` with `details`: the short"
        " periods and the nearest feasible starts before and after.",
    )
    def post(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        serializer = ReservationInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        reservations = services.reservations_request(
            caller=caller_of(request), organization=organization, request=serializer.as_request()
        )
        return Response(
            ReservationOutput(reservations, many=True).data, status=status.HTTP_201_CREATED
        )


class ReservationDetailApi(ApiView):
    @extend_schema(operation_id="reservations_get", responses=ReservationOutput)
    def get(self, request, org_slug: str, reservation_id: str):
        organization = organization_of(request, org_slug)
        reservation = selectors.reservation_get(
            caller=caller_of(request), organization=organization, pk=reservation_id
        )
        return Response(ReservationOutput(reservation).data)


class ReservationCancelApi(ApiView):
    @extend_schema(operation_id="reservations_cancel", request=None, responses=ReservationOutput)
    def post(self, request, org_slug: str, reservation_id: str):
        caller = caller_of(request)
        organization = organization_of(request, org_slug)
        reservation = selectors.reservation_get(
            caller=caller, organization=organization, pk=reservation_id
        )
        reservation = services.reservation_cancel(caller=caller, reservation=reservation)
        return Response(ReservationOutput(reservation).data)


class ReservationTimelineApi(ApiView):
    query_serializer = TimelineQuery

    @extend_schema(
        operation_id="reservation_timeline",
        parameters=[TimelineQuery],
        responses=PoolTimelineOutput(many=True),
        description="Per GPU pool: its capacity, the reservations holding GPUs (the caller's"
        " own with their id, others' anonymous) and the free GPUs of each calendar day in the"
        " organization's time zone, from today (today's from now on).",
    )
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        query = TimelineQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        timeline = selectors.reservation_timeline(
            caller=caller_of(request),
            organization=organization,
            now=clock.now(),
            days=query.validated_data["days"],
        )
        return Response(PoolTimelineOutput(timeline, many=True).data)


class QuotaRequestCollectionApi(CollectionApiView):
    queryset = QuotaRequest.objects.none()
    ordering_fields = ["requested_at", "state"]

    @extend_schema(operation_id="quota_requests_list", responses=QuotaRequestOutput(many=True))
    def get(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        return list_response(
            view=self,
            queryset=selectors.quota_request_list(
                caller=caller_of(request), organization=organization
            ),
            serializer_class=QuotaRequestOutput,
        )

    @extend_schema(
        operation_id="quota_requests_create",
        request=QuotaRequestInput,
        responses={201: QuotaRequestOutput},
        description="Ask operators for `amount` more of a quota resource (whole GPUs, GPU"
        " shares in milli-GPU, or instances of a MIG profile), until `until` or for good.",
    )
    def post(self, request, org_slug: str):
        organization = organization_of(request, org_slug)
        serializer = QuotaRequestInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        quota_request = services.quota_request_create(
            caller=caller_of(request), organization=organization, ask=serializer.as_ask()
        )
        return Response(QuotaRequestOutput(quota_request).data, status=status.HTTP_201_CREATED)


class QuotaRequestDetailApi(ApiView):
    @extend_schema(operation_id="quota_requests_get", responses=QuotaRequestOutput)
    def get(self, request, org_slug: str, request_id: str):
        organization = organization_of(request, org_slug)
        quota_request = selectors.quota_request_get(
            caller=caller_of(request), organization=organization, pk=request_id
        )
        return Response(QuotaRequestOutput(quota_request).data)
