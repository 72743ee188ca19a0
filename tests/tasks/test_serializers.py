"""The hand-built task and claim bodies match the shapes their declared fields document."""
from __future__ import annotations

from rest_framework import serializers

from tasks.claims import claim_next_task
from tasks.serializers import ClaimSerializer, TaskDetailSerializer, TaskSerializer


def by_fields(serializer_class, instance) -> dict:
    # DRF's own field-by-field rendering, which the fast to_representation replaces.
    return dict(serializers.Serializer.to_representation(serializer_class(), instance))


def test_task_and_claim_bodies_match_their_declared_fields(space, writer, tasks3):
    task, claim = claim_next_task(space=space, member=writer.member)
    assert TaskSerializer(task).data == by_fields(TaskSerializer, task)
    assert ClaimSerializer(claim).data == by_fields(ClaimSerializer, claim)
    detail = TaskDetailSerializer(task).data
    assert set(detail) == set(TaskDetailSerializer().fields)


# --- The create route's shortcut past TaskCreateSerializer -----------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tasks.serializers import TaskCreateSerializer, plain_task_create  # noqa: E402

texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=" \t\n\x00ab", max_size=6),
    st.sampled_from(["", "  ", " T1 ", "x" * 32, "x" * 33, "y" * 500, "y" * 501, " " + "y" * 500,
                     "result", "review", "message"]),
)
likely_valid = st.fixed_dictionaries(
    {"title": texts},
    optional={"body": texts, "delivery_mode": st.one_of(st.sampled_from(["result", "review", "message"]), texts),
              "work_item_id": st.one_of(st.none(), texts)},
)
values = st.one_of(st.none(), texts, st.integers(), st.booleans(), st.lists(st.integers(), max_size=2))
bodies = st.one_of(
    likely_valid,
    st.dictionaries(st.sampled_from(["title", "body", "delivery_mode", "work_item_id", "extra"]), values),
    values,
)


@settings(max_examples=1500, deadline=None)
@given(bodies)
def test_the_shortcut_answers_as_the_serializer_does_or_steps_aside(data):
    plain = plain_task_create(data)
    if plain is None:
        return  # the serializer decides, with its own messages
    serializer = TaskCreateSerializer(data=data)
    assert serializer.is_valid(), serializer.errors
    assert plain == dict(serializer.validated_data)


def test_the_shortcut_takes_everyday_bodies():
    assert plain_task_create({"title": "Retry policy"}) == {
        "title": "Retry policy", "body": "", "delivery_mode": "result", "work_item_id": None}
    assert plain_task_create({"title": " T1 - x ", "body": " b ", "work_item_id": " t1 ", "delivery_mode": "review"}) == {
        "title": " T1 - x ", "body": "b", "delivery_mode": "review", "work_item_id": "t1"}
    assert plain_task_create({"title": ""}) is None and plain_task_create({"title": 7}) is None
