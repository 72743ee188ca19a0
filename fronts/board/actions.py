"""Acting from the board (SPEC §14 as amended): ``POST /board/{slug}/tasks/{n}/{action}`` with a
JSON body, sent by the page with its CSRF token.

Each action is the API's command, run in a unit of work of its own under the staff user's
steward member (``steward_for_admin_user``, as the admin's actions are), so it has the same
input checks, lookups, refusals and history. The answer is the task's card as the board draws
it, or the command's refusal as the API sends it (the page shows its ``detail`` on the card).
Each action takes the model permission the admin takes for it; without it, ``403``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from commands.unit import in_unit
from common import json_input
from common.problems import problem_response
from common.refusals import DomainError, Forbidden, MalformedJson, NotFound
from commands.base import Command
from spaces.models import Space
from spaces.commands import steward_for_admin_user
from tasks import commands, selectors
from fronts.board.data import cards
from tasks.models import Task

CHANGE = "tasks.change_task"
HOLD = "allocation.add_slothold"  # as the admin's Hold slot action
RELEASE = "allocation.delete_slothold"  # as the admin's Release the hold


@dataclass(frozen=True)
class BoardAction:
    command: Command
    permission: str
    data: Callable[[Task, dict], dict] = lambda task, body: body  # the command's input
    lookups: Callable[[Task, dict], dict] = lambda task, body: {"number": task.number}


def answer_input(task: Task, body: dict) -> dict:
    """An answer's input: the body without the question's id, which is a lookup."""
    return {name: value for name, value in body.items() if name != "question"}


ACTIONS: dict[str, BoardAction] = {
    "update": BoardAction(commands.update_task, CHANGE),  # {"priority": 1} or {"labels": [...]}
    "assign": BoardAction(commands.assign_task, CHANGE),  # {"member": id}
    "supersede": BoardAction(commands.supersede_task, CHANGE),  # {"surviving_task": n}
    "withdraw": BoardAction(commands.withdraw_task, CHANGE),
    "reject": BoardAction(commands.reject_task, CHANGE),
    "approve": BoardAction(commands.approve_task, CHANGE, data=lambda task, body: None),  # SPEC §21
    "refuse": BoardAction(commands.refuse_task, CHANGE),  # {"reason"?}
    "unpark": BoardAction(commands.unpark_task, CHANGE, data=lambda task, body: None),  # SPEC §22
    "not-duplicate": BoardAction(commands.mark_not_duplicate, CHANGE),  # {"task": m}
    "hold": BoardAction(commands.hold_slot, HOLD, data=lambda task, body: commands.hold_of_task(task),
                        lookups=lambda task, body: {}),
    "release": BoardAction(commands.release_slot, RELEASE, data=lambda task, body: None,
                           lookups=lambda task, body: {"work_item_id": task.work_item_id or ""}),
    # SPEC §21: a person answers a question ({"question": id, "body"?, "option"?}) and writes to the thread.
    "answer": BoardAction(commands.answer_question, CHANGE, data=answer_input,
                          lookups=lambda task, body: {"number": task.number, "question": body.get("question")}),
    "message": BoardAction(commands.post_task_message, CHANGE),  # {"body", "to"?}
    # A person's check of an attempt ({"attempt": n}, and a reject's {"reason"?}).
    "confirm": BoardAction(commands.confirm_attempt, CHANGE, data=lambda task, body: None,
                           lookups=lambda task, body: {"number": task.number, "attempt": body.get("attempt")}),
    "reject-attempt": BoardAction(commands.reject_attempt, CHANGE,
                                  data=lambda task, body: {"reason": body.get("reason", "")},
                                  lookups=lambda task, body: {"number": task.number, "attempt": body.get("attempt")}),
}


def request_body(request: HttpRequest) -> dict:
    """The body as every front reads JSON (``common.json_input``): an object, else ``400``."""
    try:
        body = json_input.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise MalformedJson("The body is not JSON.") from None
    if not isinstance(body, dict):
        raise MalformedJson("The body must be a JSON object.")
    return body


@require_POST
@staff_member_required
def board_action_view(request: HttpRequest, slug: str, number: int, action: str) -> JsonResponse:
    try:
        board_action = ACTIONS.get(action)
        if board_action is None:
            raise NotFound(f"No board action {action!r}; the board offers {', '.join(ACTIONS)}.")
        if not request.user.has_perm(board_action.permission):
            raise Forbidden(f"Your account lacks the {board_action.permission} permission.")
        space = get_object_or_404(Space, slug=slug)
        body = request_body(request)
        actor = steward_for_admin_user(space=space, username=request.user.get_username())
        task = selectors.get_task(space=space, number=number)
        in_unit(lambda unit: board_action.command(actor, unit=unit, data=board_action.data(task, body),
                                                  **board_action.lookups(task, body)))
    except DomainError as error:
        return problem_response(error)
    return JsonResponse({"card": cards(space, [number])[number]})


def controls(user) -> dict[str, Any]:
    """Which actions the page offers this user: a control for each it may use, none else."""
    return {name: user.has_perm(action.permission) for name, action in ACTIONS.items()}
