"""The hot routes' round trips, pinned: a change that adds a statement to create, an idempotent
create, a replay, the 409 or next fails here and says which statements it runs now."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest
from django.db import connection
from psycopg import _connection_base

from tests.factories import create_task

S = "/v1/spaces/agent-lab"


@pytest.fixture
def warm(writer, writer2):
    """The first request of a process loads the catalog's bind index and notes the keys' use."""
    writer.api.post(f"{S}/tasks", {"title": "warm up"})
    writer2.api.post(f"{S}/tasks", {"title": "warm up too"})
    writer.api.post(f"{S}/tasks", {"title": "warm up again"}, headers={"Idempotency-Key": "warm"})
    return writer


@contextmanager
def round_trips(expected: int) -> Iterator[list[str]]:
    """What the connection sends to the server: each statement, and each BEGIN, COMMIT or
    ROLLBACK psycopg sends. (Django's query log is not the count: it lists a BEGIN and a
    COMMIT for a transaction in which nothing ran, and psycopg sends neither.)"""
    sent: list[str] = []
    exec_command = _connection_base.BaseConnection._exec_command

    def command(self, command, *args, **kwargs):
        sent.append(bytes(command).decode())
        return exec_command(self, command, *args, **kwargs)

    def statement(execute, sql, params, many, context):
        sent.append(sql[:60])
        return execute(sql, params, many, context)

    _connection_base.BaseConnection._exec_command = command
    try:
        with connection.execute_wrapper(statement):
            yield sent
    finally:
        _connection_base.BaseConnection._exec_command = exec_command
    assert len(sent) == expected, sent


def test_create(warm):
    # One transaction (SPEC §4.5 as amended): key, BEGIN, reserve, the similar tasks' term counts
    # (SPEC §16: the title binds no slot), mutation, COMMIT. No live title has its words, so
    # there are no candidates to read:
    with round_trips(6) as sent:
        assert warm.api.post(f"{S}/tasks", {"title": "Retry policy"}).status_code == 201
    assert not any(s.startswith("WITH q AS (SELECT * FROM unnest(") for s in sent)  # the candidates' read


def test_create_with_a_word_other_titles_have_reads_its_candidates(warm):
    warm.api.post(f"{S}/tasks", {"title": "Retry policy"})
    # Key, BEGIN, reserve, the term counts, the candidates sharing "retry", mutation, COMMIT:
    with round_trips(7):
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy for webhooks"})
    assert response.status_code == 201 and [t["title"] for t in response.json()["similar"]] == ["Retry policy"]


def test_create_with_blockers_commits_the_task_with_its_edges(warm, space):
    create_task(space=space, actor=warm.member, title="Blocker")
    # key, BEGIN with the blocker's lookup, reserve, the similar tasks' term counts, the mutation,
    # the blocker locked and read, the edge, its event, COMMIT: the edges commit with the task
    with round_trips(11) as sent:
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy", "blocked_by": [1]})
    assert response.status_code == 201 and response.json()["blocked_by"] == [1]
    assert sent[-1] == "COMMIT" and sum(s == "BEGIN" for s in sent) == 1


def test_create_with_a_new_idempotency_key(warm):
    # BEGIN, first touch (key, lock, operation), reserve, the similar tasks' term counts, mutation
    # (which takes the lock again, its own), settlement, COMMIT (the work with its answer)
    with round_trips(7):
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    assert response.status_code == 201


def test_an_idempotent_replay(warm):
    warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    with round_trips(3):  # BEGIN, the first touch finds the completed operation, COMMIT
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    assert response["Idempotent-Replayed"] == "true"


def test_the_409(warm, writer2):
    warm.api.post(f"{S}/tasks", {"title": "Retry policy"})
    with round_trips(4):  # key, BEGIN, reserve (which names the occupant), COMMIT
        assert writer2.api.post(f"{S}/tasks", {"title": "retry  POLICY"}).status_code == 409


def test_next(warm, space):
    create_task(space=space, actor=warm.member, title="Retry policy")
    with round_trips(4):  # key, BEGIN, claim, COMMIT
        assert warm.api.post(f"{S}/next").json()["task"] is not None


def test_next_with_a_key_claims_with_its_answer(warm, space):
    create_task(space=space, actor=warm.member, title="Retry policy")
    with round_trips(5):  # BEGIN, first touch, claim, settlement, COMMIT
        assert warm.api.post(f"{S}/next", headers={"Idempotency-Key": "n1"}).json()["task"] is not None


def test_a_list_page_costs_at_most_twice_one_task(warm, writer2, steward, space):
    """SPEC §11 with #17's bound: a page of 50 busy tasks, in a fixed number of statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for n in range(50):
        create_task(space=space, actor=steward.member, title=f"list item {n}", labels=["x"],
                    blocked_by=[4] if n % 3 else [])
    for number in (5, 6, 7):
        writer2.api.post(f"{S}/next", {"number": number})
    with CaptureQueriesContext(connection) as one:
        assert warm.api.get(f"{S}/tasks/6").status_code == 200
    for query in ("limit=50", "limit=50&ready=true&label=x", "q=item&limit=50"):
        with CaptureQueriesContext(connection) as page:
            response = warm.api.get(f"{S}/tasks?{query}")
        assert response.status_code == 200 and len(response.json()["results"]) >= 15, query
        assert len(page) <= 2 * len(one), (query, len(page), len(one), [q["sql"][:80] for q in page])
