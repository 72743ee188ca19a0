"""Charter-index binding (SPEC §4.2–§4.3): plain functions over plain data, no ORM.

``bind`` must answer for a 100,000-row catalog in about the time it takes for ten rows.
A row-by-row scan is out, and so is a plain Python inverted index: with a Zipf-like
vocabulary a common token's posting list holds tens of thousands of rows, and scoring
them one by one in Python costs tens of milliseconds. ``CatalogIndex`` keeps each
posting list as a NumPy array and counts the title's overlap with every row in one
vectorized pass (``bincount``), so the cost is a few array operations whatever the
posting lengths. Scores are exact: a Jaccard value is a ratio of two small integers,
and such ratios order the same as their correctly rounded floats (equal ratios give
equal floats; different ones differ by far more than the rounding error), so the
float order picks the best ten and ``Fraction`` carries the reported values and the
threshold and margin comparisons.
"""
from __future__ import annotations

import heapq
import re
import sys
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np

STOPWORDS = frozenset({"a", "an", "the", "of", "and", "to", "for"})
BIND_THRESHOLD = Fraction(35, 100)  # j ≥ 0.35 …
BIND_MARGIN = Fraction(8, 100)  # … and j − second best ≥ 0.08, compared exactly
MAX_SCORES = 10
_WHITESPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"\W+")


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1), pinned here
# so a conflict key never changes with the Python that runs it: zero-width spaces and joiners,
# the soft hyphen, the BOM, variation selectors, bidirectional controls, tags.
DEFAULT_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_IGNORABLE = {code: None for first, last in DEFAULT_IGNORABLE_RANGES for code in range(first, last + 1)}


def remove_ignorable(text: str) -> str:
    """``text`` without its default-ignorable code points (SPEC §4.2): what a reader cannot see."""
    return text.translate(_IGNORABLE)


def normalize_title(title: str) -> str:
    """Default-ignorables removed → NFC → trim → collapse white space runs to one ASCII space →
    case fold (SPEC §4.2)."""
    text = unicodedata.normalize("NFC", remove_ignorable(title)).strip()
    return _WHITESPACE.sub(" ", text).casefold()


