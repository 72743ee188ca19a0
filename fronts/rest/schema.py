"""``/v1/schema`` documents every answer a route gives, refusals included (SPEC §3).

drf-spectacular describes each route's success from its view and serializers; this hook adds
the refusals each operation can answer, with SPEC §3's problem body, from what the operation
is: every route refuses an unknown query parameter (``422``), may be rate-limited (``429``) and
answers ``503`` while the database is away; a route that takes a key answers ``401`` and
``403``; a route with a path parameter ``404`` (no such space, task, post…); one with a body
``400`` (malformed JSON), ``413`` and ``415``; one that changes something ``409`` (SPEC §4,
§7.1's idempotency refusals and the section's own); the feed ``410`` (events_expired). The
codes of each status are the registry's (``common.refusals.REFUSALS``), listed in
``GET /v1/reference?section=refusals``.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from common.refusals import REFUSALS
from fronts.rest.pagination import PAGING_SCHEMAS
from spaces.catalog import WORK_ITEM_ID_PATTERN

PROBLEM = "Problem"
MUTATING = {"post", "put", "patch", "delete"}
PROBLEM_TYPE = "application/problem+json"  # what common.problems answers a refusal with


class SpacesAutoSchema(AutoSchema):
    """drf-spectacular's schema of a view, with the query parameters the view takes
    (``ApiView.query_parameters``, which it refuses every other one by) documented as it reads
    them: the view's ``query_schemas``, the paging ones' (``PAGING_SCHEMAS``), else a string
    without NUL (the request middleware refuses one). No ``?format=``: no route takes it."""

    def get_override_parameters(self) -> list:
        parameters = list(super().get_override_parameters())
        if self.method not in ("GET", "HEAD"):
            return parameters
        named = {p.name for p in parameters if isinstance(p, OpenApiParameter)}
        schemas = {**PAGING_SCHEMAS, **getattr(self.view, "query_schemas", {})}
        return parameters + [query_parameter(name, schemas.get(name, NO_NUL))
                             for name in sorted(getattr(self.view, "query_parameters", ())) if name not in named]

    def _get_format_parameters(self) -> list:
        return []

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        """A field that says its form (``schema_pattern``: a slot id) has it in the schema; any
        other text a body takes is without NUL (DRF's CharField refuses one)."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        pattern = getattr(field, "schema_pattern", None)
        if pattern is not None:
            schema["pattern"] = pattern
        elif direction == "request" and isinstance(field, serializers.CharField) and schema.get("type") == "string" \
                and "pattern" not in schema and "enum" not in schema:
            # DRF trims white space before it checks a field is not blank: something visible, then.
            blank_refused = field.trim_whitespace and not field.allow_blank
            schema["pattern"] = "^[^\\x00]*[^\\x00\\s][^\\x00]*$" if blank_refused else NO_NUL["pattern"]
        return schema


NO_NUL = {"type": "string", "pattern": "^[^\\x00]*$"}


def query_parameter(name: str, schema: dict[str, Any]) -> OpenApiParameter:
    """A query parameter; an array is the parameter repeated (``?label=a&label=b``)."""
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, explode=True if schema.get("type") == "array" else None)


def page_of(serializer_class: type[serializers.Serializer] | None, name: str) -> Any:
    """``extend_schema`` for a list route: the page it answers (SPEC §3), ``results`` of
    ``serializer_class`` (None: objects), ``count`` where it pages by offset."""
    results = (serializer_class(many=True) if serializer_class is not None
               else serializers.ListField(child=serializers.DictField()))
    return extend_schema(responses=inline_serializer(name=f"{name}Page", fields={
        "next": serializers.URLField(allow_null=True), "previous": serializers.URLField(allow_null=True),
        "count": serializers.IntegerField(required=False, help_text="Lists paged by offset only."),
        "results": results}))


def problem_schema() -> dict[str, Any]:
    """SPEC §3's problem body (RFC 9457 members beside ``error`` and ``detail``); a section's
    refusal adds its own fields (``winner``, ``fields``, ``retry_after_ms``…)."""
    return {
        "type": "object",
        "required": ["error", "detail", "type", "title", "status"],
        "properties": {
            "error": {"type": "string", "enum": sorted({r.error for r in REFUSALS.values()})},
            "code": {"type": "string", "description": "The refusal's own code, where `error` names its family."},
            "detail": {"type": "string"},
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "fields": {"type": "object", "additionalProperties": True,
                       "description": "422 invalid_request: each field refused, with why."},
        },
        "additionalProperties": True,
    }


def refusal_statuses(path: str, method: str, operation: dict[str, Any]) -> set[int]:
    statuses = {404, 422, 429, 503}  # 404: no such space, task, link… by the path or by the body
    if any(requirement for requirement in operation.get("security", [{"ApiKey": []}])):
        statuses |= {401, 403}
    if "requestBody" in operation:
        statuses |= {400, 413, 415}
    if method in MUTATING:
        statuses.add(409)
    if path.endswith("/events"):
        statuses.add(410)
    return statuses


def document_refusals(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook (SPECTACULAR_SETTINGS)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[PROBLEM] = problem_schema()
    strict_request_bodies(schemas)
    slot_ids_in_paths(result)
    by_status: dict[int, list[str]] = {}
    for refusal in REFUSALS.values():
        by_status.setdefault(refusal.http_status, []).append(refusal.code)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in MUTATING | {"get", "head", "options"}:
                continue
            responses = operation.setdefault("responses", {})
            for status in sorted(refusal_statuses(path, method, operation)):
                responses.setdefault(str(status), {
                    "description": "Refused: " + ", ".join(sorted(by_status.get(status, []))) + " (SPEC §3).",
                    "content": {PROBLEM_TYPE: {"schema": {"$ref": f"#/components/schemas/{PROBLEM}"}}},
                })
    return result


def strict_request_bodies(schemas: dict[str, Any]) -> None:
    """Every body is strict input (SPEC §3: an unknown field is 422 naming it, nested objects
    too): each request component (COMPONENT_SPLIT_REQUEST names them ``…Request``, apart from the
    answers') says so."""
    for name, schema in schemas.items():
        if name.endswith("Request") and schema.get("type", "object") == "object" and "properties" in schema:
            schema["additionalProperties"] = False


def slot_ids_in_paths(result: dict[str, Any]) -> None:
    """A ``{work_item_id}`` in a path is a slot id, read as a body's is."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter.get("name") == "work_item_id":
                    parameter["schema"] = {"type": "string", "pattern": WORK_ITEM_ID_PATTERN}
