"""The task commands: one per action, the same for every front (REST, MCP, the admin).

Each command (``commands.base.Command``) owns what an action needs beyond its service: the
role it takes, its input, its lookups (the task by number, the survivor, the attempt), its
refusals and the shape of its reply. REST views and MCP tools are thin adapters: they find
the caller and the unit of work, call the command and send its reply as it is. ``tests/test_every_command_alike.py`` walks every command
through REST and MCP and compares the answers.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from allocation import services as allocation
from django.db import IntegrityError
from django.utils import timezone as django_timezone

from allocation.serializers import BindSerializer, HoldSerializer
from commands.unit import UnitOfWork, in_unit
from common.refusals import DomainError, NotFound
from costs.services import Cost, check_space_budget
from spaces.models import Member, Role, Space
from spaces.catalog import normalize_work_item_id
from commands.base import Command, Reply, command, validated
from spaces.selectors import get_member
from tasks import (
    approvals, attempts, claims, graph, inbox, lapses, lifecycle, messages, questions, routines, selectors, services,
    similarity, stewardship, waiting,
)
from tasks.errors import SurvivorInvalid
from tasks.models import Claim, Question, QuestionState, Routine, Task
from tasks.serializers import (
    RoutineCreateSerializer,
    RoutineSerializer,
    RoutineUpdateSerializer,
    AnswerSerializer,
    AskSerializer,
    AssignSerializer,
    AttemptSerializer,
    BlockerSerializer,
    ClaimSerializer,
    CloseSerializer,
    CostReportSerializer,
    DirectMessageSerializer,
    DoneSerializer,
    MarkReadSerializer,
    MessageCreateSerializer,
    MessageSerializer,
    NextSerializer,
    NoteCreateSerializer,
    NoteSerializer,
    QuestionSerializer,
    RejectSerializer,
    SimilarSerializer,
    SupersedeSerializer,
    TaskCreateSerializer,
    TaskDetailSerializer,
    TaskSerializer,
    TaskUpdateSerializer,
    WindowSerializer,
    iso,
)


def task_body(task: Task) -> dict:
    return TaskSerializer(task).data


def created_body(task: Task) -> dict:
    """A 201's task; with ``similar`` when its title bound no slot (SPEC §16)."""
    body = task_body(task)
    if task.work_item_id is None:
        body["similar"] = task.similar
    return body


def task_and(task: Task, **parts: Any) -> dict:
    return {"task": task_body(task), **parts}


# --- Creating work (SPEC §4) -----------------------------------------------------------------


# A create is one transaction (SPEC §4.5 as amended): its reservation commits with its task,
# occupancy and answer, once. A create of the same key meanwhile waits on the reservation's
# unique index entry, never a sleep, and answers by what committed: the occupant (409), or, when
# this one rolled back, nothing in its way. A window and a review note keep two phases (their
# reservations commit first): the services do each phase's work given their inputs; the phases
# and the unit's lock are decided here.


def create_once(*, unit: UnitOfWork, space: Space, actor: Member, **fields: Any) -> Task:
    """Create a task unless its conflict key is taken; raises the 409/422 of SPEC §4.6. The one
    create every front and the suite run (``commands.unit.in_unit`` for the suite)."""
    intent = services.reserve_task(space=space, actor=actor, operation=unit.operation, **fields)
    return mutate(unit, intent)


def mutate(unit: UnitOfWork, intent: services.CreateIntent) -> Task:
    """A create's mutation (a single create's, or each of a window's in its second phase). Its
    statement wrote nothing when another attempt held the unit's lock or the reservation is no
    longer this intent's (a window's, between its phases). The lock may have been held only for a
    moment (a request refused anyway, ``UnitOfWork.hold``), so the mutation runs once more under
    the lock; then the refusal that applies, or this attempt yields to a retry of the same
    request that holds the key now."""
    try:
        return services.mutate_task(intent, lock=unit.lock_params())
    except services.NotInserted:
        unit.hold()  # raises when another attempt of this operation took it over
    try:
        return services.mutate_task(intent, lock=unit.lock_params())
    except services.NotInserted:
        refusal = services.lost_reservation_refusal(intent, unit.operation)
        if refusal is None:
            unit.yield_to_another_attempt()
        raise refusal from None


