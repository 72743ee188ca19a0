"""Tasks, their history and review notes (SPEC §4, §5, §8)."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from common.space_keys import SpaceForeignKey
from tasks.search import task_vector

from allocation.models import (
    TASK_DELIVERY_MODE_CHOICES,
    TASK_DELIVERY_MODES,
    DeliveryMode,
)


class TaskStatus(models.TextChoices):
    PROPOSED = "proposed"  # SPEC §21: waits for an approval; occupies its key, not ready
    WAITING = "waiting"  # SPEC §21: a question on it is open; occupies its key, not ready
    PARKED = "parked"  # SPEC §22: set back max_cycles times; occupies its key, not ready, until unparked
    OPEN = "open"
    CLAIMED = "claimed"
    ASSIGNED = "assigned"
    IN_REVIEW = "in_review"
    DONE = "done"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    SUPERSEDED = "superseded"


# SPEC §4.4: these statuses occupy the task's conflict key; the others free it.
LIVE_STATUSES = (TaskStatus.PROPOSED, TaskStatus.WAITING, TaskStatus.PARKED, TaskStatus.OPEN, TaskStatus.CLAIMED, TaskStatus.ASSIGNED, TaskStatus.IN_REVIEW)
TERMINAL_STATUSES = (TaskStatus.DONE, TaskStatus.REJECTED, TaskStatus.WITHDRAWN, TaskStatus.SUPERSEDED)

# SPEC §13: 0 is the most urgent.
PRIORITIES = range(0, 5)
DEFAULT_PRIORITY = 2
MAX_LABELS = 10
LABEL_PATTERN = r"^[a-z0-9._:-]{1,40}$"
LABEL_INPUT_PATTERN = r"^[a-zA-Z0-9._:-]{1,40}$"  # as sent: a label is lower-cased when it is read
MAX_BLOCKERS = 50


class TaskManager(models.Manager):
    def get_queryset(self) -> models.QuerySet:
        # The search vector is for PostgreSQL's eyes (`q`): never fetched with a task.
        return super().get_queryset().defer("search")


class Task(models.Model):
    # No index of its own: task_unique_number_per_space leads with space. Every index
    # here is written again when a claim or settlement changes the status.
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="tasks", db_index=False)
    number = models.PositiveBigIntegerField()
    title = models.CharField(max_length=500)
    body = models.TextField(blank=True)
    delivery_mode = models.CharField(max_length=32, choices=TASK_DELIVERY_MODE_CHOICES, default=DeliveryMode.RESULT)
    work_item_id = models.CharField(max_length=32, null=True, blank=True)
    conflict_kind = models.CharField(max_length=32, default="create_task")
    conflict_target = models.TextField()
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.OPEN)
    cycle = models.PositiveIntegerField(default=1)
    creator = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # SPEC §21: who besides the stewards may approve or refuse the task while it is proposed.
    approver = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    received_seq = models.BigIntegerField()
    payload_sha256 = models.CharField(max_length=64)
    superseded_by = SpaceForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Who closed the task (superseded, withdrawn, rejected), when and why; the history has the full story.
    closed_by = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)
    close_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    priority = models.PositiveSmallIntegerField(default=DEFAULT_PRIORITY)
    # SPEC §19: the most this task may spend (null: no budget); at it, next hands it out no more.
    budget_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    labels = ArrayField(models.CharField(max_length=40), size=MAX_LABELS, default=list, blank=True)
    # Kept by PostgreSQL from the title, the body and the space, for `q` (SPEC §13, tasks.search).
    search = models.GeneratedField(
        expression=task_vector(),
        output_field=SearchVectorField(), db_persist=True,
    )
    # The title's terms for similar tasks (SPEC §16, tasks.similarity.terms), set at create.
    title_terms = ArrayField(models.TextField(), default=list, blank=True, editable=False)
    # SPEC §22: rejected cycles, lapsed and given-back claims since it was created or unparked.
    setbacks = models.PositiveSmallIntegerField(default=0, db_default=0)
    # When it last became ready (SPEC §22 priority aging): set by the database on every path that
    # opens a task (tasks.sql.ready_since), and when its last blocker goes (tasks.graph). Database
    # defaults too: a process still running the code before them inserts tasks without either.
    ready_since = models.DateTimeField(default=timezone.now, db_default=Now())

    objects = TaskManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "number"], name="task_unique_number_per_space"),
            models.CheckConstraint(condition=Q(priority__lte=max(PRIORITIES)), name="task_priority_valid"),
            models.CheckConstraint(condition=Q(status__in=TaskStatus.values), name="task_status_valid"),
            models.CheckConstraint(
                condition=Q(delivery_mode__in=[m.value for m in TASK_DELIVERY_MODES]), name="task_delivery_mode_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status="superseded") | Q(superseded_by__isnull=False), name="task_superseded_names_survivor"
            ),
        ]
        indexes = [
            # `next` reads the most urgent open task of a space: keep that index small however many
            # tasks have finished (a partial index on open tasks only), in the order `next` hands out.
            models.Index(fields=["space", "priority", "number"], name="task_open_by_priority",
                         condition=Q(status="open")),
            # SPEC §22 aging: each priority's longest-open ready task (tasks.filters.aged_head).
            models.Index(fields=["space", "priority", "ready_since"], name="task_open_by_age",
                         condition=Q(status="open")),
            GinIndex(fields=["search"], name="task_search"),
            # The board's "done in the last 7 days": a done task is never updated again.
            models.Index(fields=["space", "updated_at"], name="task_done_by_time", condition=Q(status="done")),
            models.Index(fields=["space", "conflict_kind", "conflict_target", "delivery_mode"], name="task_conflict_key"),
            models.Index(fields=["space", "status", "number"], name="task_space_status_number"),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.title}"

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    def conflict_key_dict(self) -> dict[str, str]:
        return {"kind": self.conflict_kind, "target": self.conflict_target, "delivery_mode": self.delivery_mode}


class Dependency(models.Model):
    """``task`` waits on ``blocker`` (SPEC §13). Only live blockers have a row: a blocker that
    ends takes its rows with it (a superseded one hands them to its survivor), so a task is
    blocked exactly when a row names it."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    blocker = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "task", "blocker"], name="dependency_unique_per_space"),
            models.CheckConstraint(condition=~Q(task=models.F("blocker")), name="dependency_not_self"),
        ]
        indexes = [models.Index(fields=["space", "blocker", "task"], name="dependency_by_blocker")]

    def __str__(self) -> str:
        return f"#{self.task.number} waits on #{self.blocker.number}"


