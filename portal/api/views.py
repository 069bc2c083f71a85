from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import exceptions
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

# The methods an endpoint answers are those its class defines, as the schema lists them: no
# OPTIONS (DRF's describes a serializer class that these views do not have), so it is a 405.
METHODS = [method for method in APIView.http_method_names if method != "options"]
# Taken by every endpoint: DRF's choice of renderer (`?format=json`).
COMMON_PARAMETERS = frozenset({api_settings.URL_FORMAT_OVERRIDE})


class KnownParametersOnly:
    """A query parameter the endpoint does not take is a 400 naming it, not silently ignored
    (`?state=bogus` where there is no state filter would otherwise list everything)."""

    def query_parameters(self) -> set[str]:
        return set()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not request.query_params:
            return  # nothing to check: spares building the filters (a submission's POST)
        known = self.query_parameters() | COMMON_PARAMETERS
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            takes = ", ".join(sorted(known - COMMON_PARAMETERS)) or "none"
            raise exceptions.ValidationError(
                {
                    name: [f"Unknown query parameter; this endpoint takes: {takes}."]
                    for name in unknown
                },
                code="unknown_parameter",
            )


class RequestTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "request_too_large"


def _body_read(request, *, limit: int) -> None:
    """Read the body now, under `limit` bytes instead of DATA_UPLOAD_MAX_MEMORY_SIZE: the
    parser then takes what was read (Django's request keeps it)."""
    django_request = request._request
    too_large = RequestTooLarge(f"The request body exceeds {limit} bytes.")
    if int(django_request.META.get("CONTENT_LENGTH") or 0) > limit:
        raise too_large
    django_request._body = django_request.read(limit + 1)
    if len(django_request._body) > limit:
        raise too_large


class ApiView(KnownParametersOnly, APIView):
    """One resource of the API. Its query parameters are the fields of `query_serializer`;
    its bodies may be as large as `body_max_bytes` (None: DATA_UPLOAD_MAX_MEMORY_SIZE)."""

    http_method_names = METHODS
    query_serializer = None
    body_max_bytes: int | None = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.body_max_bytes is not None and request.method in {"POST", "PUT", "PATCH"}:
            _body_read(request, limit=self.body_max_bytes)

    def query_parameters(self) -> set[str]:
        return set(self.query_serializer().fields) if self.query_serializer else set()


class CollectionApiView(KnownParametersOnly, GenericAPIView):
    """A collection of the API: filtered, ordered and paginated by `list_response`. Its query
    parameters are those its filters and paginator put in the schema."""

    http_method_names = METHODS

    def query_parameters(self) -> set[str]:
        names = set()
        for backend in (backend_class() for backend_class in self.filter_backends):
            if isinstance(backend, DjangoFilterBackend):
                filterset = backend.get_filterset_class(self, self.get_queryset())
                names |= set(filterset.base_filters) if filterset else set()
            else:
                names |= {p["name"] for p in backend.get_schema_operation_parameters(self)}
        if self.paginator is not None:
            names |= {p["name"] for p in self.paginator.get_schema_operation_parameters(self)}
        return names


def list_response(
    *, view: GenericAPIView, queryset, serializer_class, context: dict | None = None
) -> Response:
    """A page of a selector's queryset after the view's filters and ordering."""
    page = view.paginate_queryset(view.filter_queryset(queryset))
    return view.get_paginated_response(serializer_class(page, many=True, context=context).data)


def validated(serializer_class, request, **kwargs):
    """The request's body through an input serializer: the serializer, valid (its
    `validated_data` ready), or a 400 naming each field that is not."""
    serializer = serializer_class(data=request.data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer
