import django_filters

from billing.models import CostModel, Credit, Invoice, Order
from portal.api.filters import DateFilter, EnumFilter


class OrderFilter(django_filters.FilterSet):
    state = EnumFilter(choices=Order.State.choices)

    class Meta:
        model = Order
        fields = ["state"]


class OperatorOrderFilter(OrderFilter):
    organization = django_filters.CharFilter(field_name="organization__slug")


class InvoiceFilter(django_filters.FilterSet):
    organization = django_filters.CharFilter(field_name="organization__slug")
    state = EnumFilter(choices=Invoice.State.choices)
    month = DateFilter(help_text="The month's first day, e.g. 2026-11-01.")

    class Meta:
        model = Invoice
        fields = ["state"]


class CreditFilter(django_filters.FilterSet):
    organization = django_filters.CharFilter(field_name="organization__slug")

    class Meta:
        model = Credit
        fields = []


class CostModelFilter(django_filters.FilterSet):
    pool = django_filters.CharFilter(field_name="pool__name")

    class Meta:
        model = CostModel
        fields = []