# Every live title has this term in the similar-tasks index (no real term is empty): its rows
# count the space's live titles (tasks.similarity).
LIVE_TERM = ""


class TitleTerm(models.Model):
    """The similar-tasks index (SPEC §16): one row per term of each live task's title. The
    create statement writes a task's rows; the transaction that ends it deletes them
    (``tasks.similarity.forget``). Each row is its own task's, so no two writers contend, and
    a term's weight is counted from these rows (up to ``similarity.COUNT_CAP``)."""

    pk = models.CompositePrimaryKey("space", "term", "task")
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    term = models.TextField()
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)


class DistinctPair(models.Model):
    """Two tasks a steward said are not duplicates (SPEC §16): the pair is not shown again."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    first = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    second = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    marked_by = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "first", "second"], name="distinctpair_once"),
            models.CheckConstraint(condition=Q(first__lt=models.F("second")), name="distinctpair_in_order"),
        ]

    def __str__(self) -> str:
        return f"#{self.first.number} and #{self.second.number} are distinct"


class SpaceLabel(models.Model):
    """Every label a task of the space has carried (the admin's and the board's label filters):
    written by the statements that give a task its labels, never removed, so a filter reads this
    short list instead of unnesting every task's labels."""

    pk = models.CompositePrimaryKey("space", "label")
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    label = models.CharField(max_length=40)


