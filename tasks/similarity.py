"""Similar tasks (SPEC §16): the duplicates no conflict key catches.

A title's *terms* are SPEC §4.3's tokens less English function words ("is", "it",
"should": the Snowball project's stop list, which PostgreSQL's ``english`` configuration uses
too), each reduced to its Snowball English stem ("rotating" and "rotate" are one term). The
space's live titles weigh each term by its rarity: ``weight = ln((live + 1) / (titles_with_it
+ 1)) + 1``, an inverse document frequency whose counts PostgreSQL keeps (``TitleTerm`` rows,
counted in the transaction that creates or ends a task).

Two titles score ``shared / (shared + only_a + only_b + 3 × min(only_a, only_b))``, each the
summed weight of the terms they share or that one side alone has: shared rare terms count for
much, shared common words for little, and every distinctive term on one side only pulls the
score down. When *both* sides have one ("Fix flaky test in the login flow" / "… checkout
flow": the same shape with another object) it pulls much harder; a title that only adds to
the other ("Onboarding guide" / "Write the onboarding guide") is punished for the addition
alone.

The counts come from the index itself (``TitleTerm``: a row per term of each live title,
written by the create statement and deleted by the transaction that ends the task), counted up
to ``COUNT_CAP``: a term in that many live titles is as common as a term gets, and the count
stays cheap however large the space. A title's candidates are the live titles sharing one of
its ``required_terms``, read through the same index, never by scanning the space.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import snowballstemmer
from django.db import connection

from allocation.binding import tokens

# Tuned on tests/fixtures/similar-pairs.json (docs/benchmarks.md, "Similar tasks").
DEFAULT_THRESHOLD = 0.45  # spaces.models.Space.similar_threshold's default
BOTH_SIDES_PENALTY = 3
MAX_SIMILAR = 5

# The Snowball English stop list (snowballstem.org/algorithms/english/stop.txt).
FUNCTION_WORDS = frozenset("""
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
    her hers herself it its itself they them their theirs themselves what which who whom this that
    these those am is are was were be been being have has had having do does did doing a an the and
    but if or because as until while of at by for with about against between into through during
    before after above below to from up down in out on off over under again further then once here
    there when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don should now
""".split())

# Titles are counted up to this many: a term in COUNT_CAP live titles weighs what the most
# common term weighs (measured on the labelled pairs: the same precision and recall as exact
# counts, docs/benchmarks.md).
COUNT_CAP = 200

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def stem(token: str) -> str:
    return _stemmer.stemWord(token)


def terms(title: str) -> list[str]:
    """The title's terms, sorted: §4.3's tokens but function words, stemmed."""
    return sorted({stem(token) for token in tokens(title) if token not in FUNCTION_WORDS})


def weight(titles_with_term: int, live_titles: int) -> float:
    """How much a term counts: rare in the space's live titles, much; in all of them, 1."""
    live = min(live_titles, COUNT_CAP)
    return math.log((live + 1) / (min(titles_with_term, live) + 1)) + 1.0


@dataclass(frozen=True)
class Weights:
    """The weights of a space's terms, from the counts the database keeps."""

    counts: Mapping[str, int]  # term → live titles that have it
    live_titles: int

    def __call__(self, term: str) -> float:
        return weight(self.counts.get(term, 0), self.live_titles)

    def total(self, title_terms: Iterable[str]) -> float:
        return sum(self(t) for t in title_terms)


def score(a: Sequence[str], b: Sequence[str], weights: Weights) -> float:
    """How alike two titles are, from 0 to 1 (the module's docstring says how)."""
    a, b = set(a), set(b)
    shared = weights.total(a & b)
    if not shared:
        return 0.0
    only_a, only_b = weights.total(a - b), weights.total(b - a)
    return shared / (shared + only_a + only_b + BOTH_SIDES_PENALTY * min(only_a, only_b))


def required_terms(title_terms: Sequence[str], weights: Weights, threshold: float) -> list[str]:
    """The terms a title scoring ``threshold`` with this one must share at least one of.

    A title that shares only the lightest terms, whose weights sum to less than ``threshold``
    of this title's weight, cannot reach it (the shared weight is at most theirs; the score's
    denominator at least this title's weight): so only the others are looked up in the index
    (prefix filtering).
    """
    ordered = sorted(title_terms, key=lambda t: (weights(t), t))
    bound = threshold * weights.total(ordered)
    light = 0.0
    for index, term in enumerate(ordered):
        light += weights(term)
        if light >= bound:
            return ordered[index:]
    return []


@dataclass(frozen=True)
class Candidate:
    id: int
    number: int
    title: str
    status: str
    terms: Sequence[str]


def ranked(title_terms: Sequence[str], candidates: Iterable[Candidate], weights: Weights, threshold: float,
           limit: int = MAX_SIMILAR) -> list[tuple[Candidate, float]]:
    """The candidates that reach ``threshold``, best first (then lowest number), at most ``limit``."""
    scored = [(c, score(title_terms, c.terms, weights)) for c in candidates]
    kept = [(c, s) for c, s in scored if s >= threshold]
    kept.sort(key=lambda cs: (-cs[1], cs[0].number))
    return kept[:limit]


