from rest_framework.generics import GenericAPIView
from rest_framework.response import Response


def list_response(*, view: GenericAPIView, queryset, serializer_class) -> Response:
    """A page of a selector's queryset after the view's filters and ordering."""
    page = view.paginate_queryset(view.filter_queryset(queryset))
    return view.get_paginated_response(serializer_class(page, many=True).data)