@command("create_task", Role.WRITER, input=TaskCreateSerializer)
def create_task(member: Member, *, unit: UnitOfWork, **data: Any) -> Reply:
    # The space came with the API key in this request, catalog version included.
    task = create_once(unit=unit, space=member.space, actor=member, catalog_version=member.space.catalog_version,
                       **data)
    return Reply(201, created_body(task))


def window_results(member: Member, *, unit: UnitOfWork, proposals: list) -> list[dict]:
    """SPEC §4.7: validate each proposal, create the valid ones in array order, answer each
    exactly as a single create would have. Two phases: every reservation, then every task."""
    results = []
    valid: list[tuple[int, dict]] = []
    for index, raw in enumerate(proposals):
        try:
            valid.append((index, validated(TaskCreateSerializer, raw)))
        except DomainError as error:
            results.append({"index": index, "status": error.http_status, "body": error.as_body()})
    reserved = services.reserve_window(space=member.space, actor=member, proposals=[p for _, p in valid],
                                       operation=unit.operation, catalog_version=member.space.catalog_version)
    if any(isinstance(outcome, services.CreateIntent) for outcome in reserved):
        unit.commit_phase(hold=False)  # each mutation statement takes the unit's lock again
    outcomes = services.window_results(member.space, reserved, lambda intent: mutate(unit, intent))
    for (index, _), outcome in zip(valid, outcomes):
        body = created_body(outcome.task) if outcome.task else outcome.error.as_body()
        results.append({"index": index, "status": outcome.status, "body": body})
    return sorted(results, key=lambda r: r["index"])


@command("create_tasks", Role.WRITER, input=WindowSerializer)
def create_tasks(member: Member, *, unit: UnitOfWork, proposals: list) -> Reply:
    return Reply(200, {"results": window_results(member=member, unit=unit, proposals=proposals)})


@command("add_note", Role.WRITER, input=NoteCreateSerializer)
def add_note(member: Member, *, unit: UnitOfWork, number: object, **data: Any) -> Reply:
    """A review note (SPEC §4.8), in two phases: its reservation commits, then the note is
    written under the unit's lock taken again."""
    task = selectors.get_task(space=member.space, number=number)
    intent = services.reserve_note(task=task, actor=member, operation=unit.operation, **data)
    unit.commit_phase()
    return Reply(201, NoteSerializer(services.insert_note(intent)).data)


# --- The work graph (SPEC §13) ---------------------------------------------------------------


@command("update_task", Role.WRITER, input=TaskUpdateSerializer)
def update_task(member: Member, *, unit: UnitOfWork, number: object, **data: Any) -> Reply:
    task = services.update_task(task=selectors.get_task(space=member.space, number=number), actor=member, **data)
    return Reply(200, task_body(task))


@command("add_blocker", Role.WRITER, input=BlockerSerializer)
def add_blocker(member: Member, *, unit: UnitOfWork, number: object, task: int) -> Reply:
    blocked, added = graph.add_blocker(space=member.space, number=number, blocker_number=task, actor=member)
    return Reply(201 if added else 200, task_body(blocked))


@command("remove_blocker", Role.WRITER)
def remove_blocker(member: Member, *, unit: UnitOfWork, number: object, blocker: object) -> Reply:
    task = graph.remove_blocker(space=member.space, number=number, blocker_number=blocker, actor=member)
    return Reply(200, task_body(task))


# --- Claims, attempts and checks (SPEC §6) ---------------------------------------------------


