"""What-if endpoints: a submission's body (or a batch's) in, what the scheduler would do with
it out; nothing is written."""

from dataclasses import asdict

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response

from portal.api.views import ApiView, validated
from scheduling import services
from tenants.lookups import project_of
from tenants.permissions import caller_of

from .alternative_serializers import AlternativeOutput
from .batch_serializers import WorkloadWhatIfBatchInput
from .placement_serializers import PendingOutput
from .serializers import WorkloadSubmitInput


class WhatIfCostOutput(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=14, decimal_places=2)
    currency = serializers.CharField()
    per = serializers.ChoiceField(
        choices=["run", "hour"],
        help_text="`run`: for its max runtime; `hour`: per hour, as it sets no max runtime.",
    )


class WorkloadWhatIfOutput(serializers.Serializer):
    name = serializers.CharField()
    outcome = serializers.ChoiceField(
        choices=["admitted", "waits", "refused"],
        help_text="`admitted`: the next cycle would start it; `waits`: it would queue (see "
        "`pending`); `refused`: submitting it would be refused (see `refusal`).",
    )
    gpu_class = serializers.CharField(
        help_text="Where it would run; when it waits, the class of its binding constraint."
    )
    pools = serializers.ListField(child=serializers.CharField())
    nodes = serializers.ListField(child=serializers.CharField())
    replicas = serializers.IntegerField(help_text="Replicas it would start with (0: none).")
    borrowed = serializers.BooleanField(help_text="It would run on capacity borrowed.")
    preempts = serializers.IntegerField(
        help_text="How many running workloads would be evicted to admit it (never whose)."
    )
    pending = PendingOutput(
        allow_null=True,
        help_text="Why it would wait, as a waiting workload's (null: it would not).",
    )
    refusal = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Why submitting it would be refused, by field (or by the check's code).",
    )
    cost = WhatIfCostOutput(allow_null=True, help_text="At the catalog's prices; null: unpriced.")
    alternatives = AlternativeOutput(
        many=True,
        help_text="When it would wait: what would unblock it, variants the engine has tried "
        "that start it sooner (each alone, not with the rest of a batch).",
    )


class WhatIfBasisOutput(serializers.Serializer):
    source = serializers.ChoiceField(
        choices=["last_cycle", "fresh_snapshot"],
        help_text="`last_cycle`: the state the last scheduling cycle left; `fresh_snapshot`: "
        "the cluster read afresh, as there was no fresh cycle (see `note`).",
    )
    decided_at = serializers.DateTimeField()
    note = serializers.CharField()


class WhatIfOutput(serializers.Serializer):
    basis = WhatIfBasisOutput(allow_null=True, help_text="Null when every workload is refused.")
    workloads = WorkloadWhatIfOutput(many=True)


def _data(report: services.WhatIfReport, *, organization_slug: str) -> dict:
    rows = []
    for item in report.workloads:
        answer = item.answer
        rows.append(
            {
                "name": item.name,
                "outcome": item.outcome,
                "gpu_class": answer.gpu_class if answer else "",
                "pools": list(answer.pools) if answer else [],
                "nodes": list(answer.nodes) if answer else [],
                "replicas": len(answer.placements) if answer else 0,
                "borrowed": answer.borrowed if answer else False,
                "preempts": answer.preempts if answer else 0,
                "pending": answer.pending if answer else None,
                "refusal": item.refusal,
                "cost": asdict(item.cost) if item.cost else None,
                "alternatives": item.alternatives,
            }
        )
    basis = asdict(report.basis) if report.basis else None
    context = {"organization_slug": organization_slug}
    return WhatIfOutput({"basis": basis, "workloads": rows}, context=context).data


WHAT_IF = (
    "Writes nothing: what the next scheduling cycle would do with {what} if submitted now and "
    "nothing else changed. The same validation and permission as submitting (a 400 for bad "
    "input); a refusal (a quota limit, a spent budget) is an answer with outcome `refused`."
)


class _WhatIfApi(ApiView):
    batch = False  # a batch's body, or a submission's

    def post(self, request, org_slug: str, project_slug: str):
        project = project_of(request, org_slug, project_slug)
        if self.batch:
            requests = validated(WorkloadWhatIfBatchInput, request).to_requests()
        else:
            requests = [validated(WorkloadSubmitInput, request).to_request()]
        report = services.workloads_what_if(
            caller=caller_of(request), project=project, requests=requests, batch=self.batch
        )
        return Response(_data(report, organization_slug=project.organization.slug))


def _documented(*, operation_id: str, body, what: str):
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            request=body,
            responses=WhatIfOutput,
            description=WHAT_IF.format(what=what),
        )
    )


@_documented(operation_id="workloads_what_if", body=WorkloadSubmitInput, what="this workload")
class WorkloadWhatIfApi(_WhatIfApi):
    pass


@_documented(
    operation_id="workloads_what_if_batch",
    body=WorkloadWhatIfBatchInput,
    what="these workloads (submitted together)",
)
class WorkloadBatchWhatIfApi(_WhatIfApi):
    batch = True
