from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Stable cursor pages (SPEC §3): ``?cursor=…``, ``?limit=`` up to 200."""

    ordering = "id"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200


class PositionCursorPagination(IdCursorPagination):
    ordering = "position"
