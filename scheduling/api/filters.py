import django_filters

from scheduling.models import Workload


class WorkloadFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=Workload.State.choices)
    kind = django_filters.ChoiceFilter(choices=Workload.Kind.choices)
    tier = django_filters.CharFilter(field_name="tier__name")

    class Meta:
        model = Workload
        fields = ["state", "kind"]
