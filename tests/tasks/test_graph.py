"""SPEC §13: priorities, labels, blockers, readiness, and `next` by priority among ready tasks."""
from __future__ import annotations

from tasks.models import Dependency, Notification, TaskEvent
from tests.tasks.test_attempts import done
from tests.tasks.conftest import set_space

S = "/v1/spaces/agent-lab"


def create(persona, title: str, **fields):
    response = persona.api.post(f"{S}/tasks", {"title": title, **fields})
    assert response.status_code == 201, response.json()
    return response.json()


def task(persona, number: int) -> dict:
    return persona.api.get(f"{S}/tasks/{number}").json()


def history(persona, number: int) -> list[dict]:
    return persona.api.get(f"{S}/tasks/{number}/history").json()["results"]


def kinds(persona, number: int) -> list[str]:
    return [e["kind"] for e in history(persona, number)]


def test_create_takes_priority_labels_and_blockers(writer):
    first = create(writer, "schema change")
    assert (first["priority"], first["labels"], first["blocked_by"], first["blocks"], first["ready"]) == (
        2, [], [], [], True)
    second = create(writer, "migration", priority=1, labels=["API", "db", "api"], blocked_by=[1])
    assert (second["priority"], second["labels"], second["blocked_by"], second["ready"]) == (1, ["api", "db"], [1], False)
    assert task(writer, 1)["blocks"] == [2]
    assert kinds(writer, 2) == ["created", "blocker_added"]


def test_bad_priority_labels_and_blockers_are_field_errors(writer):
    create(writer, "one")
    cases = [
        ({"priority": 5}, "priority"), ({"priority": -1}, "priority"), ({"priority": "high"}, "priority"),
        ({"labels": "api"}, "labels"), ({"labels": ["has space"]}, "labels"), ({"labels": ["x" * 41]}, "labels"),
        ({"labels": [f"l{i}" for i in range(11)]}, "labels"), ({"labels": [""]}, "labels"), ({"labels": [7]}, "labels"),
        ({"blocked_by": [99]}, "blocked_by"), ({"blocked_by": list(range(1, 502))}, "blocked_by"),
        ({"blocked_by": ["1"]}, "blocked_by"), ({"blocked_by": [0]}, "blocked_by"),
    ]
    for fields, field in cases:
        response = writer.api.post(f"{S}/tasks", {"title": "two", **fields})
        assert response.status_code == 422, (fields, response.json())
        assert field in response.json()["fields"], (fields, response.json())
    assert writer.api.get(f"{S}/tasks").json()["results"][-1]["number"] == 1  # nothing was created


def test_a_finished_blocker_does_not_block_and_a_superseded_one_is_replaced_by_its_survivor(writer, steward):
    create(writer, "finished")
    create(writer, "duplicate")
    create(writer, "survivor")
    writer.api.post(f"{S}/tasks/1/withdraw")
    steward.api.post(f"{S}/tasks/2/supersede", {"surviving_task": 3})
    body = create(writer, "waits", blocked_by=[1, 2])
    assert body["blocked_by"] == [3] and not body["ready"]


def test_next_hands_out_the_most_urgent_ready_task_then_the_lowest_number(writer, writer2):
    create(writer, "low", priority=3)
    create(writer, "urgent but blocked", priority=0, blocked_by=[1])
    create(writer, "high", priority=1)
    create(writer, "high too", priority=1, labels=["api"])
    order = [writer2.api.post(f"{S}/next").json()["task"]["number"] for _ in range(3)]
    assert order == [3, 4, 1]
    assert writer2.api.post(f"{S}/next").json() == {"task": None}  # 2 waits on 1, which is claimed


def test_next_with_labels_takes_only_tasks_carrying_all_of_them(writer, writer2):
    create(writer, "a", labels=["api"])
    create(writer, "b", labels=["api", "db"], priority=3)
    create(writer, "c", labels=["db"], priority=0)
    assert writer2.api.post(f"{S}/next", {"labels": ["DB", "api"]}).json()["task"]["number"] == 2
    assert writer2.api.post(f"{S}/next", {"labels": ["api", "db"]}).json() == {"task": None}
    assert writer2.api.post(f"{S}/next", {"labels": ["bad label"]}).status_code == 422


def test_next_by_number_on_a_blocked_task_is_409_naming_its_blockers(writer, writer2):
    create(writer, "a")
    create(writer, "b")
    create(writer, "c", blocked_by=[1, 2])
    response = writer2.api.post(f"{S}/next", {"number": 3})
    assert response.status_code == 409
    assert response.json()["error"] == "task_blocked" and response.json()["blocked_by"] == [1, 2]


