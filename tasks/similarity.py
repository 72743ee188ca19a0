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
its ``probe_terms``, read through the same index, never by scanning the space.
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Collection, Iterable, Mapping, Sequence

import snowballstemmer
from django.db import connection

from allocation.binding import tokens
from spaces.models import Space
from tasks.errors import SurvivorInvalid
from tasks import sql
from tasks.models import LIVE_STATUSES, LIVE_TERM, DistinctPair, Task, TitleTerm

# Tuned on tests/fixtures/similar-pairs.json (docs/benchmarks.md, "Similar tasks").
# The space setting's default is the one value (spaces.models.Space.similar_threshold).
DEFAULT_THRESHOLD: float = Space._meta.get_field("similar_threshold").default
BOTH_SIDES_PENALTY = 3
MAX_SIMILAR = 5
# A title's candidates scored in full: those sharing the most of its weight. (The best five by
# score are among them unless many candidates share much but each adds more words of its own.)
CANDIDATES_SCORED = 4 * MAX_SIMILAR
# The live titles a title's hints read at most (SPEC §16), its rarest probe terms' first: the
# work of a create's hints is bounded however many live titles share its words (measured on
# the labelled pairs: the same precision and recall as reading every candidate,
# docs/benchmarks.md).
CANDIDATES_READ = 64

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
COUNT_CAP = 100

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def stem(token: str) -> str:
    return _stemmer.stemWord(token)


def terms(title: str) -> list[str]:
    """The title's terms, sorted: §4.3's tokens but function words, stemmed."""
    return sorted({stem(token) for token in tokens(title) if token not in FUNCTION_WORDS})


@lru_cache(maxsize=65_536)
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


def score(a: Collection[str], b: Collection[str], weights: Weights) -> float:
    """How alike two titles are, from 0 to 1 (the module's docstring says how)."""
    a, b = as_set(a), as_set(b)
    return alike(weights.total(a & b), weights.total(a), weights.total(b))


def alike(shared: float, total_a: float, total_b: float) -> float:
    """The score from the weight two titles share and each title's whole weight."""
    if not shared:
        return 0.0
    only_a, only_b = total_a - shared, total_b - shared
    return shared / (shared + only_a + only_b + BOTH_SIDES_PENALTY * min(only_a, only_b))


def as_set(terms: Collection[str]) -> frozenset[str] | set[str]:
    return terms if isinstance(terms, (set, frozenset)) else frozenset(terms)


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


def probe_terms(title_terms: Sequence[str], weights: Weights, threshold: float) -> list[str]:
    """The terms a title's matches are looked up by: its required terms that some live title
    has, but fewer than COUNT_CAP. A term no live title has finds nobody, so a title whose
    required terms are all new words has no candidates to read. A term that common weighs the
    least a term can, and looking it up would read a share of the whole space; so a title that
    shares *only* such terms with this one (both made of the space's most common words) is not
    found. That keeps each lookup at most COUNT_CAP index rows a term, however large and
    repetitive the space. Rarest first: a title's candidates are read in this order."""
    probed = [t for t in required_terms(title_terms, weights, threshold) if 0 < weights.counts.get(t, 0) < COUNT_CAP]
    return sorted(probed, key=lambda t: (weights.counts[t], t))  # rarest first: read first (CANDIDATES_READ)


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
    """Pairs of live titles that reach ``threshold``, best first, never matching every title
    against every other: each title is filed under its probe terms only, and matched with the
    titles filed under one of its own. Two titles that reach the threshold share a required
    term of each (prefix filtering with one order of terms for all: heaviest first, then by
    name), so nothing is missed that the probe terms could find."""
    sets = {title.id: frozenset(title.terms) for title in titles}
    totals = {title.id: weights.total(sets[title.id]) for title in titles}
    index: dict[str, list[Candidate]] = {}
    probes: dict[int, list[str]] = {}
    for title in titles:
        probes[title.id] = probe_terms(title.terms, weights, threshold)
        for term in probes[title.id]:
            index.setdefault(term, []).append(title)
    found: list[tuple[Candidate, Candidate, float]] = []
    seen: set[tuple[int, int]] = set(skip)
    for title in titles:
        mine, total = sets[title.id], totals[title.id]
        for term in probes[title.id]:
            for other in index[term]:
                pair = (min(title.id, other.id), max(title.id, other.id))
                if other.id == title.id or pair in seen:
                    continue
                seen.add(pair)
                # a score of threshold needs each title to weigh at least threshold of the other
                if min(total, totals[other.id]) < threshold * max(total, totals[other.id]):
                    continue
                value = alike(weights.total(mine & sets[other.id]), total, totals[other.id])
                if value >= threshold:
                    low, high = sorted((title, other), key=lambda c: c.number)
                    found.append((low, high, value))
    return sorted(found, key=lambda p: (-p[2], p[0].number, p[1].number))[:limit]


