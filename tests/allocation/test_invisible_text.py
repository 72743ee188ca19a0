"""SPEC §4.2 as amended: text a reader cannot see never makes a second piece of work."""
from __future__ import annotations

import importlib

import pytest

from allocation.binding import normalize_title, remove_ignorable, tokens
from allocation.models import Occupancy
from tasks.models import Task

S = "/v1/spaces/agent-lab"


@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060", "\ufe0f", "\U000e0041"])
def test_invisible_code_points_inside_a_word_change_neither_key_nor_tokens(invisible):
    assert normalize_title(f"Retry pol{invisible}icy{invisible}") == "retry policy"
    assert tokens(f"code re{invisible}view agents") == tokens("code review agents")
    assert remove_ignorable(f"a{invisible}b") == "ab"


def test_a_title_with_invisible_characters_loses_to_the_task_it_copies(writer, writer2):
    first = writer.api.post(f"{S}/tasks", {"title": "Retry policy"})
    assert first.status_code == 201
    for sneaky in ("Retry pol\u200bicy", "Retry policy\u200b", "\ufeffRetry policy", "Re\u00adtry policy"):
        response = writer2.api.post(f"{S}/tasks", {"title": sneaky})
        assert response.status_code == 409 and response.json()["winner"]["id"] == first.json()["number"], sneaky
    bound = writer.api.post(f"{S}/tasks", {"title": "Build a bench\u200dmark for code review agents"})
    assert bound.json()["work_item_id"] == "T1"


@pytest.mark.parametrize("title", ["\u200b\u200b", " \ufeff ", "\u0007 bell", "tab\tok but \r no"])
def test_a_title_with_nothing_visible_or_with_control_characters_is_422(writer, title):
    response = writer.api.post(f"{S}/tasks", {"title": title})
    assert response.status_code == 422 and "title" in response.json()["fields"]
    assert not Task.objects.exists()


def test_tab_and_newline_are_allowed(writer):
    assert writer.api.post(f"{S}/tasks", {"title": "two\tpart\ntitle"}).status_code == 201


def test_the_migration_rekeys_live_tasks_and_names_the_lowest_numbered_occupant(space, writer):
    from django.apps import apps

    from tests.factories import create_task

    first = create_task(space=space, actor=writer.member, title="Retry policy")
    second = create_task(space=space, actor=writer.member, title="Write the onboarding guide")
    # What the rule before this one stored for a title with a zero-width space in it:
    Task.objects.filter(pk=second.pk).update(title="Retry\u200b policy", conflict_target="task:agent-lab:retry\u200b policy")
    Occupancy.objects.filter(task=second).update(target="task:agent-lab:retry\u200b policy")
    migration = importlib.import_module("tasks.migrations.0007_conflict_keys_without_invisible_text")
    migration.rekey(apps, None)
    assert set(Task.objects.values_list("conflict_target", flat=True)) == {"task:agent-lab:retry policy"}
    occupancy = Occupancy.objects.get(target="task:agent-lab:retry policy")
    assert occupancy.task_id == first.pk and Occupancy.objects.count() == 1
