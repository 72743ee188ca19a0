"""SPEC §4.2–§4.3: normalization, tokens, exact Jaccard and the bind decision (pure code)."""
from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allocation.binding import (
    CatalogIndex,
    SlotScore,
    brute_force_scores,
    decide,
    format_fraction,
    normalize_note_body,
    normalize_title,
    tokens,
)
from allocation.conflict_keys import task_target
from benchmarks.catalogs import zipf_catalog
from tests.conftest import FIXTURE

DATA = json.loads(FIXTURE.read_text())
ROWS = [(r["work_item_id"], r["canonical_title"], r["aliases"]) for r in DATA["catalog"]]


@pytest.mark.parametrize("example", DATA["bind_examples"], ids=lambda e: e["title"])
def test_it_reproduces_every_published_example(example):
    decision = CatalogIndex(ROWS).bind(example["title"])
    assert decision.work_item_id == example["bound_work_item_id"]
    assert [{"work_item_id": s.work_item_id, "jaccard": format_fraction(s.jaccard)} for s in decision.scores] == example[
        "scores"
    ]
    target = task_target("agent-lab", work_item_id=decision.work_item_id, title=example["title"])
    assert target == example["target"]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Cafe\u0301 Menu", "café menu"),  # decomposed é composes under NFC
        ("Café Menu", "café menu"),
        ("STRASSE straße", "strasse strasse"),  # ß case-folds to ss
        ("\ttabs\tand\u00a0no-break  spaces \n", "tabs and no-break spaces"),
        ("  MiXeD   Case  ", "mixed case"),
    ],
)
def test_it_normalizes_titles(raw, expected):
    assert normalize_title(raw) == expected


def test_decomposed_and_composed_titles_share_one_target():
    assert task_target("s", work_item_id=None, title="Cafe\u0301") == task_target("s", work_item_id=None, title="CAFÉ")


def test_note_bodies_keep_case_but_collapse_space():
    assert normalize_note_body("  Looks\tGOOD\u00a0 here ") == "Looks GOOD here"


def test_tokens_drop_stopwords_and_split_on_non_word_runs():
    assert tokens("The cost-tracking of AND for a Model_calls!") == {"cost", "tracking", "model_calls"}


def test_exact_margin_binds_where_floating_point_would_not():
    scores = [SlotScore("T1", Fraction(3, 5)), SlotScore("T2", Fraction(13, 25))]
    assert 0.6 - 0.52 < 0.08  # the float subtraction falls short of the margin …
    assert decide(scores) == "T1"  # … the exact one does not


def test_just_under_the_margin_falls_back():
    assert decide([SlotScore("T1", Fraction(3, 5)), SlotScore("T2", Fraction(53, 100))]) is None


def test_threshold_seven_twentieths_binds():
    title = " ".join(f"w{i}" for i in range(7))
    bag_alias = " ".join(f"w{i}" for i in range(7, 20))
    index = CatalogIndex([("T1", title, [bag_alias])])
    decision = index.bind(title)
    assert decision.scores[0].jaccard == Fraction(7, 20)
    assert decision.work_item_id == "T1"


def test_just_under_the_threshold_falls_back():
    title = " ".join(f"w{i}" for i in range(7))
    index = CatalogIndex([("T1", title, [" ".join(f"w{i}" for i in range(7, 21))])])
    assert index.bind(title).scores[0].jaccard == Fraction(7, 21)
    assert index.bind(title).work_item_id is None


def test_a_tie_at_the_top_falls_back():
    index = CatalogIndex([("T1", "alpha beta", []), ("T2", "alpha gamma", [])])
    assert index.bind("alpha").work_item_id is None


def test_a_slot_id_prefix_is_no_vote():
    # "T2 — …" gives the token t2, which counts only if a bag contains it (SPEC §4.3.3).
    index = CatalogIndex([("T1", "parse logs", []), ("T2", "render charts", [])])
    decision = index.bind("T2 — parse logs")
    assert decision.work_item_id == "T1"
    assert dict((s.work_item_id, s.jaccard) for s in decision.scores)["T2"] == 0


