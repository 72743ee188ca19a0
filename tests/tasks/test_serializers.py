"""The hand-built task and claim bodies match the shapes their declared fields document."""
from __future__ import annotations

from rest_framework import serializers

from commands.unit import in_transaction
from tasks.claims import claim_next_task
from tasks.serializers import ClaimSerializer, TaskDetailSerializer, TaskSerializer


def by_fields(serializer_class, instance) -> dict:
    # DRF's own field-by-field rendering, which the fast to_representation replaces.
    return dict(serializers.Serializer.to_representation(serializer_class(), instance))


def test_task_and_claim_bodies_match_their_declared_fields(space, writer, tasks3):
    task, claim = in_transaction(claim_next_task, space=space, member=writer.member)
    assert TaskSerializer(task).data == by_fields(TaskSerializer, task)
    assert ClaimSerializer(claim).data == by_fields(ClaimSerializer, claim)
    detail = TaskDetailSerializer(task).data
    assert set(detail) == set(TaskDetailSerializer().fields)
