from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

# The methods an endpoint answers are those its class defines, as the schema lists them: no
# OPTIONS (DRF's describes a serializer class that these views do not have), so it is a 405.
METHODS = [method for method in APIView.http_method_names if method != "options"]


class ApiView(APIView):
    """One resource of the API."""

    http_method_names = METHODS


class CollectionApiView(GenericAPIView):
    """A collection of the API: filtered, ordered and paginated by `list_response`."""

    http_method_names = METHODS


def list_response(
    *, view: GenericAPIView, queryset, serializer_class, context: dict | None = None
) -> Response:
    """A page of a selector's queryset after the view's filters and ordering."""
    page = view.paginate_queryset(view.filter_queryset(queryset))
    return view.get_paginated_response(serializer_class(page, many=True, context=context).data)
