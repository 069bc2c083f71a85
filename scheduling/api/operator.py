"""The operator API of scheduling (`/api/v1/operator/…`): pools and nodes (cordon, uncordon,
drain), GPU classes and priority tiers, quota grants of every organization, decisions on
reservations and quota requests, the queue across tenants, the insights and how the start
estimates held. Staff only (404 to anyone else); every write through the services admin uses,
audited as there."""

from datetime import timedelta

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from portal import clock
from portal.api.serializers import ReasonInput
from portal.api.views import list_response, validated
from scheduling import insights, selectors, services
from scheduling.models import (
    GpuClass,
    Node,
    NodePool,
    PriorityTier,
    QuotaGrant,
    QuotaRequest,
    Reservation,
    Workload,
)
from tenants.api.operator import OperatorApiView, OperatorCollectionApiView
from tenants.permissions import caller_of

from .filters import (
    NodeFilter,
    PoolFilter,
    QueueFilter,
    QuotaGrantFilter,
    QuotaRequestDecisionFilter,
    ReservationDecisionFilter,
)
from .operator_serializers import (
    CalibrationQuery,
    EstimateCalibrationOutput,
    GpuClassUpdateInput,
    InsightOutput,
    NodeDrainOutput,
    NodeOutput,
    OperatorGpuClassOutput,
    OperatorQuotaGrantOutput,
    OperatorQuotaRequestOutput,
    OperatorReservationOutput,
    OperatorTierOutput,
    PoolOutput,
    QueueEntryOutput,
    QuotaApproveInput,
    QuotaGrantKeyInput,
    QuotaGrantSetInput,
    TierUpdateInput,
)


class PoolListApi(OperatorCollectionApiView):
    queryset = NodePool.objects.none()
    filterset_class = PoolFilter
    ordering_fields = ["name", "gpu_class__name"]

    @extend_schema(operation_id="operator_pools_list", responses=PoolOutput(many=True))
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.pools_for_operator(caller=caller_of(request)),
            serializer_class=PoolOutput,
        )


class NodeListApi(OperatorCollectionApiView):
    queryset = Node.objects.none()
    filterset_class = NodeFilter
    ordering_fields = ["name", "pool__name", "gpu_count", "last_seen_at"]

    @extend_schema(operation_id="operator_nodes_list", responses=NodeOutput(many=True))
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.nodes_for_operator(caller=caller_of(request)),
            serializer_class=NodeOutput,
        )


class NodeDetailApi(OperatorApiView):
    @extend_schema(operation_id="operator_nodes_retrieve", responses=NodeOutput)
    def get(self, request, name: str):
        node = selectors.node_for_operator(caller=caller_of(request), name=name)
        return Response(NodeOutput(node).data)


def _cordon(request, name: str, *, cordoned: bool) -> Response:
    caller = caller_of(request)
    node = selectors.node_for_operator(caller=caller, name=name)
    services.node_cordon(caller=caller, node=node, cordoned=cordoned)
    return Response(NodeOutput(selectors.node_for_operator(caller=caller, name=name)).data)


class NodeCordonApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_nodes_cordon",
        request=None,
        responses=NodeOutput,
        description="Place nothing new on the node; what runs there keeps running. Audited"
        " (`node.cordon`) when it changes; cordoning a cordoned node changes nothing.",
    )
    def post(self, request, name: str):
        return _cordon(request, name, cordoned=True)


class NodeUncordonApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_nodes_uncordon",
        request=None,
        responses=NodeOutput,
        description="Place work on the node again. Audited (`node.uncordon`) when it changes.",
    )
    def post(self, request, name: str):
        return _cordon(request, name, cordoned=False)


class NodeDrainApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_nodes_drain",
        request=None,
        responses=NodeDrainOutput,
        description="Cordon the node and send every workload with a replica on it back to the"
        " queue (each requeue audited), to be placed elsewhere by the next cycle.",
    )
    def post(self, request, name: str):
        caller = caller_of(request)
        node = selectors.node_for_operator(caller=caller, name=name)
        drained = services.node_drain(caller=caller, node=node)
        node = selectors.node_for_operator(caller=caller, name=name)
        requeued = Workload.objects.filter(pk__in=[w.pk for w in drained]).select_related(
            "project__organization"
        )
        return Response(NodeDrainOutput({"node": node, "requeued": requeued}).data)


class GpuClassListApi(OperatorCollectionApiView):
    queryset = GpuClass.objects.none()
    ordering_fields = ["name", "memory_gib"]

    @extend_schema(
        operation_id="operator_gpu_classes_list", responses=OperatorGpuClassOutput(many=True)
    )
    def get(self, request):
        return list_response(
            view=self, queryset=selectors.gpu_class_list(), serializer_class=OperatorGpuClassOutput
        )


def _setting_update(request, setting, changes: dict):
    """Change a cluster setting as admin does: through the service, which validates and
    audits the fields that changed."""
    changed = [field for field, value in changes.items() if getattr(setting, field) != value]
    for field in changed:
        setattr(setting, field, changes[field])
    if changed:
        services.setting_save(caller=caller_of(request), setting=setting, changed=changed)
    return setting


