"""A database made by an earlier main migrates to this code with nothing lost: the export
models moved from ``tasks`` to their own app by state alone (SeparateDatabaseAndState), so
the rows the earlier code wrote — tasks, a completed export and its chunks — read back
through the new models, and the share opens."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.live_server import ROOT
from tests.live_server import test_database_url as database_url

EARLIER = "5f2d57d4837918aea179373b42e13ee75654cfb0"  # main before the unit of work and the exports app

MADE_BY_THE_EARLIER_CODE = """
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from spaces import services
from tasks import exports
from tasks.services import create_task
space = services.create_space(slug="old-lab", name="Old lab")
steward = services.add_member(space=space, role="steward", name="steward")
for title in ("Retry policy", "Write the onboarding guide"):
    create_task(space=space, actor=steward, title=title)
export = exports.request_export(space=space, actor=steward, api_key=None)
exports.drain_exports()
print(json.dumps({"export": export.pk}))
"""

READ_BY_THIS_CODE = """
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from exports import selectors, services
from exports.models import Export, ExportChunk
from tasks.models import Task
export = Export.objects.get()
token = services.share_export(export=export)
document = json.loads(b"".join(part if isinstance(part, bytes) else part.encode()
                               for part in selectors.shared_export(token=token)))
print(json.dumps({"titles": list(Task.objects.order_by("number").values_list("title", flat=True)),
                  "export": export.pk, "state": selectors.export_state(export)["state"],
                  "chunks": ExportChunk.objects.filter(export=export).count(),
                  "shared_titles": [t["title"] for t in document["tasks"]]}))
"""


# The earlier code listed django-mcp-server's app, which this code's environment no longer
# installs; that app had no tables, so the earlier code runs without it and writes the same rows.
WITHOUT_THE_OLD_MCP_APP = """from settings.base import *  # noqa: F401,F403
INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "mcp_server"]  # noqa: F405
"""


def run(code: str, root: Path, url: str, settings: str = "settings.base") -> dict:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": settings, "DJANGO_DEBUG": "1",
           "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_database_made_by_the_earlier_main_migrates_and_reads_back(tmp_path):
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", EARLIER],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tmp_path / "earlier", filter="data")
    parts = urlsplit(database_url())
    url = urlunsplit(parts._replace(path="/spaces_migrate_from_earlier"))
    admin = urlunsplit(parts._replace(path="/postgres", scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS spaces_migrate_from_earlier WITH (FORCE)")
        conn.execute("CREATE DATABASE spaces_migrate_from_earlier")
    try:
        (tmp_path / "earlier" / "settings" / "without_old_mcp.py").write_text(WITHOUT_THE_OLD_MCP_APP)
        made = run(MADE_BY_THE_EARLIER_CODE, tmp_path / "earlier", url, settings="settings.without_old_mcp")
        read = run(READ_BY_THIS_CODE, ROOT, url)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS spaces_migrate_from_earlier WITH (FORCE)")
    assert read["titles"] == ["Retry policy", "Write the onboarding guide"]
    assert read["export"] == made["export"] and read["state"] == "completed" and read["chunks"] >= 1
    assert read["shared_titles"] == read["titles"]