# --- The database: counts, candidates, the index ---------------------------------------------


class KeptCounts:
    """The terms as common as a term gets (counted up to COUNT_CAP), remembered ``KEPT_SECONDS``
    in this process, for speed only. Counting one reads COUNT_CAP index rows, and agents' titles
    are made mostly of the space's common words; a term that common stays so for longer than a
    few seconds, and a rarer one, read fresh each time, is cheap to count.

    Filed by space, so a create reads its own space's entries only, however many spaces the
    process has seen (scanning one list of every space's took 10 ms at 100,000 entries); the
    least recently kept entry of any space goes first when ``size`` is reached."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self.order: OrderedDict[tuple[int, str], None] = OrderedDict()  # least recently kept first
        self.spaces: dict[int, dict[str, tuple[int, float]]] = {}  # space → term → (count, when)
        self.lock = threading.Lock()

    def fresh(self, space_id: int, wanted: Iterable[str]) -> dict[str, int]:
        """The wanted terms known to be that common, with their (capped) counts."""
        now, found = time.monotonic(), {}
        with self.lock:
            kept = self.spaces.get(space_id, {})
            for term in wanted:
                entry = kept.get(term)
                if entry is not None and now - entry[1] < KEPT_SECONDS:
                    found[term] = entry[0]
        return found

    def common(self, space_id: int) -> list[str]:
        """The space's terms known to be that common."""
        now = time.monotonic()
        with self.lock:
            return [term for term, (_, at) in self.spaces.get(space_id, {}).items()
                    if now - at < KEPT_SECONDS and term != LIVE_TERM]

    def clear(self) -> None:
        with self.lock:
            self.order.clear()
            self.spaces.clear()

    def keep(self, space_id: int, counts: Mapping[str, int]) -> None:
        now = time.monotonic()
        with self.lock:
            for term, count in counts.items():
                if count < COUNT_CAP:
                    continue
                self.spaces.setdefault(space_id, {})[term] = (count, now)
                self.order[(space_id, term)] = None
                self.order.move_to_end((space_id, term))
            while len(self.order) > self.size:
                (space, term), _ = self.order.popitem(last=False)
                kept = self.spaces[space]
                del kept[term]
                if not kept:
                    del self.spaces[space]


KEPT_SECONDS = 10.0
KEPT = KeptCounts()


def read_weights(space_id: int, title_terms: Iterable[str]) -> Weights:
    """The weights of ``title_terms`` in the space: counts kept from a moment ago, the others
    counted in its index (one statement)."""
    wanted = {LIVE_TERM, *title_terms}
    counts = KEPT.fresh(space_id, wanted)
    missing = sorted(wanted - counts.keys())
    if missing:
        with connection.cursor() as cursor:
            cursor.execute(sql.term_counts(COUNT_CAP), {"space": space_id, "terms": missing})
            counted = dict(cursor.fetchall())
        KEPT.keep(space_id, counted)
        counts.update(counted)
    live = counts.pop(LIVE_TERM)
    return Weights(counts, live)


