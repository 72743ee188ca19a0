"""SPEC §16's quality on a file of labelled pairs: precision and recall by threshold.

    .venv/bin/python benchmarks/similar_quality.py [PAIRS.json ...]

Each file holds ``{"pairs": [{"a", "b", "same"}], "others"?: [titles]}`` (by default
tests/fixtures/similar-pairs.json). Every title of every file given is live at once, with the
``others`` of tests/fixtures/similar-pairs.json beside them as the rest of the space, weighted
as the index weighs them (tasks.similarity: the same terms, counts, cap and score). A pair is
found when one title's similar list (best 5 at or above the threshold) names the other.
Prints, per file, precision and recall at each threshold around the default, and the share
of true pairs whose title's best match is its partner (precision at 1). Asserts nothing;
tests/tasks/test_similar_quality.py holds the goal through the database.
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")
# The rule reads a space setting's default from the models; nothing here serves or connects.
os.environ.setdefault("DJANGO_DEBUG", "1")
os.environ.setdefault("DATABASE_URL", "postgres://unused@127.0.0.1:1/unused")
import django  # noqa: E402

django.setup()
from tasks import similarity  # noqa: E402

DEFAULT = ROOT / "tests" / "fixtures" / "similar-pairs.json"
THRESHOLDS = (0.35, 0.40, 0.45, 0.50, 0.55)


def main() -> None:
    files = [Path(name) for name in sys.argv[1:]] or [DEFAULT]
    sets = {path: json.loads(path.read_text())["pairs"] for path in files}
    others = json.loads(DEFAULT.read_text())["others"]
    titles = sorted({t for pairs in sets.values() for p in pairs for t in (p["a"], p["b"])} | set(others))
    live = [similarity.Candidate(i, i + 1, title, "open", similarity.terms(title)) for i, title in enumerate(titles)]
    by_title = {c.title: c for c in live}
    counts = Counter(term for c in live for term in c.terms)
    weights = similarity.Weights(counts, len(live))
    print(f"{len(live)} live titles")
    for path, pairs in sets.items():
        print(f"\n{path.name}: {sum(p['same'] for p in pairs)} true pairs, {sum(not p['same'] for p in pairs)} others")
        for threshold in THRESHOLDS:
            found = {True: 0, False: 0}
            first = 0
            for pair in pairs:
                a, b = by_title[pair["a"]], by_title[pair["b"]]
                similar = similarity.ranked(a.terms, [c for c in live if c.id != a.id], weights, threshold)
                found[pair["same"]] += any(c.id == b.id for c, _ in similar)
                first += pair["same"] and bool(similar) and similar[0][0].id == b.id
            true = sum(p["same"] for p in pairs)
            precision = found[True] / ((found[True] + found[False]) or 1)
            print(f"  threshold {threshold:.2f}: precision {precision:.3f}  recall {found[True] / true:.3f}  "
                  f"precision at 1 {first / true:.3f}{'   (the default)' if threshold == similarity.DEFAULT_THRESHOLD else ''}")


if __name__ == "__main__":
    main()
