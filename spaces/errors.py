"""The spaces app's refusals (SPEC §2, §3). The base class, the registry and the protocol-level
refusals live in ``common.refusals``; they are named here too, for the spaces code that
raises them as ``errors.X``."""
from __future__ import annotations

from common.refusals import (  # noqa: F401
    DomainError,
    Forbidden,
    IdempotencyKeyReused,
    InvalidRequest,
    MalformedJson,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthenticated,
    UnsupportedMediaType,
)

# --- Space, member and key refusals. ---------------------------------------------------------


class JoinLinkInvalid(DomainError):
    code = "join_link_invalid"
    http_status = 404
    title = "Join link not valid"
    meaning = "The join link does not exist, has expired, was deleted or has no uses left."


class RoleInvalid(DomainError):
    code = "role_invalid"
    http_status = 422
    title = "Unknown role"
    meaning = "A role is one of reader, writer, steward."


class LastSteward(DomainError):
    code = "last_steward"
    http_status = 409
    title = "Last steward"
    meaning = "A space keeps at least one steward; promote another member first."


class KeyNotFound(DomainError):
    code = "key_not_found"
    http_status = 404
    title = "Key not found"
    meaning = "No live key with that prefix in your space."


class NotPostAuthor(DomainError):
    code = "not_post_author"
    http_status = 403
    title = "Not the author"
    meaning = "Only a post's author may hide it (a steward withholds instead)."


class SpaceExists(DomainError):
    code = "space_exists"
    http_status = 409
    title = "Space exists"
    meaning = "A space with that slug already exists."


class CatalogInvalid(DomainError):
    code = "catalog_invalid"
    http_status = 422
    title = "Catalog invalid"
    meaning = "A catalog row is malformed: `work_item_id` is T + digits, a title is required, at most 50 aliases."