@command("next_task", Role.WRITER, input=NextSerializer)
def next_task(member: Member, *, unit: UnitOfWork, kind: str, join: bool, labels: list[str],
              number: int | None = None, wait: float = 0) -> Reply:
    """``next``: the most urgent ready task, a given one (``number``, ``join``), or an attempt to
    check; with ``wait``, when there is nothing, it waits up to that many seconds for something
    (SPEC §15: the runner waits, and runs it again when work may be there)."""
    space = member.space
    seen = waiting.REGISTRY.generation(space.pk) if wait else 0

    def wait_more() -> bool:
        waiter = waiting.waiter_for_next(space=space, member=member, kind=kind, labels=labels, seen=seen)
        return unit.wait_for(waiter, wait)

    if kind == "check":  # checking goes on whatever the budget (SPEC §19)
        offered = attempts.offer_check(space=space, member=member)
        if offered is None:
            wait and wait_more()
            return Reply(200, {"task": None, "attempt": None})
        task, attempt = offered
        return Reply(200, task_and(task, attempt=AttemptSerializer(attempt).data))
    # SPEC §19: at the month's budget nothing is handed out, waited or not
    check_space_budget(space, claims_in_flight=lambda: claims.claims_in_flight(space.pk))
    if number is not None:
        claimed = claims.claim_task(space=space, member=member, number=number, join=join)
    else:
        claimed = claim_next(member, unit=unit, labels=labels)
    if claimed is None:
        wait and wait_more()
        return Reply(200, {"task": None})
    task, claim = claimed
    return Reply(200, task_and(task, claim=ClaimSerializer(claim).data))


def claim_next(member: Member, *, unit: UnitOfWork, labels: list[str]) -> tuple[Task, Claim] | None:
    """``next {}``: the most urgent ready task claimed for ``member``, or None.

    A next that meets a claim past its expiry records the lapse (SPEC §15) in a phase of its
    own: the lapse commits, then the claim runs in the unit's next phase. So no next holds a
    lapsed task's row while it waits for a row another transaction holds (the lock order of
    ``commands.unit``)."""
    for _ in range(claims.NEXT_ROUNDS):
        claimed = claims.claim_next_task(space=member.space, member=member, labels=labels)
        if claimed is not claims.LAPSES_DUE:
            return claimed
        lapses.lapse_due(space_id=member.space_id)
        unit.commit_phase()
    return None


@command("give_back", Role.WRITER, input=CostReportSerializer)
def give_back(member: Member, *, unit: UnitOfWork, number: object, cost: Cost | None = None) -> Reply:
    task, claim = claims.give_back(task=selectors.get_task(space=member.space, number=number), member=member,
                                   cost=cost)
    return Reply(200, task_and(task, claim=ClaimSerializer(claim).data))


@command("heartbeat", Role.WRITER, input=CostReportSerializer)
def heartbeat(member: Member, *, unit: UnitOfWork, number: object, cost: Cost | None = None) -> Reply:
    """SPEC §15: renew the caller's live claim on task ``number`` (SPEC §19: and report its spend)."""
    claim = claims.heartbeat(task=selectors.get_task(space=member.space, number=number), member=member, cost=cost)
    return Reply(200, {"claim": ClaimSerializer(claim).data})


@command("assign_task", Role.STEWARD, input=AssignSerializer)
def assign_task(caller: Member, *, unit: UnitOfWork, number: object, member: int) -> Reply:
    assignee = get_member(space=caller.space, member_id=member)
    task, claim = claims.assign_task(task=selectors.get_task(space=caller.space, number=number), member=assignee,
                                     actor=caller)
    return Reply(200, task_and(task, claim=ClaimSerializer(claim).data))


@command("mark_done", Role.WRITER, input=DoneSerializer)
def mark_done(member: Member, *, unit: UnitOfWork, number: object, post: int, cost: Cost | None = None) -> Reply:
    task, attempt = attempts.mark_done(task=selectors.get_task(space=member.space, number=number), member=member,
                                       post_id=post, cost=cost)
    return Reply(201, task_and(task, attempt=AttemptSerializer(attempt).data))


