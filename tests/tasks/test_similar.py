"""SPEC §16: similar live tasks at bind, at create and on request; never a refusal by default,
never a change of a conflict key; the index follows each task's life."""
from __future__ import annotations

import pytest

from tasks import similarity
from tasks.models import DistinctPair, Task, TitleTerm

pytestmark = pytest.mark.django_db(transaction=True)

WEBHOOK = "Add retry with backoff to the webhook sender"
PARAPHRASE = "Retry with backoff in the webhook sender"
OTHERS = ["Fix flaky test in the login flow", "Write the release notes for 2.0", "Upgrade PostgreSQL to 17",
          "Add a search box to the dashboard", "Rotate the production API keys", "Delete stale feature flags"]


def create(persona, title: str, **extra):
    return persona.api.post("/v1/spaces/agent-lab/tasks", {"title": title, **extra})


@pytest.fixture
def seeded(writer):
    for title in [WEBHOOK, *OTHERS]:
        assert create(writer, title).status_code == 201
    return writer


def index_rows(task_number: int) -> list[str]:
    return sorted(TitleTerm.objects.filter(task__number=task_number).values_list("term", flat=True))


def test_a_create_that_binds_no_slot_answers_the_similar_live_tasks(seeded):
    response = create(seeded, PARAPHRASE)
    assert response.status_code == 201
    body = response.json()
    assert body["work_item_id"] is None
    assert [s["id"] for s in body["similar"]] == [1]
    first = body["similar"][0]
    assert first["title"] == WEBHOOK and first["status"] == "open" and 0 < first["score"] <= 1
    # similar is a hint: the paraphrase was created, with a key of its own
    assert body["conflict_key"]["target"] != Task.objects.get(number=1).conflict_target


def test_a_title_like_no_live_task_answers_an_empty_list(seeded):
    body = create(seeded, "Translate the onboarding guide into Japanese").json()
    assert body["similar"] == []


def test_a_create_bound_to_a_slot_carries_no_similar(writer):
    body = create(writer, "T1", work_item_id="T1").json()
    assert body["work_item_id"] == "T1" and "similar" not in body


def test_if_similar_refuse_answers_409_naming_the_most_alike_and_writes_nothing(seeded):
    before = Task.objects.count()
    response = create(seeded, PARAPHRASE, if_similar="refuse")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "allocation_conflict" and body["code"] == "similar_task_exists"
    assert body["outcome"] == "redirect" and body["write_occurred"] is False
    assert body["winner"] == {"type": "task", "id": 1, "status": "open"}
    assert [s["id"] for s in body["similar"]] == [1]
    assert Task.objects.count() == before
    # nothing alike: the create proceeds, refuse or not
    assert create(seeded, "Translate the onboarding guide into Japanese", if_similar="refuse").status_code == 201


def test_if_similar_takes_allow_or_refuse_only(writer):
    response = create(writer, "Anything at all", if_similar="maybe")
    assert response.status_code == 422 and "if_similar" in response.json()["fields"]


def test_get_similar_and_bind_answer_the_same_list(seeded, reader):
    similar = reader.api.get(f"/v1/spaces/agent-lab/tasks/similar?title={PARAPHRASE}")
    assert similar.status_code == 200
    bound = reader.api.post("/v1/spaces/agent-lab/bind", {"title": PARAPHRASE})
    assert bound.status_code == 200
    assert bound.json()["similar"] == similar.json()["similar"] and similar.json()["similar"][0]["id"] == 1
    assert bound.json()["work_item_id"] is None and "scores" in bound.json()


def test_get_similar_wants_a_title_and_nothing_else(reader):
    assert reader.api.get("/v1/spaces/agent-lab/tasks/similar").status_code == 422
    response = reader.api.get("/v1/spaces/agent-lab/tasks/similar?title=x&titel=y")
    assert response.status_code == 422 and "titel" in response.json()["fields"]


