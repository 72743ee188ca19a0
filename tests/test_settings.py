import pytest

from common.database_url import parse_database_url


def parse(url: str) -> dict:
    return parse_database_url(url, conn_max_age=600)


def test_postgres_prepares_hot_statements_by_default():
    db = parse("postgres://app:s%40cret@db.internal:6543/spaces")
    assert db["ENGINE"] == "common.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "app", "s@cret", "db.internal", "6543", "spaces")
    assert db["OPTIONS"] == {"server_side_binding": True, "prepare_threshold": 5}
    assert db["CONN_MAX_AGE"] == 600


def test_a_pooler_in_transaction_mode_can_turn_prepared_statements_off():
    db = parse("postgres://app@pgbouncer/spaces?prepare_threshold=none&server_side_binding=false&sslmode=require"
               "&disable_server_side_cursors=true")
    assert db["OPTIONS"] == {"server_side_binding": False, "prepare_threshold": None, "sslmode": "require"}
    assert db["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert parse("postgres://app@db/spaces")["DISABLE_SERVER_SIDE_CURSORS"] is False


@pytest.mark.parametrize("query", ["server_side_binding=maybe", "prepare_threshold=-1", "prepare_threshold=five"])
def test_typed_options_refuse_bad_values(query):
    with pytest.raises(ValueError, match=query.split("=")[0]):
        parse(f"postgres://app@db/spaces?{query}")


def test_a_socket_folder_is_a_host():
    db = parse("postgres://postgres@/spaces?host=/srv/spaces/.postgres/run")
    assert (db["HOST"], db["PORT"], db["NAME"]) == ("/srv/spaces/.postgres/run", "", "spaces")
    assert "host" not in db["OPTIONS"]


@pytest.mark.parametrize("url", ["mysql://app@db/spaces", "sqlite:///db.sqlite3"])
def test_other_databases_are_refused(url):
    with pytest.raises(ValueError, match="PostgreSQL only"):
        parse(url)


def test_without_database_url_the_running_embedded_server_is_used_else_it_says_how_to_start_one(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from devserver import embedded_postgres
    from settings import base

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setattr(embedded_postgres, "running_url", lambda name: None)
    with pytest.raises(ImproperlyConfigured, match="bin/run"):
        base.database_url()
    monkeypatch.setattr(embedded_postgres, "running_url",
                        lambda name: f"postgres://postgres@/spaces?host=/srv/.postgres/{name}")
    assert base.database_url() == "postgres://postgres@/spaces?host=/srv/.postgres/run"
    monkeypatch.setenv("DATABASE_URL", "postgres://app@db/spaces")
    assert base.database_url() == "postgres://app@db/spaces"


def test_the_embedded_server_reads_its_socket_from_its_pid_file(tmp_path, monkeypatch):
    import os

    from devserver import embedded_postgres

    monkeypatch.setattr(embedded_postgres, "ROOT", tmp_path)
    assert embedded_postgres.running_url("run") is None
    (tmp_path / "run").mkdir()
    pid_file = tmp_path / "run" / "postmaster.pid"
    pid_file.write_text(f"{os.getpid()}\n/x\n0\n5432\n{tmp_path}/run\n\n1 2\nready\n")
    assert embedded_postgres.running_url("run") == f"postgres://postgres@/spaces?host={tmp_path}/run"
    pid_file.write_text(f"{os.getpid()}\n/x\n0\n5432\n{tmp_path}/run\n\n1 2\nstarting\n")
    assert embedded_postgres.running_url("run") is None
    with pytest.raises(ValueError):
        embedded_postgres.data_dir("../elsewhere")


def settings_in_a_fresh_process(**env: str):
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "settings.base", **env})


def test_debug_is_off_unless_asked_for_and_then_a_secret_key_is_required():
    assert settings_in_a_fresh_process(DJANGO_SECRET_KEY="k" * 50).stdout.strip() == "False"
    refused = settings_in_a_fresh_process()
    assert refused.returncode != 0 and "DJANGO_SECRET_KEY must be set" in refused.stderr
    assert settings_in_a_fresh_process(DJANGO_DEBUG="1").stdout.strip() == "True"