@command("confirm_attempt", Role.WRITER)
def confirm_attempt(member: Member, *, unit: UnitOfWork, number: object, attempt: object) -> Reply:
    task, result = attempts.confirm_attempt(task=selectors.get_task(space=member.space, number=number),
                                            number=attempt, member=member)
    return Reply(200, task_and(task, attempt=AttemptSerializer(result).data))


@command("reject_attempt", Role.WRITER, input=RejectSerializer)
def reject_attempt(member: Member, *, unit: UnitOfWork, number: object, attempt: object, reason: str) -> Reply:
    task, result, reopened = attempts.reject_attempt(task=selectors.get_task(space=member.space, number=number),
                                                     number=attempt, member=member, reason=reason)
    body = task_and(task, attempt=AttemptSerializer(result).data)
    if reopened:
        body["reopened"] = reopened
    return Reply(200, body)


# --- Stewardship (SPEC §5) -------------------------------------------------------------------


def survivor_of(member: Member, number: object) -> Task:
    """The task that survives a supersede: one of this space's, else ``422 survivor_invalid``."""
    try:
        return selectors.get_task(space=member.space, number=number)
    except DomainError:
        raise SurvivorInvalid(f"No task {number} in this space to survive.") from None


@command("supersede_task", Role.STEWARD, input=SupersedeSerializer)
def supersede_task(member: Member, *, unit: UnitOfWork, number: object, surviving_task: int, reason: str) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    task = stewardship.supersede_task(task=task, survivor=survivor_of(member, surviving_task), actor=member,
                                      reason=reason)
    return Reply(200, task_body(task))


@command("withdraw_task", Role.WRITER, input=CloseSerializer)  # the creator: the service checks
def withdraw_task(member: Member, *, unit: UnitOfWork, number: object, reason: str) -> Reply:
    task = stewardship.withdraw_task(task=selectors.get_task(space=member.space, number=number), actor=member,
                                     reason=reason)
    return Reply(200, task_body(task))


@command("reject_task", Role.STEWARD, input=CloseSerializer)
def reject_task(member: Member, *, unit: UnitOfWork, number: object, reason: str) -> Reply:
    task = stewardship.reject_task(task=selectors.get_task(space=member.space, number=number), actor=member,
                                   reason=reason)
    return Reply(200, task_body(task))


# --- Approval before work starts (SPEC §21) ---------------------------------------------------


@command("approve_task", Role.READER)  # a steward or the task's approver: the service checks who
def approve_task(member: Member, *, unit: UnitOfWork, number: object) -> Reply:
    task = approvals.approve(task=selectors.get_task(space=member.space, number=number), actor=member)
    return Reply(200, task_body(task))


@command("refuse_task", Role.READER, input=CloseSerializer)  # a steward or the task's approver
def refuse_task(member: Member, *, unit: UnitOfWork, number: object, reason: str) -> Reply:
    task = approvals.refuse(task=selectors.get_task(space=member.space, number=number), actor=member, reason=reason)
    return Reply(200, task_body(task))


# --- Dead letters (SPEC §22) -----------------------------------------------------------------


@command("unpark_task", Role.STEWARD)
def unpark_task(member: Member, *, unit: UnitOfWork, number: object) -> Reply:
    task = stewardship.unpark(task=selectors.get_task(space=member.space, number=number), actor=member)
    return Reply(200, task_body(task))


# --- Questions, messages and the inbox (SPEC §21) ---------------------------------------------


def question_body(question: Question) -> dict:
    return QuestionSerializer(question).data


@command("ask_question", Role.READER, input=AskSerializer)  # a holder, the creator or a steward: the service checks
def ask_question(member: Member, *, unit: UnitOfWork, number: object, wait: float = 0, **data: Any) -> Reply:
    """A question on task ``number``; with ``wait``, the answer if it comes in time (SPEC §15's
    means: the question commits first, then the request waits holding nothing)."""
    asked = unit.carried("question")
    if asked is None:
        question = questions.ask(task=selectors.get_task(space=member.space, number=number), asker=member, **data)
        if wait:
            unit.carry("question", question.pk)  # with the question: a later attempt reads it
            unit.commit_phase()  # asked, whatever the wait brings
    else:
        question = Question.objects.select_related("task").get(space_id=member.space_id, pk=asked)
    seen = waiting.REGISTRY.generation(member.space_id)
    if wait and question.state == QuestionState.OPEN:
        question.refresh_from_db()
        if question.state == QuestionState.OPEN and unit.wait_for(
                waiting.waiter_for_answer(space=member.space, question_id=question.pk, seen=seen), wait):
            return Reply(201, {})  # dropped: the runner waits and runs this again
    return Reply(201, question_body(question))