def test_similar_is_for_members_of_the_space_only(seeded, outsider, anonymous):
    path = f"/v1/spaces/agent-lab/tasks/similar?title={PARAPHRASE}"
    assert outsider.api.get(path).status_code == 404
    assert anonymous.get(path).status_code == 401


def test_the_space_threshold_decides_what_is_similar(seeded, steward):
    assert steward.api.patch("/v1/spaces/agent-lab", {"similar_threshold": 0.99}).status_code == 200
    assert create(seeded, PARAPHRASE).json()["similar"] == []
    assert steward.api.patch("/v1/spaces/agent-lab", {"similar_threshold": 0}).status_code == 422
    assert steward.api.patch("/v1/spaces/agent-lab", {"similar_threshold": 1.5}).status_code == 422


def test_the_index_holds_live_titles_only(seeded, steward):
    assert Task.objects.get(number=1).title_terms == similarity.terms(WEBHOOK)
    assert index_rows(1) == ["", *similarity.terms(WEBHOOK)]  # "": every live title has it
    assert steward.api.post("/v1/spaces/agent-lab/tasks/1/withdraw", {"reason": "not needed"}).status_code == 200
    assert index_rows(1) == []
    # an ended task is never similar
    assert create(seeded, PARAPHRASE).json()["similar"] == []


def test_each_live_task_counts_once_in_the_weights(seeded):
    space = Task.objects.get(number=1).space
    weights = similarity.read_weights(space.pk, ["webhook", "flaki", "nowher"])
    assert weights.live_titles == 1 + len(OTHERS)
    assert weights.counts == {"webhook": 1, "flaki": 1, "nowher": 0}


def test_likely_duplicates_pairs_live_tasks_and_forgets_distinct_pairs(seeded, steward):
    create(seeded, PARAPHRASE)
    space = Task.objects.get(number=1).space
    pairs = similarity.likely_duplicates(space)
    assert [(a.number, b.number) for a, b, _ in pairs] == [(1, 8)]
    DistinctPair.objects.create(space=space, first_id=pairs[0][0].id, second_id=pairs[0][1].id)
    assert similarity.likely_duplicates(space) == []


def test_the_duplicates_route_and_not_a_duplicate(seeded, steward, reader):
    create(seeded, PARAPHRASE)
    pairs = reader.api.get("/v1/spaces/agent-lab/tasks/duplicates").json()["pairs"]
    assert [[t["id"] for t in p["tasks"]] for p in pairs] == [[1, 8]] and 0 < pairs[0]["score"] <= 1
    path = "/v1/spaces/agent-lab/tasks/8/not-duplicate"
    assert seeded.api.post(path, {"task": 1}).status_code == 403
    assert steward.api.post(path, {"task": 8}).status_code == 422  # itself
    assert steward.api.post(path, {"task": 99}).status_code == 404
    for _ in range(2):  # saying it again changes nothing
        response = steward.api.post(path, {"task": 1})
        assert response.status_code == 200 and response.json() == {"tasks": [1, 8], "distinct": True}
    assert DistinctPair.objects.get().marked_by == steward.member
    assert reader.api.get("/v1/spaces/agent-lab/tasks/duplicates").json()["pairs"] == []