def test_blockers_are_added_and_removed_with_the_answers_the_spec_gives(writer, writer2, reader):
    create(writer, "a")
    create(writer, "b")
    added = writer2.api.post(f"{S}/tasks/2/blockers", {"task": 1})
    assert added.status_code == 201 and added.json()["blocked_by"] == [1] and not added.json()["ready"]
    again = writer2.api.post(f"{S}/tasks/2/blockers", {"task": 1})
    assert again.status_code == 200 and again.json()["blocked_by"] == [1]
    assert writer2.api.post(f"{S}/tasks/2/blockers", {"task": 99}).status_code == 422
    assert writer2.api.post(f"{S}/tasks/99/blockers", {"task": 1}).status_code == 404
    assert reader.api.post(f"{S}/tasks/2/blockers", {"task": 1}).status_code == 403
    assert writer2.api.delete(f"{S}/tasks/2/blockers/1").status_code == 204
    assert writer2.api.delete(f"{S}/tasks/2/blockers/1").status_code == 404
    assert task(writer, 2)["ready"]
    events = [e for e in history(writer, 2) if e["kind"].startswith("blocker")]
    assert [(e["kind"], e["details"]["before"], e["details"]["after"]) for e in events] == [
        ("blocker_added", [], [1]), ("blocker_removed", [1], [])]
    assert kinds(writer, 2)[-1] == "unblocked"
    assert Notification.objects.filter(member=writer.member, kind="task_unblocked", task__number=2).count() == 1


def test_a_blocker_that_would_close_a_cycle_is_refused_naming_the_cycle(writer):
    for title in ("a", "b", "c"):
        create(writer, title)
    writer.api.post(f"{S}/tasks/2/blockers", {"task": 1})  # 2 waits on 1
    writer.api.post(f"{S}/tasks/3/blockers", {"task": 2})  # 3 waits on 2
    response = writer.api.post(f"{S}/tasks/1/blockers", {"task": 3})
    assert response.status_code == 422
    assert response.json()["error"] == "dependency_cycle" and response.json()["cycle"] == [1, 3, 2, 1]
    itself = writer.api.post(f"{S}/tasks/1/blockers", {"task": 1})
    assert itself.status_code == 422 and itself.json()["cycle"] == [1, 1]
    assert Dependency.objects.count() == 2


def test_a_blocker_ending_unblocks_its_dependents_once_each(writer, writer2, steward, space):
    set_space(space, confirmations_required=0)
    create(writer, "a")
    create(writer, "b")
    create(writer, "waits on both", blocked_by=[1, 2])
    create(writer, "waits on a", blocked_by=[1])
    writer2.api.post(f"{S}/next", {"number": 1})
    assert done(writer2, 1).json()["task"]["status"] == "done"
    assert task(writer, 4)["ready"] and task(writer, 3)["blocked_by"] == [2]
    assert "unblocked" in kinds(writer, 4) and "unblocked" not in kinds(writer, 3)
    steward.api.post(f"{S}/tasks/2/reject", {"reason": "not needed"})
    assert task(writer, 3)["ready"] and kinds(writer, 3).count("unblocked") == 1
    assert Notification.objects.filter(kind="task_unblocked").count() == 2
    assert not Dependency.objects.exists()


def test_a_superseded_blocker_hands_its_edges_to_its_survivor(writer, steward):
    create(writer, "duplicate")
    create(writer, "survivor")
    create(writer, "waits", blocked_by=[1])
    steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": 2})
    assert task(writer, 3)["blocked_by"] == [2] and task(writer, 2)["blocks"] == [3]
    added = [e for e in history(writer, 3) if e["kind"] == "blocker_added"][-1]
    assert added["details"]["before"] == [1] and added["details"]["after"] == [2]


def test_a_moved_edge_that_would_close_a_cycle_is_dropped_in_both_histories(writer, steward):
    create(writer, "duplicate")
    create(writer, "survivor")
    create(writer, "between", blocked_by=[2])  # 3 waits on the survivor
    writer.api.post(f"{S}/tasks/3/blockers", {"task": 1})  # 3 also waits on the duplicate
    writer.api.post(f"{S}/tasks/2/blockers", {"task": 1})  # the survivor waits on the duplicate
    steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": 2})
    # 2 cannot wait on itself: dropped; 3 already waits on 2.
    assert task(writer, 2)["blocked_by"] == [] and task(writer, 3)["blocked_by"] == [2]
    dropped = [e for e in history(writer, 2) if e["kind"] == "blocker_removed"]
    assert dropped and dropped[-1]["details"]["reason"] == "cycle"