def similar_to(space, title: str, *, exclude: int | None = None) -> list[tuple[Candidate, float]]:
    """The live tasks of ``space`` whose titles are most like ``title`` (SPEC §16): best first,
    at most MAX_SIMILAR, each at least the space's ``similar_threshold``. At most two
    statements: the title's term counts (those not kept from a moment ago), then its best
    candidates (by the weight they share with it, which the statement sums from the weights
    given) among at most CANDIDATES_READ read, rarest probe terms first, with the counts of
    their other terms (but the common ones kept)."""
    title_terms = terms(title)
    if not title_terms:
        return []
    threshold = space.similar_threshold
    weights = read_weights(space.pk, title_terms)
    probe = probe_terms(title_terms, weights, threshold)
    if not probe:
        return []
    common = [term for term in KEPT.common(space.pk) if term not in weights.counts]
    counts, candidates, counted = {**weights.counts, **dict.fromkeys(common, COUNT_CAP)}, [], {}
    with connection.cursor() as cursor:
        cursor.execute(sql.similar_candidates(COUNT_CAP), {
            "space": space.pk, "terms": title_terms, "weights": [weights(t) for t in title_terms], "probe": probe,
            "exclude": exclude, "read": CANDIDATES_READ, "keep": CANDIDATES_SCORED, "known": [*title_terms, *common],
            # a title must share this much of this one's weight to reach the threshold
            "bound": threshold * weights.total(title_terms) * (1 - 1e-9)})
        for *task, term, count in cursor.fetchall():
            if term is None:
                candidates.append(Candidate(*task))
            else:
                counted[term] = count
    KEPT.keep(space.pk, counted)
    counts.update(counted)
    return ranked(title_terms, candidates, Weights(counts, weights.live_titles), threshold)


def as_answer(similar: list[tuple[Candidate, float]]) -> list[dict]:
    """``similar`` as SPEC §16 answers it: ``[{"id", "title", "status", "score"}]``."""
    return [{"id": c.number, "title": c.title, "status": c.status, "score": round(value, 3)} for c, value in similar]


def forget(task) -> None:
    """A task that stopped being live leaves the index (its own rows, so nobody waits)."""
    TitleTerm.objects.filter(space_id=task.space_id, term__in=[LIVE_TERM, *task.title_terms], task_id=task.pk).delete()


def live_titles(space) -> list[Candidate]:
    rows = (Task.objects.filter(space_id=space.pk, status__in=LIVE_STATUSES)
            .values_list("id", "number", "title", "status", "title_terms"))
    return [Candidate(*row) for row in rows]


def likely_duplicates(space, *, limit: int = 50) -> list[tuple[Candidate, Candidate, float]]:
    """Pairs of the space's live tasks likely to be the same work, best first, without the pairs
    a steward said are distinct (SPEC §16). The live titles are read once and counted here, as
    the index counts them (each count capped at COUNT_CAP)."""
    titles = live_titles(space)  # every live title counts in the weights; one without terms pairs with none
    counts: dict[str, int] = {}
    for title in titles:
        for term in title.terms:
            counts[term] = counts.get(term, 0) + 1
    skip = set(DistinctPair.objects.filter(space_id=space.pk).values_list("first_id", "second_id"))
    return likely_pairs(titles, Weights(counts, len(titles)), space.similar_threshold, skip=skip, limit=limit)


def mark_distinct(*, task, other, actor) -> None:
    """A steward says two tasks are not duplicates: the pair is remembered and not shown again.
    Saying it twice changes nothing (the pair's unique constraint)."""
    if other.space_id != task.space_id or other.pk == task.pk:
        raise SurvivorInvalid("The other task must be another task of this space.")
    first, second = sorted((task.pk, other.pk))
    DistinctPair.objects.bulk_create([DistinctPair(space_id=task.space_id, first_id=first, second_id=second,
                                                   marked_by=actor)], ignore_conflicts=True)


def pair_answer(pair: tuple[Candidate, Candidate, float]) -> dict:
    first, second, value = pair
    return {"tasks": [{"id": c.number, "title": c.title, "status": c.status} for c in (first, second)],
            "score": round(value, 3)}
