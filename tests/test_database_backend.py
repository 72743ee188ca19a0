"""The PostgreSQL backend's health check: no round trip for a healthy connection, and a
connection the server has closed is still replaced before a request's first query."""
import select
import time

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper as DjangoWrapper

from spaces.models import Space

pytestmark = [pytest.mark.django_db(transaction=True)]


def server_connection() -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(host=settings["HOST"] or None, port=settings["PORT"] or None, user=settings["USER"] or None,
                           password=settings["PASSWORD"] or None, dbname=settings["NAME"], autocommit=True)


def start_of_request() -> None:
    """What Django does when a request starts: the next first query runs the health check."""
    connection.close_if_unusable_or_obsolete()
    assert connection.health_check_enabled and not connection.health_check_done


def test_a_healthy_idle_connection_is_usable_without_asking_the_server(monkeypatch):
    Space.objects.count()
    assert connection.connection is not None

    def round_trip(self):
        raise AssertionError("the health check sent SELECT 1 to a healthy connection")

    monkeypatch.setattr(DjangoWrapper, "is_usable", round_trip)
    start_of_request()
    assert Space.objects.count() == 0
    assert connection.health_check_done


def test_a_connection_the_server_closed_is_replaced_before_the_first_query():
    Space.objects.count()
    before = connection.connection
    with server_connection() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [before.info.backend_pid])
    poller = select.poll()
    poller.register(before.fileno(), select.POLLIN)
    deadline = time.monotonic() + 5
    while not poller.poll(50) and time.monotonic() < deadline:
        pass

    start_of_request()
    assert Space.objects.count() == 0  # would raise OperationalError on the terminated connection
    assert connection.connection is not before
