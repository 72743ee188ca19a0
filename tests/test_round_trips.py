"""The hot routes' round trips, pinned: a change that adds a statement to create, an idempotent
create, a replay, the 409 or next fails here and says which statements it runs now."""
from __future__ import annotations

import pytest

from tests.factories import create_task

S = "/v1/spaces/agent-lab"


@pytest.fixture
def warm(writer, writer2):
    """The first request of a process loads the catalog's bind index and notes the keys' use."""
    writer.api.post(f"{S}/tasks", {"title": "warm up"})
    writer2.api.post(f"{S}/tasks", {"title": "warm up too"})
    writer.api.post(f"{S}/tasks", {"title": "warm up again"}, headers={"Idempotency-Key": "warm"})
    return writer


def test_create(warm, django_assert_num_queries):
    # Every create is one unit of work of two transactions (SPEC §4.5): BEGIN, key, reserve,
    # COMMIT (the reservation), BEGIN, mutation (which takes the unit's lock again), COMMIT
    with django_assert_num_queries(7):
        assert warm.api.post(f"{S}/tasks", {"title": "Retry policy"}).status_code == 201


def test_create_with_a_new_idempotency_key(warm, django_assert_num_queries):
    # BEGIN, first touch (key, lock, operation), reserve, COMMIT (the reservation), BEGIN, mutation
    # (which takes the lock again), settlement, COMMIT (the work with its answer)
    with django_assert_num_queries(8):
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    assert response.status_code == 201


def test_an_idempotent_replay(warm, django_assert_num_queries):
    warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    with django_assert_num_queries(3):  # BEGIN, the first touch finds the completed operation, COMMIT
        response = warm.api.post(f"{S}/tasks", {"title": "Retry policy"}, headers={"Idempotency-Key": "k1"})
    assert response["Idempotent-Replayed"] == "true"


def test_the_409(warm, writer2, django_assert_num_queries):
    warm.api.post(f"{S}/tasks", {"title": "Retry policy"})
    with django_assert_num_queries(4):  # BEGIN, key, reserve (which names the occupant), COMMIT
        assert writer2.api.post(f"{S}/tasks", {"title": "retry  POLICY"}).status_code == 409


def test_next(warm, space, django_assert_num_queries):
    create_task(space=space, actor=warm.member, title="Retry policy")
    with django_assert_num_queries(4):  # BEGIN, key, claim, COMMIT
        assert warm.api.post(f"{S}/next").json()["task"] is not None


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
