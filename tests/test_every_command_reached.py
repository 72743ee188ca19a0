"""Every command has a front: an MCP tool (and so a step of the walk in
``test_every_command_alike``, which holds REST and MCP to the same answers), or a REST route that
runs it (``SpaceView.run``). A command written and left unreached, or a route that does its
work beside its command, fails here; the admin and the board run these same objects."""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from commands.base import COMMANDS, Command

ROOT = Path(__file__).resolve().parent.parent
APPS_WITH_COMMANDS = ("calls", "costs", "exports", "spaces", "tasks", "webhooks")


def every_command() -> dict[str, Command]:
    found: dict[str, Command] = {}
    for app in APPS_WITH_COMMANDS:
        module = importlib.import_module(f"{app}.commands")
        for _, value in inspect.getmembers(module, lambda v: isinstance(v, Command)):
            found[value.name] = value
    return found


def run_by_rest() -> set[str]:
    """The commands a REST view hands to ``self.run``, resolved in the view module's own names."""
    named: set[str] = set()
    for path in sorted((ROOT / "fronts" / "rest").glob("*.py")):
        module = importlib.import_module(f"fronts.rest.{path.stem}")
        for dotted in re.findall(r"self\.run\(([\w.]+)", path.read_text()):
            head, *rest = dotted.split(".")
            value = getattr(module, head, None)
            for attribute in rest:
                value = getattr(value, attribute, None)
            if isinstance(value, Command):
                named.add(value.name)
    return named


def test_every_command_is_a_tool_or_a_route():
    unreached = set(every_command()) - set(COMMANDS) - run_by_rest()
    assert unreached == set()


def test_the_rest_routes_of_spaces_webhooks_exports_and_notifications_run_commands():
    """Their writes go through ``self.run`` (the runner's unit, the command's role and refusals)."""
    rest_only = {"update_space", "create_join_link", "delete_join_link", "change_member", "issue_key", "revoke_key",
                 "save_charter_item", "delete_charter_item", "hide_post", "withhold_post",
                 "register_webhook", "update_webhook", "delete_webhook", "rotate_webhook_secret", "send_test_event",
                 "retry_delivery", "mark_notifications_read"}
    assert rest_only <= run_by_rest()
