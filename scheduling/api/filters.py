import django_filters

from portal.api.filters import EnumFilter
from scheduling.models import Node, NodePool, QuotaGrant, QuotaRequest, Reservation, Workload


class WorkloadFilter(django_filters.FilterSet):
    state = EnumFilter(choices=Workload.State.choices)
    kind = EnumFilter(choices=Workload.Kind.choices)
    tier = django_filters.CharFilter(field_name="tier__name")
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Part of the name.")

    class Meta:
        model = Workload
        fields = ["state", "kind"]


# A query parameter that is true or false, spelt so: anything else is a 400.
TRUE_FALSE = [("true", "true"), ("false", "false")]


def _flag(queryset, name: str, value: str):
    return queryset.filter(**{name: value == "true"})


class PoolFilter(django_filters.FilterSet):
    gpu_class = django_filters.CharFilter(field_name="gpu_class__name")
    purpose = EnumFilter(choices=NodePool.Purpose.choices)

    class Meta:
        model = NodePool
        fields = ["purpose"]


class NodeFilter(django_filters.FilterSet):
    pool = django_filters.CharFilter(field_name="pool__name")
    gpu_class = django_filters.CharFilter(field_name="pool__gpu_class__name")
    ready = EnumFilter(choices=TRUE_FALSE, method=_flag)
    cordoned = EnumFilter(choices=TRUE_FALSE, method=_flag)
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Part of the name.")

    class Meta:
        model = Node
        fields = []


class OrganizationScopedFilter(django_filters.FilterSet):
    """Rows of every tenant, narrowed to one organization (its slug) if asked."""

    organization = django_filters.CharFilter(field_name="organization__slug")


class QuotaGrantFilter(OrganizationScopedFilter):
    gpu_class = django_filters.CharFilter(field_name="gpu_class__name")
    project = django_filters.CharFilter(field_name="project__slug")

    class Meta:
        model = QuotaGrant
        fields = []


class ReservationDecisionFilter(OrganizationScopedFilter):
    state = EnumFilter(choices=Reservation.State.choices)

    class Meta:
        model = Reservation
        fields = ["state"]


class QuotaRequestDecisionFilter(OrganizationScopedFilter):
    state = EnumFilter(choices=QuotaRequest.State.choices)

    class Meta:
        model = QuotaRequest
        fields = ["state"]


class QueueFilter(django_filters.FilterSet):
    organization = django_filters.CharFilter(field_name="project__organization__slug")
    tier = django_filters.CharFilter(field_name="tier__name")
    pending_code = django_filters.CharFilter(help_text="Why it waits, e.g. `quota`.")

    class Meta:
        model = Workload
        fields = []
