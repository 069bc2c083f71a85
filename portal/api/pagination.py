import math

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class PagePagination(PageNumberPagination):
    """`page` (from 1) and `page_size` (1 to 500): anything else is a 400 naming the parameter;
    a page after the last is a 404."""

    page_size_query_param = "page_size"
    max_page_size = 500
    last_page_strings = ()

    def _number(self, request, name: str, *, high: int | None = None) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        digits = raw.lstrip("0") if raw.isascii() and raw.isdigit() else ""
        # A whole number of any length is one: a page past the last is a 404, not a 400.
        value = int(digits) if 0 < len(digits) <= 18 else (math.inf if digits else 0)
        if not 1 <= value <= (high or math.inf):
            bounds = f"from 1 to {high}" if high else "from 1"
            raise ValidationError({name: [f"A whole number {bounds}."]})
        return value

    def paginate_queryset(self, queryset, request, view=None):
        self._number(request, self.page_query_param)
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request) -> int:
        return self._number(request, self.page_size_query_param, high=self.max_page_size) or (
            self.page_size
        )

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters
