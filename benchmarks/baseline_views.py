"""Baselines served by the same gunicorn as the service, for ratios measured in one run.

- ``insert``: an authenticated DRF view doing one plain INSERT;
- ``insert_idempotent``: the same behind a minimal Stripe-style idempotency key
  (insert the key or read the stored response, then do the work and store the response).
- ``claim``: one bare ``FOR UPDATE SKIP LOCKED`` claim of the lowest open task.
"""
from __future__ import annotations

import json

from django.db import connection, transaction
from rest_framework.response import Response
from rest_framework.views import APIView

TABLES = """
CREATE TABLE IF NOT EXISTS bench_row (id bigserial PRIMARY KEY, member_id bigint NOT NULL, title text NOT NULL,
                                      created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS bench_idempotency (member_id bigint NOT NULL, key text NOT NULL, response text,
                                              PRIMARY KEY (member_id, key));
"""


def create_tables() -> None:
    """The baselines' own tables, beside the service's (after its migrations)."""
    with connection.cursor() as cursor:
        cursor.execute(TABLES)


class InsertView(APIView):
    def post(self, request):
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_row (member_id, title) VALUES (%s, %s) RETURNING id",
                [request.user.pk, request.data.get("title", "")],
            )
            row_id = cursor.fetchone()[0]
        return Response({"id": row_id}, status=201)


class InsertIdempotentView(APIView):
    def post(self, request):
        key = request.headers.get("Idempotency-Key", "")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_idempotency (member_id, key) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING key",
                [request.user.pk, key],
            )
            if cursor.fetchone() is None:
                cursor.execute("SELECT response FROM bench_idempotency WHERE member_id = %s AND key = %s",
                               [request.user.pk, key])
                stored = cursor.fetchone()[0]
                return Response(json.loads(stored) if stored else {"in_progress": True}, status=201 if stored else 409)
            cursor.execute("INSERT INTO bench_row (member_id, title) VALUES (%s, %s) RETURNING id",
                           [request.user.pk, request.data.get("title", "")])
            body = {"id": cursor.fetchone()[0]}
            cursor.execute("UPDATE bench_idempotency SET response = %s WHERE member_id = %s AND key = %s",
                           [json.dumps(body), request.user.pk, key])
        return Response(body, status=201)


class ClaimView(APIView):
    def post(self, request):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, number FROM tasks_task WHERE space_id = %s AND status = 'open' "
                "ORDER BY priority, number LIMIT 1 FOR UPDATE SKIP LOCKED",
                [request.auth.space_id],
            )
            row = cursor.fetchone()
            if row is None:
                return Response({"task": None})
            cursor.execute("UPDATE tasks_task SET status = 'claimed' WHERE id = %s", [row[0]])
        return Response({"task": {"id": row[1]}})
