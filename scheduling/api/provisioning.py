"""A project's provisioning, cluster by cluster: where its namespace is ready, pending, failed
or removed, and why."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from portal.api.views import ApiView
from scheduling import selectors
from scheduling.models import ProvisioningRecord
from tenants.lookups import project_of
from tenants.permissions import caller_of


class ProvisioningOutput(serializers.ModelSerializer):
    cluster = serializers.CharField(
        source="cluster.name",
        default=None,
        allow_null=True,
        read_only=True,
        help_text="The cluster (null: the settings' backend, before any cluster was known).",
    )
    region = serializers.CharField(
        source="cluster.region", default=None, allow_null=True, read_only=True
    )
    error = serializers.CharField(
        read_only=True, help_text="Why it failed, or what is being retried (empty: nothing)."
    )

    class Meta:
        model = ProvisioningRecord
        fields = ["cluster", "region", "state", "error", "attempts", "provisioned_at"]


class ProjectProvisioningApi(ApiView):
    @extend_schema(
        operation_id="project_provisioning_list",
        responses=ProvisioningOutput(many=True),
        description="The project's namespace in each cluster its organization may use (and any"
        " other that holds it): pending there until the worker first provisions it.",
    )
    def get(self, request, org_slug: str, project_slug: str):
        project = project_of(request, org_slug, project_slug)
        records = selectors.project_provisioning(caller=caller_of(request), project=project)
        return Response(ProvisioningOutput(records, many=True).data)
