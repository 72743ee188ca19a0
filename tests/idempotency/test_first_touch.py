"""idempotency.first_touch: the API key, the attempt's liveness lock and the operation's first touch
in one round trip (SPEC §2, §7.1)."""
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from idempotency.first_touch import touch_first
from idempotency.services import settle_operation
from idempotency.models import Operation, OperationState
from spaces import services
from spaces.models import ApiKey
from tests.conftest import load_agent_lab
from tests.factories import member_with_key

# transaction=True: the lock and the touch live in real transactions, as in a request.
pytestmark = [pytest.mark.django_db(transaction=True)]


def touch(raw: str, key: str = "k1", fingerprint: str = "f" * 64):
    return touch_first(raw_key=raw, idempotency_key=key, method="POST", path="/v1/x", fingerprint=fingerprint)


def test_a_new_key_is_authenticated_locked_and_touched_in_one_statement():
    member, raw = member_with_key(load_agent_lab(), "writer")
    touch(raw, key="warm-up")  # the key's last_used_at write happens once a minute, not here
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        api_key, touched = touch(raw)
    assert len(queries) == 1
    assert api_key.member == member and api_key.space_id == member.space_id and api_key.member.space.slug
    assert touched.locked and touched.created
    # The instance is exactly the stored row, tuple and lease included.
    stored = Operation.objects.get(member=member, key="k1")
    assert touched.operation.pk == stored.pk and model_to_dict(touched.operation) == model_to_dict(stored)
    assert stored.binding_generation == api_key.generation and stored.state == OperationState.IN_PROGRESS


def test_a_completed_operation_is_found_in_the_same_statement():
    _, raw = member_with_key(load_agent_lab(), "writer")
    with transaction.atomic():
        _, first = touch(raw)
        assert settle_operation(operation=first.operation, status=201, body={"id": 1}, headers={})
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        _, again = touch(raw)
    assert len(queries) == 1
    assert again.locked and not again.created and again.operation.pk == first.operation.pk
    assert again.operation.state == OperationState.COMPLETED and again.operation.response_body == {"id": 1}


def other_connection_touch(raw: str) -> tuple:
    """A second attempt, on its own connection, while this one's transaction is open."""
    result = {}

    def run():
        try:
            with transaction.atomic():
                result["touch"] = touch(raw)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the second touch waited instead of answering"
    return result["touch"]


def test_a_second_attempt_finds_the_lock_held_while_the_first_transaction_is_open():
    _, raw = member_with_key(load_agent_lab(), "writer")
    with transaction.atomic():
        _, first = touch(raw)
        assert first.locked
        _, second = other_connection_touch(raw)
        assert not second.locked and second.operation is None
    assert Operation.objects.count() == 1


def test_the_lock_is_free_the_moment_the_attempt_s_transaction_ends():
    _, raw = member_with_key(load_agent_lab(), "writer")
    try:
        with transaction.atomic():
            touch(raw)
            raise RuntimeError("the attempt dies")
    except RuntimeError:
        pass
    _, retry = other_connection_touch(raw)
    assert retry.locked and retry.created  # its first touch died with it: the retry starts afresh


@pytest.mark.parametrize("spoil", ["wrong secret", "revoked", "expired", "unknown prefix", "not a key"])
def test_a_key_that_is_not_valid_touches_and_locks_nothing(spoil):
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
    with transaction.atomic():
        assert touch(raw) == (None, None)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
            assert cursor.fetchone()[0] == 0
    assert not Operation.objects.exists()
