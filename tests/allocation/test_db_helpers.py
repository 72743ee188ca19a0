"""allocation.db.insert_or_fetch: one round trip that inserts a row or returns the one holding its key."""
from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from allocation.db import insert_or_fetch
from allocation.models import Operation, OperationState
from tests.conftest import load_agent_lab
from tests.factories import member_with_key

pytestmark = [pytest.mark.django_db(transaction=True)]


def touch(member, key: str, fingerprint: str) -> Operation:
    now = timezone.now()
    return Operation(space_id=member.space_id, member_id=member.pk, key=key, fingerprint=fingerprint,
                     binding_generation=1, method="POST", path="/v1/x", state=OperationState.IN_PROGRESS,
                     lease_epoch=1, lease_expires_at=now + timedelta(seconds=30), created_at=now, updated_at=now)


def stored(operation: Operation) -> dict:
    return model_to_dict(Operation.objects.get(pk=operation.pk))


def test_a_new_row_comes_back_as_the_instance_with_its_key_and_exactly_the_stored_values():
    member, _ = member_with_key(load_agent_lab(), "writer")
    row, created = insert_or_fetch(touch(member, "k1", "a" * 64), ["space", "member", "key"])
    assert created and row.pk and not row._state.adding
    assert model_to_dict(row) == stored(row)


def test_a_taken_key_returns_the_stored_row_not_the_new_values():
    member, _ = member_with_key(load_agent_lab(), "writer")
    first, _ = insert_or_fetch(touch(member, "k1", "a" * 64), ["space", "member", "key"])
    again, created = insert_or_fetch(touch(member, "k1", "b" * 64), ["space", "member", "key"])
    assert not created and again.pk == first.pk
    assert again.fingerprint == "a" * 64 and model_to_dict(again) == stored(first)
    assert Operation.objects.count() == 1
