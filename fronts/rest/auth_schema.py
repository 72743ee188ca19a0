"""Teach drf-spectacular about Bearer API keys so /v1/schema documents them."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "fronts.rest.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A member's API key: `Authorization: Bearer sk_…`"}
