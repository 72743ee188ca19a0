"""SPEC §9: the bootstrapping commands, in their exact forms."""
from __future__ import annotations

import json
import time

import pytest
from django.core.management import CommandError, call_command

from spaces.models import ApiKey, CharterItem, Space
from spaces.key_lookup import authenticate_key
from tests.conftest import FIXTURE


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_create_space_with_catalog():
    output = run("create_space", "lab", "--name", "Lab", "--catalog", str(FIXTURE))
    assert "Imported 3 catalog rows" in output
    space = Space.objects.get(slug="lab")
    assert space.name == "Lab" and space.charter_items.count() == 3


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_create_space_refuses_a_duplicate_slug():
    run("create_space", "lab", "--name", "Lab")
    with pytest.raises(CommandError, match="already exists"):
        run("create_space", "lab", "--name", "Lab")


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_import_catalog_upserts_by_id(tmp_path):
    run("create_space", "lab", "--name", "Lab", "--catalog", str(FIXTURE))
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([
        {"work_item_id": "t01", "canonical_title": "Renamed", "aliases": []},
        {"work_item_id": "T9", "canonical_title": "New", "aliases": ["fresh"]},
    ]))
    run("import_catalog", "lab", str(path))
    items = {i.work_item_id: i for i in CharterItem.objects.filter(space__slug="lab")}
    assert set(items) == {"T1", "T2", "T3", "T9"}
    assert items["T1"].canonical_title == "Renamed" and items["T9"].aliases == ["fresh"]


@pytest.mark.django_db(transaction=True)  # commands commit for real
@pytest.mark.parametrize(
    "content, message",
    [("not json", "not a JSON file"), ('{"rows": []}', "expected a list"),
     ('[{"work_item_id": "X", "canonical_title": "a"}]', "row 1")],
)
def test_import_catalog_reports_bad_files(tmp_path, content, message):
    run("create_space", "lab", "--name", "Lab")
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        run("import_catalog", "lab", str(path))
    with pytest.raises(CommandError, match="No space"):
        run("import_catalog", "nope", str(path))


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_import_catalog_takes_100000_rows_well_under_a_minute(tmp_path):
    run("create_space", "big", "--name", "Big")
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"catalog": [
        {"work_item_id": f"T{i}", "canonical_title": f"item {i} of the big catalog", "aliases": [f"alias {i}"]}
        for i in range(1, 100_001)
    ]}))
    started = time.monotonic()
    run("import_catalog", "big", str(path))
    elapsed = time.monotonic() - started
    assert CharterItem.objects.filter(space__slug="big").count() == 100_000
    print(f"imported 100,000 rows in {elapsed:.1f} s")  # reported, not asserted: timings never fail tests


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_issue_key_prints_the_key_alone_on_the_last_line():
    run("create_space", "lab", "--name", "Lab")
    output = run("issue_key", "lab", "--role", "writer", "--name", "bot")
    key = output.strip().splitlines()[-1]
    api_key = authenticate_key(key)
    assert api_key is not None and api_key.member.name == "bot" and api_key.member.role == "writer"


@pytest.mark.django_db(transaction=True)  # commands commit for real
def test_load_demo_builds_agent_lab_with_a_steward_key():
    output = run("load_demo")
    key = authenticate_key(output.strip().splitlines()[-1])
    assert key.member.role == "steward" and key.space.slug == "agent-lab"
    assert key.space.charter_items.count() == 3
    again = authenticate_key(run("load_demo").strip().splitlines()[-1])  # refreshes instead of failing
    assert Space.objects.filter(slug="agent-lab").count() == 1
    assert again.member == key.member and key.member.space.members.count() == 1  # one demo steward
    assert authenticate_key(output.strip().splitlines()[-1]) is None  # the earlier key is revoked
    assert ApiKey.objects.filter(revoked_at=None).count() == 1


@pytest.mark.django_db(transaction=True)
def test_load_demo_makes_the_catalog_once_and_keeps_a_stewards_edits():
    from spaces import services

    run("load_demo")
    space = Space.objects.get(slug="agent-lab")
    services.upsert_charter_item(space=space, work_item_id="T1", canonical_title="Our own benchmark harness",
                                 aliases=[])
    services.upsert_charter_item(space=space, work_item_id="T9", canonical_title="A slot of our own", aliases=[])
    version = Space.objects.get(pk=space.pk).catalog_version
    output = run("load_demo")
    assert "kept as it is" in output
    space.refresh_from_db()
    assert space.catalog_version == version  # nothing imported again
    assert space.charter_items.get(work_item_id="T1").canonical_title == "Our own benchmark harness"
    assert space.charter_items.count() == 4
