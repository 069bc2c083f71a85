import django_filters

from portal.api.filters import EnumFilter, UtcDateTimeFilter
from tenants.models import ApiToken, AuditEvent, Membership, Organization, Project, Role


class OrganizationFilter(django_filters.FilterSet):
    status = EnumFilter(choices=Organization.Status.choices)
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Organization
        fields = ["status"]


class MembershipFilter(django_filters.FilterSet):
    role = EnumFilter(choices=Role.choices)
    email = django_filters.CharFilter(field_name="user__email", lookup_expr="icontains")

    class Meta:
        model = Membership
        fields = ["role"]


class InvitationFilter(django_filters.FilterSet):
    role = EnumFilter(choices=Role.choices)
    email = django_filters.CharFilter(lookup_expr="icontains")


class ProjectFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(method="filter_search")

    class Meta:
        model = Project
        fields = []

    def filter_search(self, queryset, name, value):
        return queryset.filter(name__icontains=value) | queryset.filter(slug__icontains=value)


class TokenFilter(django_filters.FilterSet):
    scope = EnumFilter(choices=ApiToken.Scope.choices)
    owner = django_filters.CharFilter(field_name="owner__email", lookup_expr="iexact")

    class Meta:
        model = ApiToken
        fields = ["scope"]


class AuditEventFilter(django_filters.FilterSet):
    action = django_filters.CharFilter()
    actor = django_filters.CharFilter(field_name="actor_email", lookup_expr="iexact")
    target_type = django_filters.CharFilter()
    since = UtcDateTimeFilter(field_name="at", lookup_expr="gte")
    until = UtcDateTimeFilter(field_name="at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["action", "target_type"]
