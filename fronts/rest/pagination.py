"""Paging for every list (SPEC §3): by cursor, or by offset where the order is a ranking.

The paging parameters are strict input like any other (SPEC §3): ``limit`` and ``offset``
are whole numbers (``limit`` from 1; above the most a page holds it is that most), a
``cursor`` is one a list gave, and each list takes the one it pages by (``offset`` on a list
paged by cursor, or the reverse, would quietly answer the first page). Anything else is ``422 invalid_request`` naming the parameter,
never a page read as if it had not been sent, and never a ``500`` from a cursor made up by
hand: DRF reads such a one as a position it compares the ordering column with.
"""
from __future__ import annotations

import re
from base64 import b64encode
from urllib.parse import urlencode

from rest_framework.exceptions import NotFound as CursorNotFound
from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination

from common.refusals import InvalidRequest

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")  # below 2**63: the columns lists are ordered by are bigints
# The paging parameters as read here, for /v1/schema. A cursor is one a list gave: opaque, so its
# schema cannot tell the ones the server made from the rest (docs/api.md).
PAGING_SCHEMAS = {"limit": {"type": "integer", "minimum": 1, "maximum": 10**18 - 1},
                  "offset": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
                  "cursor": {"type": "string", "minLength": 1}}
POSITION = re.compile(r"0|[1-9][0-9]{0,17}")  # a cursor's position, as a list writes it (no leading zeros)


def whole_number(request, name: str, *, least: int, default: int) -> int:
    """The query parameter ``name`` as a whole number of at least ``least``; ``default`` when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not WHOLE_NUMBER.fullmatch(raw) or int(raw) < least:
        raise InvalidRequest(f"`{name}` must be a whole number from {least}.",
                             fields={name: [f"A whole number from {least}."]})
    return int(raw)


def other_paging(request, name: str, pages_by: str) -> None:
    """``name`` pages the other kind of list: refused, not read as the first page."""
    if name in request.query_params:
        raise InvalidRequest(f"`{name}` does not page this list: it pages by `{pages_by}` (SPEC §13: a `q` list "
                             "pages by offset, the others by cursor).",
                             fields={name: [f"This list pages by `{pages_by}`."]})


def bad_cursor() -> InvalidRequest:
    return InvalidRequest("`cursor` is not one this list gave: start again without it, or follow `next`.",
                          fields={"cursor": ["Not a cursor this list gave."]})


class IdCursorPagination(CursorPagination):
    """Stable cursor pages: ``?cursor=…``, ``?limit=`` up to 200, over an integer column."""

    ordering = "id"
    page_size = PAGE_SIZE
    page_size_query_param = "limit"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request) -> int:
        return min(whole_number(request, "limit", least=1, default=self.page_size), self.max_page_size)

    def decode_cursor(self, request):
        other_paging(request, "offset", "cursor")
        try:
            cursor = super().decode_cursor(request)
        except CursorNotFound:
            raise bad_cursor() from None
        if cursor is None:
            return None
        if cursor == Cursor(offset=0, reverse=False, position=None):
            raise bad_cursor()  # ?cursor= with nothing in it: no list gives that one
        if cursor.position is not None and not POSITION.fullmatch(cursor.position):
            raise bad_cursor()
        # DRF's decoding forgives: base64 drops what is not of its alphabet, so ``%%%`` or
        # ``====`` read as an empty cursor, the first page. A cursor this list gave is the one
        # its own encoding makes of what it decodes to, character for character.
        if canonical(cursor) != request.query_params[self.cursor_query_param]:
            raise bad_cursor()
        return cursor


def canonical(cursor) -> str:
    """The cursor parameter DRF's ``encode_cursor`` writes for ``cursor``."""
    tokens = {}
    if cursor.offset != 0:
        tokens["o"] = str(cursor.offset)
    if cursor.reverse:
        tokens["r"] = "1"
    if cursor.position is not None:
        tokens["p"] = cursor.position
    return b64encode(urlencode(tokens, doseq=True).encode("ascii")).decode("ascii")


class PositionCursorPagination(IdCursorPagination):
    ordering = "position"


class RankedPagination(LimitOffsetPagination):
    """A list ordered by a ranking (how well tasks match ``q``, SPEC §13) pages by offset."""

    default_limit = PAGE_SIZE
    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request) -> int:
        return min(whole_number(request, "limit", least=1, default=self.default_limit), self.max_limit)

    def get_offset(self, request) -> int:
        other_paging(request, "cursor", "offset")
        return whole_number(request, "offset", least=0, default=0)