class GpuClassDetailApi(OperatorApiView):
    @extend_schema(operation_id="operator_gpu_classes_retrieve", responses=OperatorGpuClassOutput)
    def get(self, request, name: str):
        gpu_class = selectors.gpu_class_for_operator(caller=caller_of(request), name=name)
        return Response(OperatorGpuClassOutput(gpu_class).data)

    @extend_schema(
        operation_id="operator_gpu_classes_update",
        request=GpuClassUpdateInput,
        responses=OperatorGpuClassOutput,
        description="Change the fields sent (audited `gpuclass.update`, as admin's edit is).",
    )
    def patch(self, request, name: str):
        gpu_class = selectors.gpu_class_for_operator(caller=caller_of(request), name=name)
        changes = validated(GpuClassUpdateInput, request).validated_data
        return Response(OperatorGpuClassOutput(_setting_update(request, gpu_class, changes)).data)


class TierListApi(OperatorCollectionApiView):
    queryset = PriorityTier.objects.none()
    ordering_fields = ["name", "value"]

    @extend_schema(
        operation_id="operator_priority_tiers_list", responses=OperatorTierOutput(many=True)
    )
    def get(self, request):
        return list_response(
            view=self, queryset=selectors.tier_list(), serializer_class=OperatorTierOutput
        )


class TierDetailApi(OperatorApiView):
    @extend_schema(operation_id="operator_priority_tiers_retrieve", responses=OperatorTierOutput)
    def get(self, request, name: str):
        tier = selectors.tier_for_operator(caller=caller_of(request), name=name)
        return Response(OperatorTierOutput(tier).data)

    @extend_schema(
        operation_id="operator_priority_tiers_update",
        request=TierUpdateInput,
        responses=OperatorTierOutput,
        description="Change the fields sent (audited `prioritytier.update`, as admin's edit"
        " is). Idle durations in seconds; null for none.",
    )
    def patch(self, request, name: str):
        tier = selectors.tier_for_operator(caller=caller_of(request), name=name)
        changes = validated(TierUpdateInput, request).changes()
        return Response(OperatorTierOutput(_setting_update(request, tier, changes)).data)


class QuotaGrantCollectionApi(OperatorCollectionApiView):
    queryset = QuotaGrant.objects.none()
    filterset_class = QuotaGrantFilter
    ordering_fields = ["organization__slug", "gpu_class__name", "guarantee", "limit"]

    @extend_schema(
        operation_id="operator_quota_grants_list", responses=OperatorQuotaGrantOutput(many=True)
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.quota_grants_for_operator(caller=caller_of(request)),
            serializer_class=OperatorQuotaGrantOutput,
        )

    @extend_schema(
        operation_id="operator_quota_grants_set",
        request=QuotaGrantSetInput,
        responses={200: OperatorQuotaGrantOutput, 201: OperatorQuotaGrantOutput},
        description="Set the quota of an organization (or of one of its projects) for a GPU"
        " class and resource: created (201) or changed (200) to the amounts sent, audited"
        " `quota.set` with the reason; its namespaces' ResourceQuotas follow.",
    )
    def post(self, request):
        serializer = validated(QuotaGrantSetInput, request)
        data = serializer.validated_data
        grant, created = services.quota_grant_set(
            caller=caller_of(request),
            key=serializer.key(),
            guarantee=data["guarantee"],
            limit=data["limit"],
            cohort=data["cohort"],
            reason=data["reason"],
            region_limits=data.get("region_limits"),
        )
        return Response(
            OperatorQuotaGrantOutput(grant).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class QuotaGrantRemoveApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_quota_grants_remove",
        request=QuotaGrantKeyInput,
        responses={204: None},
        description="Take away the quota the body names, audited `quota.delete` with the"
        " reason; 404 if there is none.",
    )
    def post(self, request):
        serializer = validated(QuotaGrantKeyInput, request)
        services.quota_grant_remove(
            caller=caller_of(request),
            key=serializer.key(),
            reason=serializer.validated_data["reason"],
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReservationListApi(OperatorCollectionApiView):
    queryset = Reservation.objects.none()
    filterset_class = ReservationDecisionFilter
    ordering_fields = ["requested_at", "starts_at", "state"]

    @extend_schema(
        operation_id="operator_reservations_list",
        responses=OperatorReservationOutput(many=True),
        description="Every organization's reservations, the oldest request first;"
        " `?state=requested` lists those waiting for a decision.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.reservations_for_operator(caller=caller_of(request)),
            serializer_class=OperatorReservationOutput,
        )


def _reservation(request, reservation_id: str):
    caller = caller_of(request)
    return caller, selectors.reservation_for_operator(caller=caller, pk=reservation_id)


def _reservation_answer(request, reservation_id: str) -> Response:
    reservation = selectors.reservations_for_operator(caller=caller_of(request)).get(
        pk=reservation_id
    )
    return Response(OperatorReservationOutput(reservation).data)


class ReservationApproveApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_reservations_approve",
        request=None,
        responses=OperatorReservationOutput,
        description="Approve a requested reservation (audited `reservation.approve`, mailed);"
        " one already decided is a 409 `not_requested`.",
    )
    def post(self, request, reservation_id: str):
        caller, reservation = _reservation(request, reservation_id)
        services.reservation_approve(caller=caller, reservation=reservation)
        return _reservation_answer(request, reservation_id)


class ReservationRejectApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_reservations_reject",
        request=ReasonInput,
        responses=OperatorReservationOutput,
        description="Reject a requested reservation, saying why (audited"
        " `reservation.reject`, mailed); one already decided is a 409 `not_requested`.",
    )
    def post(self, request, reservation_id: str):
        caller, reservation = _reservation(request, reservation_id)
        reason = validated(ReasonInput, request).validated_data["reason"]
        services.reservation_reject(caller=caller, reservation=reservation, reason=reason)
        return _reservation_answer(request, reservation_id)


class QuotaRequestListApi(OperatorCollectionApiView):
    queryset = QuotaRequest.objects.none()
    filterset_class = QuotaRequestDecisionFilter
    ordering_fields = ["requested_at", "state"]

    @extend_schema(
        operation_id="operator_quota_requests_list",
        responses=OperatorQuotaRequestOutput(many=True),
        description="Every organization's quota requests, the oldest first;"
        " `?state=requested` lists those waiting for a decision.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.quota_requests_for_operator(caller=caller_of(request)),
            serializer_class=OperatorQuotaRequestOutput,
        )


def _quota_request(request, request_id: str):
    caller = caller_of(request)
    return caller, selectors.quota_request_for_operator(caller=caller, pk=request_id)


def _quota_request_answer(request, request_id: str) -> Response:
    quota_request = selectors.quota_requests_for_operator(caller=caller_of(request)).get(
        pk=request_id
    )
    return Response(OperatorQuotaRequestOutput(quota_request).data)


class QuotaRequestApproveApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_quota_requests_approve",
        request=QuotaApproveInput,
        responses=OperatorQuotaRequestOutput,
        description="Grant a requested increase, or `amount` instead, until `until` instead"
        " (audited `quota_request.approve`, mailed); one already decided is a 409"
        " `not_requested`.",
    )
    def post(self, request, request_id: str):
        caller, quota_request = _quota_request(request, request_id)
        data = validated(QuotaApproveInput, request).validated_data
        services.quota_request_approve(
            caller=caller,
            quota_request=quota_request,
            amount=data.get("amount"),
            until=data.get("until"),
        )
        return _quota_request_answer(request, request_id)


class QuotaRequestRejectApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_quota_requests_reject",
        request=ReasonInput,
        responses=OperatorQuotaRequestOutput,
        description="Deny a requested increase, saying why (audited `quota_request.reject`,"
        " mailed); one already decided is a 409 `not_requested`.",
    )
    def post(self, request, request_id: str):
        caller, quota_request = _quota_request(request, request_id)
        reason = validated(ReasonInput, request).validated_data["reason"]
        services.quota_request_reject(caller=caller, quota_request=quota_request, reason=reason)
        return _quota_request_answer(request, request_id)


class QueueApi(OperatorCollectionApiView):
    queryset = Workload.objects.none()
    filterset_class = QueueFilter
    ordering_fields = ["queue_position", "submitted_at"]

    @extend_schema(
        operation_id="operator_queue_list",
        responses=QueueEntryOutput(many=True),
        description="Every tenant's waiting workloads in the engine's queue order, each with"
        " why it waits (`pending_code`, `pending_message`), its position and estimated start.",
    )
    def get(self, request):
        return list_response(
            view=self,
            queryset=selectors.queue_across_tenants(caller=caller_of(request)),
            serializer_class=QueueEntryOutput,
        )


class InsightListApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_insights_list",
        responses=InsightOutput(many=True),
        description="The problems the insights' rules find now (every app's), as the"
        " operators' insights page shows them.",
    )
    def get(self, request):
        found = insights.insights(caller=caller_of(request), now=clock.now())
        return Response(InsightOutput(found, many=True).data)


class EstimateCalibrationApi(OperatorApiView):
    query_serializer = CalibrationQuery

    @extend_schema(
        operation_id="operator_estimate_calibration",
        parameters=[CalibrationQuery],
        responses=EstimateCalibrationOutput(many=True),
        description="How the start estimates held for the workloads that started in the"
        " period: of each one's first estimate, the share of actual starts inside its 80%"
        " interval and the median absolute error of its most likely start; overall (first,"
        " `gpu_class` empty), then per GPU class.",
    )
    def get(self, request):
        query = CalibrationQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        until = clock.now()
        figures = selectors.estimate_calibration(
            caller=caller_of(request),
            since=until - timedelta(days=query.validated_data["days"]),
            until=until,
        )
        return Response(EstimateCalibrationOutput(figures, many=True).data)
