"""Fairness over time in the API: an organization's own standing in fair share (its members),
every organization's standing and the fair-share weight (operators, audited as admin's edit)."""

from decimal import Decimal

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from portal import clock
from portal.api.serializers import InputSerializer
from portal.api.views import ApiView, validated
from scheduling import selectors
from tenants import selectors as tenant_selectors
from tenants.api.operator import OperatorApiView
from tenants.lookups import organization_of
from tenants.permissions import caller_of
from tenants.services import organization_update_by_operator


class StandingOutput(serializers.Serializer):
    organization = serializers.CharField()
    weight = serializers.FloatField()
    decayed_gpu_hours = serializers.FloatField(
        help_text="Class-weighted GPU-hours of ended and running work, each counting half"
        " after every half-life."
    )
    current_share = serializers.FloatField(help_text="Of the cluster's GPUs, held now.")
    usage_share = serializers.FloatField(
        help_text="Its part of every organization's decayed usage."
    )
    fair_share = serializers.FloatField(
        help_text="The weight over the weights of every organization that uses or waits."
    )
    times_its_share = serializers.FloatField(
        help_text="What it used (now and decayed) against its fair share: 1 is exactly it."
    )
    behind = serializers.ListField(
        child=serializers.CharField(),
        help_text="Organizations with work waiting that goes before its own at the same tier.",
    )
    ahead_of = serializers.ListField(
        child=serializers.CharField(),
        help_text="Organizations with work waiting that goes after its own at the same tier.",
    )
    half_life_hours = serializers.FloatField(help_text="0: past usage does not count.")
    sentence = serializers.CharField(help_text="Why its work is ordered where it is.")


class WeightInput(InputSerializer):
    weight = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0.01"), max_value=Decimal("1000")
    )


class FairShareStandingApi(ApiView):
    @extend_schema(operation_id="fair_share_retrieve", responses=StandingOutput)
    def get(self, request, org_slug: str):
        standing = selectors.fair_share_standing(
            caller=caller_of(request),
            organization=organization_of(request, org_slug),
            now=clock.now(),
        )
        return Response(StandingOutput(standing).data)


class OperatorFairShareListApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_fair_share_list",
        responses=StandingOutput(many=True),
        description="Every organization that uses GPUs, used them or waits, first in the"
        " queue first (at the same tier).",
    )
    def get(self, request):
        standings = selectors.fair_share_standings(caller=caller_of(request), now=clock.now())
        return Response(StandingOutput(standings, many=True).data)


class OperatorFairShareWeightApi(OperatorApiView):
    @extend_schema(
        operation_id="operator_fair_share_weight_update",
        request=WeightInput,
        responses=StandingOutput,
        description="Set the organization's fair-share weight (audited `organization.update`,"
        " as admin's edit is); its standing after.",
    )
    def patch(self, request, org_slug: str):
        caller = caller_of(request)
        organization = tenant_selectors.organization_for_operator(caller=caller, slug=org_slug)
        weight = validated(WeightInput, request).validated_data["weight"]
        organization_update_by_operator(
            caller=caller, organization=organization, fair_share_weight=weight
        )
        standings = selectors.fair_share_standings(
            caller=caller, now=clock.now(), including=organization.slug
        )
        standing = next(s for s in standings if s.organization == organization.slug)
        return Response(StandingOutput(standing).data)