class SlotDoneCount(models.Model):
    """How many tasks bound to a catalog slot are done (SPEC §14's per-slot counts), kept by the
    transaction that makes each one done: done is final, and counting them at read time would
    grow with the space."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    work_item_id = models.CharField(max_length=32)
    done = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "work_item_id"], name="slotdonecount_one_per_slot"),
        ]


class EventKind(models.TextChoices):
    CREATED = "created"
    CLAIMED = "claimed"
    JOINED = "joined"
    GIVEN_BACK = "given_back"
    LAPSED = "claim_lapsed"  # SPEC §15 (earlier releases wrote "lapsed"; migrated)
    ASSIGNED = "assigned"
    ATTEMPT = "attempt"
    CHECK = "check"
    ACCEPTED = "accepted"
    REOPENED = "reopened"
    SUPERSEDED = "superseded"
    WITHDRAWN = "withdrawn"
    REJECTED = "rejected"
    HELD = "held"
    NOTE = "note"
    PRIORITY_CHANGED = "priority_changed"
    LABELS_CHANGED = "labels_changed"
    BLOCKER_ADDED = "blocker_added"
    BLOCKER_REMOVED = "blocker_removed"
    UNBLOCKED = "unblocked"
    BUDGET_CHANGED = "budget_changed"  # SPEC §19
    APPROVED = "approved"  # SPEC §21: proposed → open
    REFUSED = "refused"  # SPEC §21: proposed → rejected
    ASKED = "asked"  # SPEC §21: a question opened on it (→ waiting)
    ANSWERED = "answered"
    QUESTION_EXPIRED = "question_expired"
    UNASKED = "unasked"  # the asker withdrew its question
    PARKED = "parked"  # SPEC §22: set back max_cycles times
    UNPARKED = "unparked"


class TaskEvent(models.Model):
    """One state change of a task, attributed (SPEC §8)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+",
                              db_index=False)  # taskevent_space_id
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="events", db_index=False)  # taskevent_task_id
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    actor = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "id"], name="taskevent_task_id"),
            # The board's version: the space's latest event.
            models.Index(fields=["space", "id"], name="taskevent_space_id"),
        ]

    def __str__(self) -> str:
        return self.get_kind_display().lower()  # its time is shown beside it, once