def test_the_similar_tasks_command_prints_the_pairs(seeded):
    from io import StringIO

    from django.core.management import CommandError, call_command

    create(seeded, PARAPHRASE)
    out = StringIO()
    call_command("similar_tasks", "agent-lab", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(f"#1 {WEBHOOK} (open)") and lines[1].strip() == f"#8 {PARAPHRASE} (open)"
    assert lines[-1] == "1 likely duplicate pair in agent-lab (threshold 0.45)."
    out = StringIO()
    call_command("similar_tasks", "agent-lab", "--threshold", "1", stdout=out)
    assert out.getvalue().splitlines() == ["0 likely duplicate pairs in agent-lab (threshold 1)."]
    with pytest.raises(CommandError, match="No space 'nowhere'"):
        call_command("similar_tasks", "nowhere")


def test_only_terms_as_common_as_a_term_gets_are_kept_between_reads():
    kept = similarity.KeptCounts()
    kept.keep(1, {"fix": similarity.COUNT_CAP, "webhook": 3, similarity.LIVE_TERM: similarity.COUNT_CAP})
    assert kept.fresh(1, ["fix", "webhook", "nowhere", similarity.LIVE_TERM]) == {
        "fix": similarity.COUNT_CAP, similarity.LIVE_TERM: similarity.COUNT_CAP}
    assert kept.fresh(2, ["fix"]) == {} and kept.common(1) == ["fix"]


def test_kept_counts_are_filed_by_space_and_the_least_recently_kept_go_first():
    cap = similarity.COUNT_CAP
    kept = similarity.KeptCounts(size=3)
    kept.keep(1, {"fix": cap, "flaky": cap})
    kept.keep(2, {"fix": cap})
    assert kept.common(1) == ["fix", "flaky"] and kept.common(2) == ["fix"] and kept.common(3) == []
    kept.keep(1, {"fix": cap})  # kept again: now the most recent
    kept.keep(3, {"deploy": cap})  # one too many: space 1's "flaky" was kept least recently
    assert kept.common(1) == ["fix"] and kept.fresh(1, ["flaky"]) == {}
    kept.keep(3, {"login": cap, "retry": cap})  # space 2's "fix", then space 1's, make room
    assert kept.common(2) == [] and kept.common(1) == [] and sorted(kept.common(3)) == ["deploy", "login", "retry"]
    assert set(kept.spaces) == {3}


def test_the_reference_explains_similar_tasks(anonymous):
    section = anonymous.get("/v1/reference?section=similar").json()["similar"]
    assert section["settings"]["similar_threshold"]["default"] == similarity.DEFAULT_THRESHOLD
    assert [r["code"] for r in section["refusals"]] == ["similar_task_exists"]
    assert any("never refuses a create by default" in line for line in section["never"])


def cte_rows(plan: dict, name: str) -> int | None:
    """The rows the CTE ``name`` of an EXPLAIN ANALYZE plan yielded (None: not in the plan)."""
    if plan.get("Subplan Name") == f"CTE {name}":
        return plan["Actual Rows"] * plan["Actual Loops"]
    found = [cte_rows(child, name) for child in plan.get("Plans", [])]
    return next((rows for rows in found if rows is not None), None)


def test_a_title_reads_a_bounded_number_of_candidates_rarest_terms_first(writer):
    """SPEC §16: the hints read at most CANDIDATES_READ live titles, however many share the
    title's words, and the rarest words' titles first (they weigh most)."""
    from django.db import connection

    from tests.factories import create_task

    space, member = writer.member.space, writer.member
    for word in ("alpha", "beta", "delta"):
        for n in range(60):
            create_task(space=space, actor=member, title=f"{word} q{word}{n}")
    alike = [create_task(space=space, actor=member, title=f"alpha beta delta omega qo{n}") for n in range(10)]
    title = "alpha beta delta omega"
    weights = similarity.read_weights(space.pk, similarity.terms(title))
    probe = similarity.probe_terms(similarity.terms(title), weights, space.similar_threshold)
    assert probe[0] == "omega" and sum(weights.counts[t] for t in probe) > similarity.CANDIDATES_READ

    sent = []
    with connection.execute_wrapper(lambda execute, sql, params, many, context: (
            sent.append((sql, params)) if "ORDINALITY" in sql else None, execute(sql, params, many, context))[1]):
        similar = similarity.similar_to(space, title)
    assert len(similar) == similarity.MAX_SIMILAR and {c.number for c, _ in similar} <= {t.number for t in alike}
    (sql, params), = sent
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0][0]["Plan"]
    # the candidates read, each scored by the weight it shares with the title
    assert 0 < cte_rows(plan, "candidate") <= similarity.CANDIDATES_READ
