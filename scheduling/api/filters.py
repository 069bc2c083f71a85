import django_filters

from portal.api.filters import EnumFilter
from scheduling.models import Workload


class WorkloadFilter(django_filters.FilterSet):
    state = EnumFilter(choices=Workload.State.choices)
    kind = EnumFilter(choices=Workload.Kind.choices)
    tier = django_filters.CharFilter(field_name="tier__name")
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Part of the name.")

    class Meta:
        model = Workload
        fields = ["state", "kind"]
