"""Who calls the API with a token: the `Authorization: Bearer` scheme and its OpenAPI entry."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from portal.errors import Forbidden
from tenants.services import token_authenticate


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`: the token's owner, narrowed to the token's organization."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Send the header as 'Authorization: Bearer <token>'."
            )
        try:
            token = token_authenticate(secret=header[1].decode("ascii", errors="replace"))
        except Forbidden as error:
            raise exceptions.AuthenticationFailed(str(error)) from error
        return token.owner, token

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API token of the portal."}