def test_a_moved_edge_closing_a_longer_cycle_is_dropped_in_both_histories(writer, steward):
    create(writer, "duplicate")  # 1
    create(writer, "survivor")  # 2
    create(writer, "waits on the duplicate", blocked_by=[1])  # 3
    writer.api.post(f"{S}/tasks/2/blockers", {"task": 3})  # the survivor waits on 3, 3 on 1
    steward.api.post(f"{S}/tasks/1/supersede", {"surviving_task": 2})
    # 3 waiting on 2 would close 3 → 2 → 3: dropped, and both histories say so.
    assert task(writer, 3)["blocked_by"] == [] and task(writer, 2)["blocked_by"] == [3]
    for number in (2, 3):
        removed = [e for e in history(writer, number) if e["kind"] == "blocker_removed"]
        assert removed[-1]["details"]["dropped"]["cycle"] == [3, 2, 3], number
    assert "unblocked" in kinds(writer, 3)


def test_priority_and_labels_change_by_patch_for_the_creator_or_a_steward(writer, writer2, steward):
    create(writer, "a", labels=["api"])
    patched = writer.api.patch(f"{S}/tasks/1", {"priority": 0, "labels": ["Ops"]})
    assert patched.status_code == 200 and (patched.json()["priority"], patched.json()["labels"]) == (0, ["ops"])
    assert steward.api.patch(f"{S}/tasks/1", {"priority": 4}).json()["priority"] == 4
    assert writer2.api.patch(f"{S}/tasks/1", {"priority": 1}).status_code == 403
    assert writer.api.patch(f"{S}/tasks/1", {"priority": 9}).status_code == 422
    events = [(e["kind"], e["details"]["before"], e["details"]["after"]) for e in history(writer, 1)[1:]]
    assert events == [("priority_changed", 2, 0), ("labels_changed", ["api"], ["ops"]), ("priority_changed", 0, 4)]
    assert TaskEvent.objects.filter(kind__in=["priority_changed", "labels_changed"]).count() == 3


def test_lists_filter_by_ready_blocked_priority_and_labels(writer):
    create(writer, "a", priority=1, labels=["api", "db"])
    create(writer, "b", priority=1, labels=["api"], blocked_by=[1])
    create(writer, "c", priority=3, labels=["db"])

    def numbers(query: str) -> list[int]:
        response = writer.api.get(f"{S}/tasks?{query}")
        assert response.status_code == 200, response.json()
        return [t["number"] for t in response.json()["results"]]

    assert numbers("ready=true") == [1, 3]
    assert numbers("blocked=true") == [2]
    assert numbers("ready=false") == [2]
    assert numbers("priority=1") == [1, 2]
    assert numbers("priority=1&priority=3") == [1, 2, 3]
    assert numbers("label=api") == [1, 2]
    assert numbers("label=api&label=DB") == [1]
    assert numbers("ready=true&label=db") == [1, 3]
    assert writer.api.get(f"{S}/tasks?label=bad%20label").status_code == 422
    assert writer.api.get(f"{S}/tasks?priority=7").status_code == 422
    for bad in ("ready=maybe", "blocked=2", "ready=yesplease"):
        response = writer.api.get(f"{S}/tasks?{bad}")
        assert response.status_code == 422 and bad.split("=")[0] in response.json()["fields"], bad
    assert numbers("ready=1") == numbers("ready=true") == numbers("ready=yes")
    listed = writer.api.get(f"{S}/tasks").json()["results"]
    assert [(t["blocked_by"], t["blocks"]) for t in listed] == [([], [2]), ([1], []), ([], [])]


def test_order_next_lists_ready_tasks_as_next_takes_them_past_any_page(writer):
    """``order=next``: the server's order of the ready queue (priority, then number), so a list
    past one page is the queue itself, and ``next`` takes its first."""
    for number, priority in enumerate([3, 1, 2, 1, 0, 3, 2], start=1):
        create(writer, f"task {number}", priority=priority)
    create(writer, "blocked", priority=0, blocked_by=[1])
    expected = [5, 2, 4, 3, 7, 1, 6]
    first = writer.api.get(f"{S}/tasks?ready=true&order=next&limit=4").json()
    rest = writer.api.get(first["next"]).json()
    assert [t["number"] for t in first["results"] + rest["results"]] == expected
    assert writer.api.get(f"{S}/tasks?order=sideways").status_code == 422
    assert writer.api.post(f"{S}/next").json()["task"]["number"] == expected[0]


def test_q_searches_title_and_body_best_match_first_and_pages_by_offset(writer):
    create(writer, "Retry the flaky upload")
    create(writer, "Unrelated work", body="nothing to see")
    create(writer, "Upload limits", body="the upload retries upload after upload failures")
    create(writer, "Docs", body="mention the upload once")
    body = writer.api.get(f"{S}/tasks?q=upload").json()
    assert [t["number"] for t in body["results"]][0] == 3 and {t["number"] for t in body["results"]} == {1, 3, 4}
    assert body["count"] == 3
    page = writer.api.get(f"{S}/tasks?q=upload&limit=1&offset=1").json()
    assert len(page["results"]) == 1 and page["previous"] and page["next"]
    assert {t["number"] for t in writer.api.get(f"{S}/tasks?q=retry").json()["results"]} == {1, 3}  # stemmed
    assert writer.api.get(f"{S}/tasks?q=" + "x" * 501).status_code == 422
    assert writer.api.get(f'{S}/tasks?q="unbalanced OR -').status_code == 200