class Note(models.Model):
    """A review note on a task; its conflict key makes a repeat a 409 (SPEC §4.8)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="notes")
    author = SpaceForeignKey("spaces.Member", on_delete=models.PROTECT, related_name="+")
    criterion = models.IntegerField(null=True, blank=True)
    body = models.TextField()
    target = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "target"], name="note_unique_target_per_space")]

    def __str__(self) -> str:
        return f"note by {self.author.name} on #{self.task.number}"


class ClaimOrigin(models.TextChoices):
    NEXT = "next"
    JOIN = "join"
    ASSIGNED = "assigned"


class ClaimEnd(models.TextChoices):
    ATTEMPT = "attempt"
    GAVE_BACK = "gave_back"
    LAPSED = "lapsed"
    SUPERSEDED = "superseded"
    CLOSED = "closed"  # the task was withdrawn or rejected by a steward


# A claim kept while its holder's question is open (SPEC §21) has this expiry: nothing lapses it,
# and a heartbeat, which never moves an expiry back, leaves it there (tasks.questions).
PAUSED_UNTIL = datetime(9999, 12, 31, tzinfo=dt_timezone.utc)


class Claim(models.Model):
    """A member holding a task for a while (SPEC §6.1)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="claims", db_index=False)  # claim_task_cycle
    member = SpaceForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="claims")
    cycle = models.PositiveIntegerField()
    origin = models.CharField(max_length=16, choices=ClaimOrigin.choices)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()  # moved by heartbeats (SPEC §15)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=16, choices=ClaimEnd.choices, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["space", "task", "member"], condition=Q(ended_at__isnull=True), name="claim_one_live_per_member_task"
            ),
        ]
        indexes = [
            models.Index(fields=["expires_at"], name="claim_live_expiry", condition=Q(ended_at__isnull=True)),
            # A space's claims past their expiry (Claim.due), which next asks about each time:
            # found by range, however many live claims the space has.
            models.Index(fields=["space", "expires_at"], name="claim_live_space_expiry",
                         condition=Q(ended_at__isnull=True)),
            models.Index(fields=["space", "member"], name="claim_live_by_space", condition=Q(ended_at__isnull=True)),
            models.Index(fields=["task", "cycle"], name="claim_task_cycle"),
        ]

    def __str__(self) -> str:
        """What the admin names it by: "claim by ana, lapses in 3 h" (or how it ended)."""
        holder = f"claim by {self.member.name}"
        if self.ended_at is not None:
            return f"{holder}, {self.get_end_reason_display().lower()} {self.ended_at:%Y-%m-%d %H:%M} UTC"
        if self.expires_at == PAUSED_UNTIL:
            return f"{holder}, paused while its question is open"
        left = (self.expires_at - timezone.now()).total_seconds()
        if left <= 0:
            return f"{holder}, lapsed"
        for suffix, size in (("h", 3600), ("min", 60)):
            if left >= size:
                return f"{holder}, lapses in {int(left // size)} {suffix}"
        return f"{holder}, lapses in {int(left)} s"

    @staticmethod
    def live(now) -> Q:
        """Live at ``now`` (SPEC §15): not ended, and not past its expiry. A claim past its expiry
        counts as ended for every rule from that moment, whether or not its lapse was recorded
        yet (``tasks.lapses``)."""
        return Q(ended_at__isnull=True, expires_at__gt=now)

    @staticmethod
    def due(now) -> Q:
        """Past its expiry with its lapse not yet recorded."""
        return Q(ended_at__isnull=True, expires_at__lte=now)

    @property
    def is_live(self) -> bool:
        return self.ended_at is None and self.expires_at > timezone.now()

    @property
    def shown_end(self) -> tuple[datetime | None, str]:
        """When and why it ended, as reads show it: a claim past its expiry ended then, as a
        lapse (its record, when a change writes it, says the same)."""
        if self.ended_at is None and self.expires_at <= timezone.now():
            return self.expires_at, ClaimEnd.LAPSED
        return self.ended_at, self.end_reason


class AttemptState(models.TextChoices):
    WAITING = "waiting"
    ACCEPTED = "accepted"
    PASSED = "passed"  # another attempt of the cycle was accepted first
    REJECTED = "rejected"


class Attempt(models.Model):
    """A numbered delivery on a task: a member cites a post as the result (SPEC §6.2)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    cycle = models.PositiveIntegerField()
    member = SpaceForeignKey("spaces.Member", on_delete=models.PROTECT, related_name="attempts")
    post = SpaceForeignKey("spaces.Post", on_delete=models.PROTECT, related_name="attempts")
    state = models.CharField(max_length=16, choices=AttemptState.choices, default=AttemptState.WAITING)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(fields=["space", "task", "number"], name="attempt_unique_number_per_task"),
            models.UniqueConstraint(fields=["space", "task", "cycle", "member"], name="attempt_one_per_member_cycle"),
            models.CheckConstraint(condition=Q(state__in=AttemptState.values), name="attempt_state_valid"),
        ]
        indexes = [
            models.Index(fields=["space", "task"], name="attempt_waiting", condition=Q(state="waiting")),
            # SPEC §19: the outcomes accepted in a period (the cost per accepted outcome), however many
            # attempts the space has.
            models.Index(fields=["space", "decided_at"], name="attempt_accepted_by_time", condition=Q(state="accepted")),
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} by {self.member.name} ({self.state})"


class Verdict(models.TextChoices):
    CONFIRM = "confirm"
    REJECT = "reject"


class Check(models.Model):
    """A member's confirm or reject of one attempt, counted for the attempt's cycle (SPEC §6.3)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="checks")
    attempt = SpaceForeignKey(Attempt, on_delete=models.CASCADE, related_name="checks")
    member = SpaceForeignKey("spaces.Member", on_delete=models.PROTECT, related_name="checks")
    cycle = models.PositiveIntegerField()
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["space", "attempt", "member"], name="check_one_per_member_attempt"),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} by {self.member.name}"


