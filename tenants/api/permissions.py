from rest_framework import permissions

from tenants.models import ApiToken


class TokenScopeAllows(permissions.BasePermission):
    """Signed in; and a read-scoped token only reads. Tenant roles are checked by the services."""

    message = "This API token is read-only."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if isinstance(request.auth, ApiToken) and not request.auth.can_write:
            return request.method in permissions.SAFE_METHODS
        return True