def test_q_reads_only_its_own_spaces_matches_from_the_index(writer, space):
    """SPEC §13, §11: the full-text index finds a space's matches without reading other
    spaces' (each vector holds its space's lexeme, tasks.search): beside 300 matching tasks of
    another space, the index scan of a search returns the space's 3 matches alone."""
    import json

    from django.db import connection, transaction
    from django.http import QueryDict

    from fronts.task_filters import filter_tasks
    from tasks.models import Task
    from tasks.search import text_match
    from tests.factories import SpaceFactory

    other = SpaceFactory(slug="elsewhere")
    Task.objects.bulk_create([Task(space=other, number=n, title=f"zebrafish survey {n}", conflict_target=f"z{n}",
                                   received_seq=0, payload_sha256="") for n in range(1, 301)])
    for n in range(3):
        create(writer, f"Zebrafish tank {n}")
    Task.objects.bulk_create([Task(space=space, number=n, title=f"coral reef {n}", conflict_target=f"c{n}",
                                   received_seq=0, payload_sha256="") for n in range(4, 304)])
    tasks, _ = filter_tasks(space, QueryDict("q=zebrafish"))
    assert f"S{space.pk}" in tasks.query.sql_with_params()[1]  # the list's query asks for the space's lexeme
    # What the index alone finds for the words and the lexeme: the space's 3, not the other's 300.
    sql, params = Task.objects.filter(text_match("zebrafish", space.pk)).values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE tasks_task")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # few rows: the planner would read them all
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    scans = [n for n in nodes(plan[0]["Plan"]) if n.get("Index Name") == "task_search"]
    assert scans and all(n["Actual Rows"] == 3 for n in scans), scans
    assert sorted(t.number for t in tasks) == [1, 2, 3]
    assert writer.api.get(f"{S}/tasks?q=the").json()["results"] == []  # only stop words: nothing, not everything
    assert writer.api.get(f"{S}/tasks?q=-zebrafish").json()["count"] == 300  # the space's others only
    assert writer.api.get(f"{S}/tasks?q=S{other.pk}").json()["results"] == []  # the lexeme is not a word


def test_a_window_takes_the_graph_fields_per_proposal(writer):
    create(writer, "first")
    results = writer.api.post(f"{S}/tasks/window", {"proposals": [
        {"title": "second", "priority": 0, "labels": ["ops"], "blocked_by": [1]},
        {"title": "third", "blocked_by": [99]},
        {"title": "fourth", "labels": ["no spaces allowed"]},
    ]}).json()["results"]
    assert [r["status"] for r in results] == [201, 422, 422]
    assert results[0]["body"]["blocked_by"] == [1] and results[0]["body"]["labels"] == ["ops"]
    assert "blocked_by" in results[1]["body"]["fields"] and "labels" in results[2]["body"]["fields"]
    assert task(writer, 1)["blocks"] == [2]


def test_the_fifty_blockers_a_task_may_have_count_live_ones_only(writer, space):
    from tasks.models import Task

    rows = [Task(space=space, number=n, title=f"bulk {n}", conflict_target=f"bulk {n}", received_seq=0,
                 payload_sha256="", creator=writer.member, status="open" if n <= 51 else "done")
            for n in range(1, 61)]
    Task.objects.bulk_create(rows)
    space.__class__.objects.filter(pk=space.pk).update(task_counter=60)
    refused = writer.api.post(f"{S}/tasks", {"title": "too much", "blocked_by": list(range(1, 52))})
    assert refused.status_code == 422 and "blocked_by" in refused.json()["fields"]
    accepted = create(writer, "enough", blocked_by=list(range(2, 61)))  # 50 live, 9 done
    assert accepted["blocked_by"] == list(range(2, 52))
    assert writer.api.post(f"{S}/tasks/61/blockers", {"task": 1}).json()["error"] == "invalid_request"


def test_the_graph_reference_section_comes_from_the_code(anonymous):
    graph = anonymous.get("/v1/reference?section=graph").json()["graph"]
    assert graph["fields"]["priority"]["default"] == 2 and graph["fields"]["blocked_by"]["max_live"] == 50
    assert {r["code"] for r in graph["refusals"]} >= {"task_blocked", "dependency_cycle"}
    assert "unblocked" in graph["history"]