class NotificationKind(models.TextChoices):
    TASK_ATTEMPT = "task_attempt"
    ATTEMPT_ACCEPTED = "attempt_accepted"
    ATTEMPT_REJECTED = "attempt_rejected"
    TASK_REOPENED = "task_reopened"
    TASK_SUPERSEDED = "task_superseded"
    CLAIM_LAPSED = "claim_lapsed"
    TASK_UNBLOCKED = "task_unblocked"
    WEBHOOK_DISABLED = "webhook_disabled"
    APPROVAL_REQUESTED = "approval_requested"  # SPEC §21: to the approver, or the stewards
    APPROVAL_GIVEN = "approval_given"  # to the creator
    APPROVAL_REFUSED = "approval_refused"  # to the creator
    QUESTION_ASKED = "question_asked"  # to its addressees
    QUESTION_ANSWERED = "question_answered"  # to the asker
    QUESTION_EXPIRED = "question_expired"  # to the asker
    MESSAGE = "message"  # SPEC §21: to a message's recipients; unread, it waits in their inbox
    TASK_PARKED = "task_parked"  # SPEC §22: to the stewards


class Notification(models.Model):
    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+")
    member = SpaceForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    task = SpaceForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["member", "id"], name="notification_member_id")]


class WaitSlot(models.Model):
    """One of a key's waited nexts waiting right now (SPEC §15 Capacity: at most the space's
    ``max_waits_per_key`` at once, across every server process). Taken when a wait begins,
    given back when it ends; a process that died leaves its slots until ``held_until`` (the
    wait's own end and a margin), when the next wait of the key takes them over."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    api_key = SpaceForeignKey("spaces.ApiKey", on_delete=models.CASCADE, related_name="+", db_index=False)
    slot = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=32)  # the wait's own: only it gives the slot back
    held_until = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "api_key", "slot"], name="waitslot_one_per_key_slot")]


class QuestionState(models.TextChoices):
    OPEN = "open"
    ANSWERED = "answered"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"


class QuestionTo(models.TextChoices):
    CREATOR = "creator"
    STEWARDS = "stewards"
    MEMBER = "member"


class Question(models.Model):
    """A question on a task (SPEC §21): while one is open the task is ``waiting``. The first
    answer closes it (``state`` moves once, from open, under the question's row lock); a member
    has at most one open question a task (``question_one_open_per_asker``)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    task = SpaceForeignKey(Task, on_delete=models.CASCADE, related_name="questions", db_index=False)
    asker = SpaceForeignKey("spaces.Member", on_delete=models.PROTECT, related_name="+")
    to = models.CharField(max_length=16, choices=QuestionTo.choices)
    # The member it is addressed to (the creator's at asking time, or the one named); null: the stewards.
    addressee = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    body = models.TextField()
    options = ArrayField(models.CharField(max_length=200), size=20, default=list, blank=True)
    # The asker's claim kept with its lease paused while the question is open (null: none kept).
    claim = SpaceForeignKey(Claim, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    state = models.CharField(max_length=16, choices=QuestionState.choices, default=QuestionState.OPEN)
    expires_at = models.DateTimeField(null=True, blank=True)
    answer = models.TextField(blank=True)
    option = models.CharField(max_length=200, blank=True)
    answered_by = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "task", "asker"], condition=Q(state="open"),
                                    name="question_one_open_per_asker"),
            models.CheckConstraint(condition=Q(state__in=QuestionState.values), name="question_state_valid"),
        ]
        indexes = [
            models.Index(fields=["space", "task", "id"], name="question_by_task"),
            # The sweep's questions past their deadline, and an inbox's open questions.
            models.Index(fields=["expires_at"], name="question_open_expiry", condition=Q(state="open")),
            models.Index(fields=["space", "addressee"], name="question_open_by_addressee", condition=Q(state="open")),
        ]

    def __str__(self) -> str:
        return f"question {self.pk} on #{self.task.number} ({self.state})"


