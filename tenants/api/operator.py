"""Who calls the operator API (`/api/v1/operator/…`): staff, through an operator token or
signed in. For anyone else it does not exist: every path answers 404, as an unknown one does
(anonymous, a tenant token, a staff user's tenant token). Each app's operator endpoints are
built on these views; their writes go through the same services as admin, which audit them."""

from drf_spectacular.openapi import AutoSchema
from rest_framework import exceptions, permissions

from portal.api.views import ApiView, CollectionApiView

from ..permissions import caller_of


class IsOperator(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated) and caller_of(request).is_operator


class OperatorSchema(AutoSchema):
    """Every operator endpoint under the one tag "operator"."""

    def get_tags(self) -> list[str]:
        return ["operator"]


class OperatorOnly:
    """An endpoint of the operator API: 404 to every caller but an operator."""

    permission_classes = [IsOperator]
    schema = OperatorSchema()

    def permission_denied(self, request, message=None, code=None):
        # The answer of a path that does not exist (portal.api.errors.api_not_found).
        raise exceptions.NotFound(f"No API endpoint at {request.path}.")


class OperatorApiView(OperatorOnly, ApiView):
    pass


class OperatorCollectionApiView(OperatorOnly, CollectionApiView):
    pass
