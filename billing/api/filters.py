import django_filters

from billing.models import Order
from portal.api.filters import EnumFilter


class OrderFilter(django_filters.FilterSet):
    state = EnumFilter(choices=Order.State.choices)

    class Meta:
        model = Order
        fields = ["state"]
