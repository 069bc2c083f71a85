"""REST endpoints of billing: the catalog with the prices that apply to the caller."""

from drf_spectacular.utils import extend_schema

from billing import selectors
from billing.models import CatalogItem
from portal.api.views import CollectionApiView, list_response
from scheduling import clock
from tenants import selectors as tenant_selectors
from tenants.permissions import caller_of

from .serializers import CatalogItemOutput


class CatalogListApi(CollectionApiView):
    queryset = CatalogItem.objects.none()
    ordering_fields = ["gpu_class__name", "kind", "slug"]

    @extend_schema(
        operation_id="catalog_list",
        responses=CatalogItemOutput(many=True),
        description="What the organization may order now, with the unit price in force and"
        " the next price version if one is dated. Money is a decimal string in `currency`.",
    )
    def get(self, request, org_slug: str):
        caller = caller_of(request)
        organization = tenant_selectors.organization_get(caller=caller, slug=org_slug)
        return list_response(
            view=self,
            queryset=selectors.catalog_for(
                caller=caller, organization=organization, at=clock.now()
            ),
            serializer_class=CatalogItemOutput,
        )
