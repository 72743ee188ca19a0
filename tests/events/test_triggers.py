"""The rules the database keeps as triggers are the ones their apps define by name
(``events.sql``, ``tasks.sql``): a change there without a migration that applies it
fails here, as a trigger changed by hand in the database would."""
from __future__ import annotations

import pytest
from django.db import connection

from common.sql import Trigger
from events.sql import seal
from tasks.sql import history_into_feed

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("trigger", [seal(), history_into_feed()], ids=lambda t: t.name)
def test_the_database_runs_the_trigger_its_app_defines(trigger: Trigger):
    with connection.cursor() as cursor:
        body, attached = trigger.installed(cursor)
    assert body == trigger.body
    assert attached


def test_a_body_changed_only_in_code_is_told_apart():
    changed = Trigger(seal().name, on=seal().on, timing=seal().timing, deferred=True,
                      body=seal().body.replace("RETURN NULL;", "RETURN NULL; -- changed"))
    with connection.cursor() as cursor:
        body, attached = changed.installed(cursor)
    assert body != changed.body and attached