def likely_pairs(titles: Sequence[Candidate], weights: Weights, threshold: float,
                 skip: set[tuple[int, int]] = frozenset(), limit: int = 50) -> list[tuple[Candidate, Candidate, float]]:
    """Pairs of live titles that reach ``threshold``, best first: each title is matched through
    an inverted index of the others on its required terms only, never against every title."""
    index: dict[str, list[Candidate]] = {}
    for title in titles:
        for term in title.terms:
            index.setdefault(term, []).append(title)
    found: dict[tuple[int, int], tuple[Candidate, Candidate, float]] = {}
    seen: set[tuple[int, int]] = set(skip)
    for title in titles:
        for term in required_terms(title.terms, weights, threshold):
            for other in index.get(term, ()):
                pair = (min(title.id, other.id), max(title.id, other.id))
                if other.id == title.id or pair in seen:
                    continue
                seen.add(pair)
                value = score(title.terms, other.terms, weights)
                if value >= threshold:
                    low, high = sorted((title, other), key=lambda c: c.number)
                    found[pair] = (low, high, value)
    return sorted(found.values(), key=lambda p: (-p[2], p[0].number, p[1].number))[:limit]


# --- The database: counts, candidates, the index ---------------------------------------------


def read_weights(space_id: int, title_terms: Iterable[str]) -> Weights:
    """The weights of ``title_terms`` in the space, counted in its index: one statement."""
    from tasks.sql import term_counts_sql

    counts, live = {}, 0
    with connection.cursor() as cursor:
        cursor.execute(term_counts_sql(COUNT_CAP), {"space": space_id, "terms": sorted(set(title_terms))})
        for term, count in cursor.fetchall():
            if term is None:
                live = count
            else:
                counts[term] = count
    return Weights(counts, live)


def similar_to(space, title: str, *, exclude: int | None = None) -> list[tuple[Candidate, float]]:
    """The live tasks of ``space`` whose titles are most like ``title`` (SPEC §16): best first,
    at most MAX_SIMILAR, each at least the space's ``similar_threshold``. Two statements: the
    title's term counts, then its candidates with the counts of their other terms."""
    from tasks.sql import similar_candidates_sql

    title_terms = terms(title)
    if not title_terms:
        return []
    threshold = space.similar_threshold
    weights = read_weights(space.pk, title_terms)
    counts, candidates = dict(weights.counts), []
    with connection.cursor() as cursor:
        cursor.execute(similar_candidates_sql(COUNT_CAP), {
            "space": space.pk, "required": required_terms(title_terms, weights, threshold), "exclude": exclude,
            "known": title_terms})
        for *task, term, count in cursor.fetchall():
            if term is None:
                candidates.append(Candidate(*task))
            else:
                counts[term] = count
    return ranked(title_terms, candidates, Weights(counts, weights.live_titles), threshold)


def as_answer(similar: list[tuple[Candidate, float]]) -> list[dict]:
    """``similar`` as SPEC §16 answers it: ``[{"id", "title", "status", "score"}]``."""
    return [{"id": c.number, "title": c.title, "status": c.status, "score": round(value, 3)} for c, value in similar]


def forget(task) -> None:
    """A task that stopped being live leaves the index (its own rows, so nobody waits)."""
    from tasks.models import TitleTerm

    if task.title_terms:
        TitleTerm.objects.filter(space_id=task.space_id, term__in=task.title_terms, task_id=task.pk).delete()


def live_titles(space) -> list[Candidate]:
    from tasks.models import LIVE_STATUSES, Task

    rows = (Task.objects.filter(space_id=space.pk, status__in=LIVE_STATUSES).exclude(title_terms=[])
            .values_list("id", "number", "title", "status", "title_terms"))
    return [Candidate(*row) for row in rows]


def likely_duplicates(space, *, limit: int = 50) -> list[tuple[Candidate, Candidate, float]]:
    """Pairs of the space's live tasks likely to be the same work, best first, without the pairs
    a steward said are distinct (SPEC §16). The live titles are read once and counted here, as
    the index counts them (each count capped at COUNT_CAP)."""
    from tasks.models import DistinctPair

    titles = live_titles(space)
    counts: dict[str, int] = {}
    for title in titles:
        for term in title.terms:
            counts[term] = counts.get(term, 0) + 1
    skip = set(DistinctPair.objects.filter(space_id=space.pk).values_list("first_id", "second_id"))
    return likely_pairs(titles, Weights(counts, len(titles)), space.similar_threshold, skip=skip, limit=limit)


def mark_distinct(*, task, other, actor) -> None:
    """A steward says two tasks are not duplicates: the pair is remembered and not shown again.
    Saying it twice changes nothing (the pair's unique constraint)."""
    from tasks.models import DistinctPair
    from tasks.errors import SurvivorInvalid

    if other.space_id != task.space_id or other.pk == task.pk:
        raise SurvivorInvalid("The other task must be another task of this space.")
    first, second = sorted((task.pk, other.pk))
    DistinctPair.objects.bulk_create([DistinctPair(space_id=task.space_id, first_id=first, second_id=second,
                                                   marked_by=actor)], ignore_conflicts=True)


def pair_answer(pair: tuple[Candidate, Candidate, float]) -> dict:
    first, second, value = pair
    return {"tasks": [{"id": c.number, "title": c.title, "status": c.status} for c in (first, second)],
            "score": round(value, 3)}