def test_scores_list_the_best_ten_ordered_by_score_then_id():
    rows = [(f"T{i}", f"shared token{i}", []) for i in range(1, 16)]
    scores = CatalogIndex(rows).bind("shared").scores
    assert len(scores) == 10
    assert [s.work_item_id for s in scores] == [f"T{i}" for i in range(1, 11)]


def test_the_index_agrees_with_a_brute_force_scan_on_a_zipf_catalog():
    rng = random.Random(7)
    rows = zipf_catalog(rng, 3000, vocabulary=2000)
    index = CatalogIndex(rows)
    for wid, title, aliases in rng.sample(rows, 60) + [("", "w1 w2 w3", []), ("", "w0", []), ("", "w1999 w5", [])]:
        query = title if rng.random() < 0.5 else f"{title} {rng.choice(aliases) if aliases else 'extra'}"
        expected = [s for s in brute_force_scores(rows, query) if s.jaccard > 0]
        got = [s for s in index.scores(tokens(query)) if s.jaccard > 0]
        assert got == expected, query


word = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "the", "of", "T1"])
phrase = st.lists(word, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(catalog=st.lists(st.tuples(phrase, st.lists(phrase, max_size=2)), min_size=1, max_size=25), title=phrase)
def test_index_and_brute_force_agree_on_any_catalog(catalog, title):
    rows = [(f"T{i + 1}", t, a) for i, (t, a) in enumerate(catalog)]
    index = CatalogIndex(rows)
    expected = brute_force_scores(rows, title)
    got = index.scores(tokens(title))
    assert [s for s in got if s.jaccard > 0] == [s for s in expected if s.jaccard > 0]
    assert decide(got) == decide(expected)


def test_a_built_index_leaves_no_per_row_objects_for_the_garbage_collector():
    # A cached index lives as long as its server process; per-row containers (a bag and a
    # record per row) would be walked by every full collection and cost memory besides.
    import gc

    catalog = zipf_catalog(random.Random(3), 5_000)
    gc.collect()
    before = len(gc.get_objects())
    index = CatalogIndex(catalog)
    gc.collect()
    assert len(index) == 5_000
    assert len(gc.get_objects()) - before < 100


edit = st.tuples(st.integers(min_value=1, max_value=30),
                 st.one_of(st.none(), st.tuples(phrase, st.lists(phrase, max_size=2))))


@settings(max_examples=200, deadline=None)
@given(catalog=st.lists(st.tuples(phrase, st.lists(phrase, max_size=2)), min_size=0, max_size=20),
       edits=st.lists(st.lists(edit, min_size=1, max_size=4), min_size=1, max_size=4), title=phrase)
def test_an_edited_index_scores_as_a_fresh_build_of_the_same_catalog(catalog, edits, title):
    rows = {f"T{i + 1}": (t, a) for i, (t, a) in enumerate(catalog)}
    index = CatalogIndex([(w, t, a) for w, (t, a) in rows.items()])
    for batch in edits:
        changes = {f"T{n}": row for n, row in batch}
        index = index.with_changes(changes)
        for wid, row in changes.items():
            if row is None:
                rows.pop(wid, None)
            else:
                rows[wid] = row
    fresh = CatalogIndex([(w, t, a) for w, (t, a) in rows.items()])
    assert len(index) == len(fresh) == len(rows)
    assert index.scores(tokens(title)) == fresh.scores(tokens(title))
    assert list(index.ids_in_order()) == fresh.work_item_ids


def test_an_edit_leaves_the_index_it_came_from_as_it_was():
    before = CatalogIndex([("T1", "parse logs", []), ("T2", "render charts", [])])
    after = before.with_changes({"T1": ("render logs", []), "T3": ("parse charts", [])})
    assert before.bind("parse logs").work_item_id == "T1" and len(before) == 2
    assert after.bind("parse logs").work_item_id != "T1" and len(after) == 3 and after.edited == 2