class Message(models.Model):
    """A message (SPEC §21): on a task's thread (``task``) or direct between members. The same
    sender, thread and body within 24 hours is one message (taken under an advisory lock on
    the three, ``tasks.messages``)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    task = SpaceForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="messages",
                           db_index=False)
    sender = SpaceForeignKey("spaces.Member", on_delete=models.PROTECT, related_name="+")
    thread = models.CharField(max_length=200)  # "task:N", or "direct:" and the members' ids in order
    body = models.TextField()
    body_sha256 = models.CharField(max_length=64)
    recipients = ArrayField(models.BigIntegerField(), default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["space", "thread", "id"], name="message_by_thread"),
            models.Index(fields=["space", "sender", "thread", "body_sha256", "created_at"], name="message_repeat"),
        ]

    def __str__(self) -> str:
        return f"message {self.pk} from {self.sender.name}"



class RoutineOverlap(models.TextChoices):
    SKIP = "skip"  # the routine's tasks share one conflict key: none is made while the last is live
    ALLOW = "allow"  # each period's task has a key of its own


class RoutineCatchUp(models.TextChoices):
    LATEST = "latest"  # after downtime, one task for the latest missed period
    NONE = "none"  # missed periods make nothing


class Routine(models.Model):
    """Work made each period of a cron schedule (SPEC §22): ``sweep`` creates each period's task
    through the create command, once (``RoutineRun``)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    title = models.CharField(max_length=500)
    body = models.TextField(blank=True)
    schedule = models.CharField(max_length=120)  # cron, 5 fields
    time_zone = models.CharField(max_length=64, default="UTC")  # IANA (the API calls it timezone)
    work_item_id = models.CharField(max_length=32, null=True, blank=True)
    priority = models.PositiveSmallIntegerField(default=DEFAULT_PRIORITY)
    labels = ArrayField(models.CharField(max_length=40), size=MAX_LABELS, default=list, blank=True)
    overlap = models.CharField(max_length=8, choices=RoutineOverlap.choices, default=RoutineOverlap.SKIP)
    catch_up = models.CharField(max_length=8, choices=RoutineCatchUp.choices, default=RoutineCatchUp.LATEST)
    enabled = models.BooleanField(default=True)
    # Whose create the period's task is (its creator): the steward who made the routine.
    created_by = SpaceForeignKey("spaces.Member", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The start of the next period to fire (null while disabled), and of the last one fired or skipped.
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_period = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(priority__lte=max(PRIORITIES)), name="routine_priority_valid"),
            models.CheckConstraint(condition=Q(overlap__in=RoutineOverlap.values), name="routine_overlap_valid"),
            models.CheckConstraint(condition=Q(catch_up__in=RoutineCatchUp.values), name="routine_catch_up_valid"),
        ]
        indexes = [
            # sweep's question: which routines are due, across every space.
            models.Index(fields=["next_run_at"], name="routine_due", condition=Q(enabled=True)),
            models.Index(fields=["space", "id"], name="routine_by_space"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.schedule} {self.time_zone})"


class RoutineRun(models.Model):
    """One period of a routine, once (SPEC §22): the idempotency tuple of routine and period start
    is its unique constraint, so any number of sweeps on any number of hosts fire a period once.
    ``task`` is the period's task; none when the period was skipped (``reason``)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    routine = SpaceForeignKey(Routine, on_delete=models.CASCADE, related_name="runs", db_index=False)
    period = models.DateTimeField()
    task = SpaceForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "routine", "period"], name="routine_run_once_a_period")]

    def __str__(self) -> str:
        return f"{self.routine.title} for {self.period:%Y-%m-%d %H:%M} UTC"
