"""Synthetic catalogs with a Zipf-like vocabulary (a few very common words, a long tail)."""
from __future__ import annotations

import itertools
import random


def zipf_words(vocabulary: int) -> tuple[list[str], list[float]]:
    """The words and their cumulative weights (1/rank), ready for ``random.choices``."""
    return [f"w{i}" for i in range(vocabulary)], list(itertools.accumulate(1 / (i + 1) for i in range(vocabulary)))


def zipf_catalog(rng: random.Random, rows: int, vocabulary: int = 20000) -> list[tuple[str, str, list[str]]]:
    words, weights = zipf_words(vocabulary)

    def phrase(n: int) -> str:
        return " ".join(rng.choices(words, cum_weights=weights, k=n))

    return [
        (f"T{i}", phrase(rng.randint(3, 7)), [phrase(rng.randint(2, 4)) for _ in range(rng.randint(0, 3))])
        for i in range(1, rows + 1)
    ]


def sample_titles(rng: random.Random, catalog: list[tuple[str, str, list[str]]], count: int,
                  vocabulary: int = 20000) -> list[str]:
    """Titles an agent might write: catalog titles, aliases with an extra word, and free text."""
    words, weights = zipf_words(vocabulary)
    titles = []
    for _ in range(count):
        wid, title, aliases = rng.choice(catalog)
        roll = rng.random()
        if roll < 0.4:
            titles.append(title)
        elif roll < 0.7:
            titles.append(f"{rng.choice(aliases) if aliases else title} {rng.choice(words)}")
        else:
            titles.append(" ".join(rng.choices(words, cum_weights=weights, k=rng.randint(2, 6))))
    return titles