def question_of(member: Member, number: object, question: object) -> Question:
    return questions.get_question(task=selectors.get_task(space=member.space, number=number), question_id=question)


@command("answer_question", Role.READER, input=AnswerSerializer)  # an addressee or a steward: the service checks
def answer_question(member: Member, *, unit: UnitOfWork, number: object, question: object, body: str = "",
                    option: str | None = None) -> Reply:
    answered = questions.answer(question=question_of(member, number, question), actor=member, body=body,
                                option=option)
    return Reply(200, question_body(answered))


def _withdraw_question(member: Member, *, unit: UnitOfWork, number: object, question: object) -> Reply:
    return Reply(200, question_body(questions.withdraw(question=question_of(member, number, question), actor=member)))


def _list_questions(member: Member, *, unit: None, number: object) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    messages.task_thread(task, member)  # the same readers as the thread
    found = Question.objects.filter(space_id=task.space_id, task=task).order_by("pk")
    for question in found:
        question.task = task
    return Reply(200, {"results": [question_body(q) for q in found]})


# REST's and the board's (SPEC §21 gives MCP ask, answer, message and inbox; a tool list is paid
# for on every connection): the asker (or a steward) withdraws; a thread's members list.
WITHDRAW_QUESTION = Command("withdraw_question", Role.READER, _withdraw_question)
LIST_QUESTIONS = Command("list_questions", Role.READER, _list_questions, mutates=False)


@command("post_task_message", Role.READER, input=MessageCreateSerializer)
def post_task_message(member: Member, *, unit: UnitOfWork, number: object, body: str, to: list[int]) -> Reply:
    task = selectors.get_task(space=member.space, number=number)
    return Reply(201, MessageSerializer(messages.post_to_task(task=task, sender=member, body=body, to=to)).data)


@command("post_direct_message", Role.READER, input=DirectMessageSerializer)
def post_direct_message(member: Member, *, unit: UnitOfWork, body: str, to: list[int]) -> Reply:
    message = messages.post_direct(space=member.space, sender=member, body=body, to=to)
    return Reply(201, MessageSerializer(message).data)


def _list_task_messages(member: Member, *, unit: None, number: object) -> Reply:
    thread = messages.task_thread(selectors.get_task(space=member.space, number=number), member)
    return Reply(200, {"results": MessageSerializer(thread, many=True).data})


LIST_TASK_MESSAGES = Command("list_task_messages", Role.READER, _list_task_messages, mutates=False)


@command("read_inbox", Role.READER, mutates=False)
def read_inbox(member: Member, *, unit: None) -> Reply:
    """What waits on the caller (SPEC §21), each kind oldest first, at most ``inbox.LIMIT`` of each."""
    return Reply(200, {
        "questions": [question_body(q) for q in inbox.open_questions(member)[:inbox.LIMIT]],
        "approvals": [task_body(t) for t in inbox.approvals(member)[:inbox.LIMIT]],
        "checks": [{"task": a.task.number, "attempt": a.number, "member": a.member_id, "post": a.post_id}
                   for a in inbox.checks(member)[:inbox.LIMIT]],
        "messages": MessageSerializer(inbox.unread_messages(member), many=True).data,
    })


def _mark_inbox_read(member: Member, *, unit: UnitOfWork, ids: list[int] | None = None) -> Reply:
    return Reply(200, {"marked_read": inbox.mark_read(member=member, ids=ids)})