def normalize_note_body(body: str) -> str:
    """NFC → trim → collapse white space (case kept) (SPEC §4.8)."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", body).strip())


def tokens(text: str) -> frozenset[str]:
    """Default-ignorables removed, NFC, case fold, non-word runs to spaces, split, stopwords
    dropped (SPEC §4.2, §4.3.2)."""
    folded = unicodedata.normalize("NFC", remove_ignorable(text)).casefold()
    return frozenset(t for t in _NON_WORD.sub(" ", folded).split() if t not in STOPWORDS)


def bag_of(canonical_title: str, aliases: Iterable[str]) -> frozenset[str]:
    bag = set(tokens(canonical_title))
    for alias in aliases:
        bag |= tokens(alias)
    return frozenset(bag)


def jaccard(a: frozenset[str], b: frozenset[str]) -> Fraction:
    union = len(a | b)
    return Fraction(len(a & b), union) if union else Fraction(0)


def format_fraction(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True)
class SlotScore:
    work_item_id: str
    jaccard: Fraction

    def as_dict(self) -> dict:
        return {"work_item_id": self.work_item_id, "jaccard": format_fraction(self.jaccard), "value": float(self.jaccard)}


@dataclass(frozen=True)
class BindDecision:
    work_item_id: str | None  # None: title fallback
    scores: tuple[SlotScore, ...]  # best first, at most MAX_SCORES


def decide(scores: Sequence[SlotScore]) -> str | None:
    """The unique argmax when it reaches the threshold and beats the runner-up by the margin.

    ``scores`` is sorted best first; a tie at the top has a zero margin, so it falls back.
    """
    if not scores:
        return None
    best = scores[0].jaccard
    second = scores[1].jaccard if len(scores) > 1 else Fraction(0)
    if best >= BIND_THRESHOLD and best - second >= BIND_MARGIN:
        return scores[0].work_item_id
    return None


class CatalogIndex:
    """An inverted index over one catalog version.

    Once built it holds only a list of id strings and NumPy arrays: no per-row Python
    containers, which the garbage collector would otherwise walk on every full
    collection (at 100,000 rows, 200,000 of them made one such collection take
    about 130 ms in the middle of some request).

    A catalog edit does not rebuild it: ``with_changes`` answers a new index that shares
    these arrays, sets the changed rows aside (``masked``) and scores their current
    content in a small index of its own (``overlay``), so an edit costs in proportion to
    what it changed. Scores are the same as a fresh build's.
    """

    def __init__(self, rows: Iterable[tuple[str, str, Sequence[str]]]):
        # Sorted by the id's number (T2 before T10): a row's index is also its rank in id order.
        built = sorted(((int(wid[1:]), wid, bag_of(title, aliases)) for wid, title, aliases in rows),
                       key=lambda row: row[0])
        self.work_item_ids: list[str] = [wid for _, wid, _ in built]
        self.numbers = np.array([number for number, _, _ in built], dtype=np.int64)
        postings: dict[str, list[int]] = {}
        for index, (_, _, bag) in enumerate(built):
            for token in bag:
                postings.setdefault(token, []).append(index)
        self.postings: dict[str, np.ndarray] = {tok: np.array(ids, dtype=np.int32) for tok, ids in postings.items()}
        self.bag_sizes = np.array([len(bag) for _, _, bag in built], dtype=np.int32)
        self.built_bytes = (
            sys.getsizeof(self.work_item_ids) + sum(sys.getsizeof(w) for w in self.work_item_ids)
            + self.numbers.nbytes + self.bag_sizes.nbytes + sys.getsizeof(self.postings)
            + sum(sys.getsizeof(token) + sys.getsizeof(array) for token, array in self.postings.items())
        )  # sys.getsizeof of an array that owns its data counts the data too
        self.masked: np.ndarray | None = None  # rows of this build that an edit replaced or removed
        self.overlay: CatalogIndex | None = None  # the current content of every row edited since the build
        self.overlay_rows: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def __len__(self) -> int:
        masked = int(self.masked.sum()) if self.masked is not None else 0
        return len(self.work_item_ids) - masked + len(self.overlay_rows)

    @property
    def nbytes(self) -> int:
        """About the memory this index holds (its build, what an edit set aside, its overlay)."""
        masked = self.masked.nbytes if self.masked is not None else 0
        overlay = self.overlay.nbytes if self.overlay is not None else 0
        return self.built_bytes + masked + overlay

    @property
    def edited(self) -> int:
        """Rows scored by the overlay: past a share of the catalog, a fresh build is cheaper."""
        return len(self.overlay_rows)

    def with_changes(self, changes: dict[str, tuple[str, Sequence[str]] | None]) -> "CatalogIndex":
        """This index with rows replaced (``id: (title, aliases)``) or removed (``id: None``);
        this one is left as it was (another request may be using it)."""
        new = object.__new__(CatalogIndex)
        new.__dict__.update(self.__dict__)
        masked = self.masked.copy() if self.masked is not None else np.zeros(len(self.work_item_ids), dtype=bool)
        numbers = np.array([int(wid[1:]) for wid in changes], dtype=np.int64)
        positions = np.searchsorted(self.numbers, numbers)
        inside = positions < len(self.numbers)
        found = positions[inside][self.numbers[positions[inside]] == numbers[inside]]
        masked[found] = True
        current = {wid: (title, aliases) for wid, title, aliases in self.overlay_rows}
        for wid, row in changes.items():
            if row is None:
                current.pop(wid, None)
            else:
                current[wid] = (row[0], tuple(row[1]))
        new.masked = masked
        new.overlay_rows = tuple((wid, title, aliases) for wid, (title, aliases)
                                 in sorted(current.items(), key=lambda item: int(item[0][1:])))
        new.overlay = CatalogIndex(new.overlay_rows) if new.overlay_rows else None
        return new

    def matches(self, title_tokens: frozenset[str], limit: int) -> list[SlotScore]:
        """The best ``limit`` rows of this build sharing a token with the title (masked rows
        left out), by exact Jaccard, ties by id."""
        t = len(title_tokens)
        lists = [self.postings[tok] for tok in title_tokens if tok in self.postings]
        if not lists:
            return []
        ids = np.concatenate(lists) if len(lists) > 1 else lists[0]
        counts = np.bincount(ids, minlength=len(self.work_item_ids))
        candidates = np.flatnonzero(counts)  # rows sharing at least one token, in id order
        if self.masked is not None:
            candidates = candidates[~self.masked[candidates]]
        shared = counts[candidates]
        union = t + self.bag_sizes[candidates] - shared
        values = shared / union
        if len(candidates) > limit:
            # Keep every row scoring at least the limit-th best value (ties included) …
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            candidates, shared, union, values = candidates[keep], shared[keep], union[keep], values[keep]
        # … then order them best first, lower id first among equals.
        order = np.lexsort((candidates, -values))[:limit]
        return [SlotScore(self.work_item_ids[candidates[i]], Fraction(int(shared[i]), int(union[i]))) for i in order]

    def ids_in_order(self) -> Iterable[str]:
        """Every current row's id, in id order."""
        base = (wid for i, wid in enumerate(self.work_item_ids) if self.masked is None or not self.masked[i])
        if not self.overlay_rows:
            return base
        return heapq.merge(base, (wid for wid, _, _ in self.overlay_rows), key=lambda wid: int(wid[1:]))

    def scores(self, title_tokens: frozenset[str], limit: int = MAX_SCORES) -> list[SlotScore]:
        """The best ``limit`` rows by exact Jaccard (ties by id), zero rows padding the list."""
        result = self.matches(title_tokens, limit)
        if self.overlay is not None:
            result = sorted(result + self.overlay.matches(title_tokens, limit),
                            key=lambda s: (-s.jaccard, int(s.work_item_id[1:])))[:limit]
        if len(result) < limit:
            # Pad with zero-score rows in id order, as the published examples list them.
            listed = {s.work_item_id for s in result}
            for work_item_id in self.ids_in_order():
                if len(result) >= limit:
                    break
                if work_item_id not in listed:
                    result.append(SlotScore(work_item_id, Fraction(0)))
        return result

    def bind(self, title: str) -> BindDecision:
        scores = self.scores(tokens(title))
        return BindDecision(work_item_id=decide(scores), scores=tuple(scores))


def bag_rows(rows: Iterable[tuple[str, str, Sequence[str]]]) -> list[tuple[int, str, frozenset[str]]]:
    return [(int(w[1:]), w, bag_of(t, a)) for w, t, a in rows]


def scan_scores(bagged: Sequence[tuple[int, str, frozenset[str]]], title_tokens: frozenset[str],
                limit: int = MAX_SCORES) -> list[SlotScore]:
    """The reference implementation: score every row exactly. Used by tests and the benchmark."""
    scored = sorted(
        ((jaccard(title_tokens, bag), pos, w) for pos, w, bag in bagged if not title_tokens.isdisjoint(bag)),
        key=lambda e: (-e[0], e[1]),
    )[:limit]
    zeros = ((Fraction(0), pos, w) for pos, w, bag in sorted(bagged) if title_tokens.isdisjoint(bag))
    scored += [next(zeros) for _ in range(min(limit - len(scored), len(bagged) - len(scored)))]
    return [SlotScore(w, j) for j, _, w in scored]


def brute_force_scores(rows: Iterable[tuple[str, str, Sequence[str]]], title: str, limit: int = MAX_SCORES) -> list[SlotScore]:
    return scan_scores(bag_rows(rows), tokens(title), limit)
