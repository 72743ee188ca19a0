"""The full-text search vector of a task (SPEC §13 ``q``) and the terms a query matches it by.

Each task's stored vector holds the words of its title and body, and one more lexeme naming
its space: ``S`` and the space's id (upper case, so no word of a text ever stems to it). A
search asks for the words *and* that lexeme, so the one GIN index intersects the two posting
lists and reads only the space's matches: the cost does not grow with the matches of other
spaces (``benchmarks/search_bench.py``). The space's own condition stays in every query too;
the lexeme only lets the index find the rows.
"""
from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorCombinable, SearchVectorField
from django.db.models import F, Func, Q, TextField, Value
from django.db.models.functions import Cast

SEARCH_CONFIG = "english"  # one configuration for the stored vector and every query
SPACE_PREFIX = "S"


class SpaceLexeme(SearchVectorCombinable, Func):
    """``array_to_tsvector(ARRAY['S' || space_id::text])``: the space's lexeme, as a vector."""

    template = "array_to_tsvector(ARRAY[%(expressions)s])"
    arg_joiner = " || "
    output_field = SearchVectorField()

    def __init__(self, space: str = "space_id") -> None:
        super().__init__(Value(SPACE_PREFIX), Cast(F(space), TextField()))


def task_vector() -> SearchVector:
    """What the stored ``Task.search`` column holds."""
    return SearchVector("title", "body", config=SEARCH_CONFIG) + SpaceLexeme()


class SpaceTerm(SearchQuery):
    """``'S12'::tsquery``: the lexeme itself, not parsed (a parser would lower-case it)."""

    template = "%(expressions)s::tsquery"

    def __init__(self, space_id: int) -> None:
        super().__init__(Value(f"{SPACE_PREFIX}{int(space_id)}"))


def text_query(words: str) -> SearchQuery:
    """Words as a full-text query (web-search syntax: quotes, or, -word) in the vector's language."""
    return SearchQuery(words, search_type="websearch", config=SEARCH_CONFIG)


def text_match(words: str, space_id: int) -> Q:
    """The tasks of space ``space_id`` whose title or body match ``words``. Two conditions, not
    one query joined by ``&&``: words that are all stop words make an empty query, which
    matches nothing, where ``'' && 'S12'`` would match the whole space."""
    return Q(search=text_query(words)) & Q(search=SpaceTerm(space_id))
