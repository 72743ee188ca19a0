"""allocation.first_touch: the API key and the operation's first touch in one round trip (SPEC §2, §7.1)."""
from datetime import timedelta

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocation.first_touch import authenticate_and_begin
from allocation.idempotency import settle_operation
from allocation.models import Operation, OperationState
from spaces import services
from spaces.models import ApiKey
from tests.conftest import load_agent_lab
from tests.factories import member_with_key

# transaction=True: outside a test transaction, as in a request (the touch commits on its own).
pytestmark = [pytest.mark.django_db(transaction=True)]


def begin(raw: str, key: str = "k1", fingerprint: str = "f" * 64):
    return authenticate_and_begin(raw_key=raw, idempotency_key=key, method="POST", path="/v1/x",
                                  fingerprint=fingerprint)


def settle_ok(operation: Operation) -> None:
    assert settle_operation(operation=operation, status=201, body={"id": 1}, headers={})


def test_a_new_key_is_authenticated_and_touched_in_one_statement():
    member, raw = member_with_key(load_agent_lab(), "writer")
    begin(raw, key="warm-up")  # the key's last_used_at write happens once a minute, not here
    with CaptureQueriesContext(connection) as queries:
        api_key, begun = begin(raw)
    assert len(queries) == 1
    assert api_key.member == member and api_key.space_id == member.space_id and api_key.member.space.slug
    assert not begun.replay
    # The instance is exactly the stored row, tuple and lease included.
    stored = Operation.objects.get(member=member, key="k1")
    assert begun.operation.pk == stored.pk and model_to_dict(begun.operation) == model_to_dict(stored)
    assert stored.binding_generation == api_key.generation and stored.state == OperationState.IN_PROGRESS


def test_a_completed_operation_is_found_in_the_same_statement_and_replayed():
    _, raw = member_with_key(load_agent_lab(), "writer")
    _, first = begin(raw)
    settle_ok(first.operation)
    with CaptureQueriesContext(connection) as queries:
        _, again = begin(raw)
    assert len(queries) == 1
    assert again.replay and again.operation.pk == first.operation.pk
    assert again.operation.response_status == 201 and again.operation.response_body == {"id": 1}


def test_another_body_under_the_same_key_is_refused_and_changes_nothing():
    from allocation.errors import IdempotencyKeyReused

    _, raw = member_with_key(load_agent_lab(), "writer")
    _, first = begin(raw)
    with pytest.raises(IdempotencyKeyReused):
        begin(raw, fingerprint="g" * 64)
    assert Operation.objects.get().fingerprint == "f" * 64 and Operation.objects.count() == 1


@pytest.mark.parametrize("spoil", ["wrong secret", "revoked", "expired", "unknown prefix", "not a key"])
def test_a_key_that_is_not_valid_touches_nothing(spoil):
    member, raw = member_with_key(load_agent_lab(), "writer")
    key = ApiKey.objects.get(member=member)
    if spoil == "wrong secret":
        raw = raw[:-4] + ("0000" if not raw.endswith("0000") else "1111")
    elif spoil == "revoked":
        services.revoke_key(key=key)
    elif spoil == "expired":
        ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif spoil == "unknown prefix":
        raw = "sk_" + "z" * 12 + raw[15:]
    else:
        raw = "Basic dXNlcjpwYXNz"
    assert begin(raw) == (None, None)
    assert not Operation.objects.exists()


def test_the_key_is_bound_to_the_generation_it_was_touched_with():
    from allocation.errors import IdempotencyBindingMismatch

    member, raw = member_with_key(load_agent_lab(), "writer")
    _, first = begin(raw)
    settle_ok(first.operation)
    _, rotated = services.issue_key(member=member)  # a new key: a higher generation, same member
    with pytest.raises(IdempotencyBindingMismatch):
        begin(rotated)