# The caller's messages marked read (``ids``: message ids), as notifications are.
MARK_INBOX_READ = Command("mark_inbox_read", Role.READER, _mark_inbox_read, input=MarkReadSerializer)


# --- Notifications (SPEC §6.4) -----------------------------------------------------------------


def _mark_read(member: Member, *, unit: UnitOfWork, ids: list[int] | None = None) -> Reply:
    return Reply(200, {"marked_read": lifecycle.mark_read(member=member, ids=ids)})


# A member's own notifications read: REST's (MCP's notifications tool only reads them).
MARK_READ = Command("mark_notifications_read", Role.READER, _mark_read, input=MarkReadSerializer)


# --- Reads ------------------------------------------------------------------------------------


# --- Binding and similar tasks (SPEC §4.3, §16): reads, nothing written ----------------------


def similar_body(member: Member, title: str) -> list[dict]:
    return similarity.as_answer(similarity.similar_to(member.space, title))


@command("bind_title", Role.READER, input=BindSerializer, mutates=False)
def bind_title(member: Member, *, unit: None, **data: Any) -> Reply:
    """How a title binds to the catalog, and the live tasks it looks like."""
    decision = allocation.bind_title(space=member.space, **data).as_dict()
    return Reply(200, {**decision, "similar": similar_body(member, data["title"])})


@command("similar_tasks", Role.READER, input=SimilarSerializer, mutates=False)
def similar_tasks(member: Member, *, unit: None, title: str) -> Reply:
    return Reply(200, {"similar": similar_body(member, title)})


@command("likely_duplicates", Role.READER, mutates=False)
def likely_duplicates(member: Member, *, unit: None) -> Reply:
    """Pairs of live tasks likely to be the same work, best first (SPEC §16's radar)."""
    return Reply(200, {"pairs": [similarity.pair_answer(p) for p in similarity.likely_duplicates(member.space)]})


@command("mark_not_duplicate", Role.STEWARD, input=BlockerSerializer)
def mark_not_duplicate(member: Member, *, unit: UnitOfWork, number: object, task: int) -> Reply:
    """Task ``number`` and task ``task`` are distinct work: the pair is not shown again."""
    first = selectors.get_task(space=member.space, number=number)
    other = selectors.get_task(space=member.space, number=task)
    similarity.mark_distinct(task=first, other=other, actor=member)
    return Reply(200, {"tasks": sorted([first.number, other.number]), "distinct": True})


@command("get_task", Role.READER, mutates=False)
def get_task(member: Member, *, unit: None, number: object) -> Reply:
    return Reply(200, TaskDetailSerializer(selectors.task_with_work(space=member.space, number=number)).data)


# --- Holds (SPEC §5.2): allocation keeps the hold, tasks the history it writes. ---------------


def hold_body(hold) -> dict:
    return {"work_item_id": hold.work_item_id, "reason": hold.reason, "held_by": hold.held_by_id,
            "created_at": iso(hold.created_at)}


def hold_of_task(task: Task) -> dict:
    """``hold_slot``'s input holding the slot task ``task`` is bound to (the admin's and the
    board's *Hold slot*); a task bound to no slot has none to hold."""
    if not task.work_item_id:
        raise allocation.errors.InvalidWorkItemId(f"Task {task.number} is not bound to a catalog slot.")
    return {"work_item_id": task.work_item_id, "reason": f"held from task {task.number}"}


@command("hold_slot", Role.STEWARD, input=HoldSerializer)
def hold_slot(member: Member, *, unit: UnitOfWork, work_item_id: str, reason: str) -> Reply:
    hold = stewardship.hold_slot(space=member.space, actor=member, work_item_id=work_item_id, reason=reason)
    return Reply(201, hold_body(hold))


@command("release_slot", Role.STEWARD)
def release_slot(member: Member, *, unit: UnitOfWork, work_item_id: object) -> Reply:
    """End the hold on a catalog slot; new tasks may take it again. REST answers ``204``."""
    raw = str(work_item_id)
    slot = normalize_work_item_id(raw)
    if slot is None or not allocation.release_slot(space=member.space, work_item_id=slot):
        raise NotFound(f"Slot {(slot or raw)[:40]} is not held.")
    return Reply(200, {"work_item_id": slot, "released": True})


