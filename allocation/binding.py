"""Charter-index binding (SPEC §4.2–§4.3): plain functions over plain data, no ORM.

``bind`` must answer for a 100,000-row catalog in about the time it takes for ten rows.
A plain inverted index is not enough when the vocabulary is Zipf-like (common tokens
have posting lists of tens of thousands of rows), so ``CatalogIndex.scores`` generates
candidates from the title's rarest tokens first (prefix filtering, as in similarity
joins) and stops as soon as no unseen row can still reach the best ten. Every score it
reports is exact (``Fraction``), so the bind decision equals a brute-force scan's.
"""
from __future__ import annotations

import bisect
import heapq
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

STOPWORDS = frozenset({"a", "an", "the", "of", "and", "to", "for"})
BIND_THRESHOLD = Fraction(35, 100)  # j ≥ 0.35 …
BIND_MARGIN = Fraction(8, 100)  # … and j − second best ≥ 0.08, compared exactly
MAX_SCORES = 10
_WHITESPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"\W+")


def normalize_title(title: str) -> str:
    """NFC → trim → collapse white space runs to one ASCII space → case fold (SPEC §4.2)."""
    text = unicodedata.normalize("NFC", title).strip()
    return _WHITESPACE.sub(" ", text).casefold()


def normalize_note_body(body: str) -> str:
    """NFC → trim → collapse white space (case kept) (SPEC §4.8)."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", body).strip())


def tokens(text: str) -> frozenset[str]:
    """NFC, case fold, non-word runs to spaces, split, stopwords dropped (SPEC §4.3.2)."""
    folded = unicodedata.normalize("NFC", text).casefold()
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


@dataclass(frozen=True)
class Row:
    position: int  # numeric part of the id: T2 sorts before T10
    work_item_id: str
    bag: frozenset[str]


class CatalogIndex:
    """An immutable inverted index over one catalog version."""

    def __init__(self, rows: Iterable[tuple[str, str, Sequence[str]]]):
        built = sorted(
            (Row(int(wid[1:]), wid, bag_of(title, aliases)) for wid, title, aliases in rows), key=lambda r: r.position
        )
        self.rows: list[Row] = built
        postings: dict[str, list[int]] = {}
        for index, row in enumerate(built):
            for token in row.bag:
                postings.setdefault(token, []).append(index)
        # Each posting list is sorted by bag size so length filtering can cut it short.
        self.postings: dict[str, list[int]] = {}
        self.posting_sizes: dict[str, list[int]] = {}
        for token, ids in postings.items():
            ids.sort(key=lambda i: len(built[i].bag))
            self.postings[token] = ids
            self.posting_sizes[token] = [len(built[i].bag) for i in ids]

    def __len__(self) -> int:
        return len(self.rows)

    def scores(self, title_tokens: frozenset[str], limit: int = MAX_SCORES) -> list[SlotScore]:
        """The best ``limit`` rows by exact Jaccard (ties by id), zero rows padding the list.

        A row first met while reading the posting list of the p-th rarest token shares at
        most ``s = t − p`` tokens with the title (it has none of the rarer ones), so its
        score is at most ``s / t``, and for a bag of size ``b ≥ s`` at most
        ``s / (t + b − s)``. Once those bounds fall below the current tenth-best score, no
        unseen row can enter the list and the search stops.
        """
        t = len(title_tokens)
        found: dict[int, Fraction] = {}
        top: list[tuple[Fraction, int]] = []  # min-heap of (score, -position) for the best `limit`
        if t:
            ordered = sorted(title_tokens, key=lambda tok: len(self.postings.get(tok, ())))
            for p, token in enumerate(ordered):
                ids = self.postings.get(token)
                if not ids:
                    continue
                s = t - p
                floor = top[0][0] if len(top) >= limit else Fraction(0)
                if floor and Fraction(s, t) < floor:
                    break
                end = len(ids)
                if floor:
                    # Largest bag size b with s / (t + b − s) ≥ floor.
                    max_bag = int(Fraction(s) / floor) - t + s
                    end = bisect.bisect_right(self.posting_sizes[token], max_bag)
                for i in ids[:end]:
                    if i in found:
                        continue
                    row = self.rows[i]
                    score = jaccard(title_tokens, row.bag)
                    found[i] = score
                    entry = (score, -row.position)
                    if len(top) < limit:
                        heapq.heappush(top, entry)
                    elif entry > top[0]:
                        heapq.heapreplace(top, entry)
                    floor = top[0][0] if len(top) >= limit else Fraction(0)
        best = sorted(((score, -neg) for score, neg in top if score > 0), key=lambda e: (-e[0], e[1]))
        result = [SlotScore(self.row_at(pos).work_item_id, score) for score, pos in best]
        if len(result) < limit:
            # Pad with zero-score rows in id order, as the published examples list them.
            listed = {r.work_item_id for r in result}
            for row in self.rows:
                if len(result) >= limit:
                    break
                if row.work_item_id not in listed:
                    result.append(SlotScore(row.work_item_id, Fraction(0)))
        return result

    def row_at(self, position: int) -> Row:
        index = bisect.bisect_left(self.rows, position, key=lambda r: r.position)
        return self.rows[index]

    def bind(self, title: str) -> BindDecision:
        scores = self.scores(tokens(title))
        return BindDecision(work_item_id=decide(scores), scores=tuple(scores))


def brute_force_scores(rows: Iterable[tuple[str, str, Sequence[str]]], title: str, limit: int = MAX_SCORES) -> list[SlotScore]:
    """The reference implementation: score every row. Used by tests and the benchmark."""
    title_tokens = tokens(title)
    scored = [(jaccard(title_tokens, bag_of(t, a)), int(w[1:]), w) for w, t, a in rows]
    scored.sort(key=lambda e: (-e[0], e[1]))
    return [SlotScore(w, j) for j, _, w in scored[:limit]]
