"""The rules the database keeps as triggers are the ones their apps define by name
(``events.sql``, ``tasks.sql``): a change there without a migration that applies it
fails here, as a trigger changed by hand in the database would."""
from __future__ import annotations

import pytest
from django.db import connection

from common.sql import Trigger
from events.sql import seal
from tasks.sql import claim_caps, full_labels, history_into_feed, member_at_cap, ready_since

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("trigger", [seal(), history_into_feed(), claim_caps(), ready_since()], ids=lambda t: t.name)
def test_the_database_runs_the_trigger_its_app_defines(trigger: Trigger):
    with connection.cursor() as cursor:
        body, attached = trigger.installed(cursor)
    assert body == trigger.body
    assert attached


@pytest.mark.parametrize("function", [member_at_cap(), full_labels()], ids=lambda f: f.name)
def test_the_database_runs_the_function_its_app_defines(function):
    with connection.cursor() as cursor:
        assert function.installed(cursor) == function.body


def test_a_body_changed_only_in_code_is_told_apart():
    changed = Trigger(seal().name, on=seal().on, timing=seal().timing, deferred=True,
                      body=seal().body.replace("RETURN NULL;", "RETURN NULL; -- changed"))
    with connection.cursor() as cursor:
        body, attached = changed.installed(cursor)
    assert body != changed.body and attached