# --- Routines (SPEC §22) ---------------------------------------------------------------------
# A steward makes, changes and deletes routines; any member reads them. ``sweep`` fires the due
# ones: each period is a unit of work of its own that runs the create command as the routine's
# steward and writes the period's run in the same transaction (tasks.routines).


def routine_body(routine: Routine) -> dict:
    routine.last_task = routines.last_tasks([routine]).get(routine.pk)
    return RoutineSerializer(routine).data


@command("create_routine", Role.STEWARD, input=RoutineCreateSerializer)
def create_routine(member: Member, *, unit: UnitOfWork, timezone: str, **data: Any) -> Reply:
    routine = routines.create_routine(space=member.space, actor=member, time_zone=timezone, **data)
    return Reply(201, routine_body(routine))


@command("update_routine", Role.STEWARD, input=RoutineUpdateSerializer)
def update_routine(member: Member, *, unit: UnitOfWork, routine: object, **changes: Any) -> Reply:
    if "timezone" in changes:
        changes["time_zone"] = changes.pop("timezone")
    return Reply(200, routine_body(routines.update_routine(space=member.space, routine_id=routine, **changes)))


@command("delete_routine", Role.STEWARD)
def delete_routine(member: Member, *, unit: UnitOfWork, routine: object) -> Reply:
    """Delete a routine (the tasks it made stay). REST answers ``204``."""
    return Reply(200, {"id": routines.delete_routine(space=member.space, routine_id=routine), "deleted": True})


def _list_routines(member: Member, *, unit: None) -> Reply:
    listed = list(Routine.objects.filter(space=member.space).order_by("pk")[:500])
    last = routines.last_tasks(listed)
    for routine in listed:
        routine.last_task = last.get(routine.pk)
    return Reply(200, {"results": RoutineSerializer(listed, many=True).data})


LIST_ROUTINES = Command("list_routines", Role.READER, _list_routines, mutates=False)


def _get_routine(member: Member, *, unit: None, routine: object) -> Reply:
    return Reply(200, routine_body(routines.get_routine(space=member.space, routine_id=routine)))


GET_ROUTINE = Command("get_routine", Role.READER, _get_routine, mutates=False)


def fire_due_routines(*, now: datetime | None = None, dry_run: bool = False) -> int:
    """Fire every routine whose next run has come; how many periods made a task. Safe from any
    number of processes at once: each passes by a routine another is firing, and a period is one
    ``RoutineRun`` (unique), written with its task."""
    now = now or django_timezone.now()
    if dry_run:
        return routines.due(now).count()
    made = 0
    for routine_id in list(routines.due(now).values_list("pk", flat=True)[:1000]):
        with routines.firing(routine_id) as mine:
            found = routines.due_period(routine_id, now) if mine else None
            if found is None:
                continue
            routine, period, to_make = found
            try:
                made += in_unit(fire_period, routine=routine, period=period, make=to_make)
            except IntegrityError:  # routine_run_once_a_period: another sweep made it; this unit is undone
                pass
            routines.advance(routine, period, now)
    return made


def fire_period(*, unit: UnitOfWork, routine: Routine, period: datetime, make: bool) -> int:
    """One period of a routine: its task by the create command, or why not, with its run."""
    actor = routine.created_by
    if not make:
        routines.skipped(routine, period, "missed: nothing swept when its period began")
        return 0
    if actor is None:
        routines.skipped(routine, period, "its steward is no longer a member")
        return 0
    try:
        reply = create_task(actor, unit=unit, data=routines.task_input(routine, period))
    except DomainError as refusal:
        routines.skipped(routine, period, refusal.detail, winner=refusal.extra.get("winner"))
        return 0
    routines.fired(routine, period, Task.objects.get(space_id=routine.space_id, number=reply.body["id"]))
    return 1
