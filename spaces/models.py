"""Spaces, their members and keys, join links, the charter catalog and posts."""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.space_keys import SpaceForeignKey


# What PATCH /v1/spaces/{slug} and the admin's space form change (SPEC §3.1); the space's
# answer shows them in this order.
SPACE_SETTINGS = (
    "name",
    "task_claim_hours",
    "claim_lease_seconds",
    "confirmations_required",
    "allocation_window_seconds",
    "max_claims_per_task",
    "max_attempts_per_cycle",
    "requests_per_minute",
    "similar_threshold",
    "max_queued_exports",
    "max_waits_per_key",
    "event_retention_days",
    "budget_usd",
    "approval_required",
    "checks_by",
    "max_claims_per_member",
    "label_caps",
    "priority_aging_minutes",
    "max_cycles",
)


class ApprovalRequired(models.TextChoices):
    """SPEC §21: which creates wait for an approval (``proposed``) before anyone may claim them."""

    NONE = "none"
    UNCATALOGUED = "uncatalogued"  # tasks that bound no catalog slot
    AGENTS = "agents"  # tasks an agent member created
    ALL = "all"


class ChecksBy(models.TextChoices):
    """SPEC §21: whose confirmation accepts an attempt."""

    ANY = "any"
    PEOPLE = "people"


class MemberKind(models.TextChoices):
    AGENT = "agent"
    PERSON = "person"


class Space(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    # SPEC §6 settings; ranges are check constraints below.
    task_claim_hours = models.PositiveSmallIntegerField(default=4)
    # SPEC §15: a claim's lease, renewed by heartbeats; None leaves claims at task_claim_hours.
    claim_lease_seconds = models.PositiveIntegerField(null=True, blank=True)
    confirmations_required = models.PositiveSmallIntegerField(default=1)
    allocation_window_seconds = models.PositiveIntegerField(default=15)
    max_claims_per_task = models.PositiveSmallIntegerField(default=3)
    max_attempts_per_cycle = models.PositiveSmallIntegerField(default=5)
    # SPEC §3 Abuse, §7.3: exports of the space waiting or running at once; past it, 429.
    max_queued_exports = models.PositiveSmallIntegerField(default=3)
    # SPEC §16: how alike two titles must be (0.05-1) to be shown as similar tasks; the default
    # is tuned in tasks.similarity.
    similar_threshold = models.FloatField(default=0.45)
    # SPEC §3 Abuse: each key's requests per minute; None (the default) caps nothing.
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # SPEC §15 Capacity: waited nexts one key may have waiting at once; past it, 429.
    max_waits_per_key = models.PositiveSmallIntegerField(default=8)
    # SPEC §17: days the space's feed keeps its events (sweep purges older ones).
    event_retention_days = models.PositiveSmallIntegerField(default=30)
    # SPEC §19: the most the space may spend in a calendar month (UTC); null: no budget.
    budget_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    # SPEC §21: people in the loop.
    approval_required = models.CharField(max_length=16, choices=ApprovalRequired.choices, default=ApprovalRequired.NONE)
    checks_by = models.CharField(max_length=8, choices=ChecksBy.choices, default=ChecksBy.ANY)
    # SPEC §22: fleet controls. The caps are kept by the database (tasks.sql.claim_caps).
    max_claims_per_member = models.PositiveSmallIntegerField(null=True, blank=True)
    label_caps = models.JSONField(default=dict, blank=True)  # {"label": most live claims on its tasks}
    priority_aging_minutes = models.PositiveIntegerField(null=True, blank=True)
    max_cycles = models.PositiveSmallIntegerField(null=True, blank=True)  # setbacks before a task is parked
    # Bumped in the transaction of every catalog change: server processes compare it to
    # decide whether their in-memory bind index is still current.
    catalog_version = models.PositiveBigIntegerField(default=0)
    # Last task number handed out; incremented under the row lock of the creating transaction.
    task_counter = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(task_claim_hours__gte=1, task_claim_hours__lte=24), name="space_claim_hours_1_24"
            ),
            models.CheckConstraint(
                condition=Q(claim_lease_seconds__isnull=True) | Q(claim_lease_seconds__gte=10, claim_lease_seconds__lte=3600),
                name="space_claim_lease_10_3600",
            ),
            models.CheckConstraint(condition=Q(max_queued_exports__gte=1, max_queued_exports__lte=20),
                                   name="space_max_queued_exports_1_20"),
            models.CheckConstraint(condition=Q(max_waits_per_key__gte=1, max_waits_per_key__lte=100),
                                   name="space_max_waits_per_key_1_100"),
            models.CheckConstraint(condition=Q(event_retention_days__gte=1, event_retention_days__lte=365),
                                   name="space_event_retention_days_1_365"),
            models.CheckConstraint(condition=Q(similar_threshold__gte=0.05, similar_threshold__lte=1),
                                   name="space_similar_threshold_5_100"),
            models.CheckConstraint(condition=Q(confirmations_required__gte=0), name="space_confirmations_gte_0"),
            models.CheckConstraint(
                condition=Q(allocation_window_seconds__gte=1, allocation_window_seconds__lte=3600),
                name="space_allocation_window_1_3600",
            ),
            models.CheckConstraint(
                condition=Q(max_claims_per_task__gte=1, max_claims_per_task__lte=3), name="space_max_claims_1_3"
            ),
            models.CheckConstraint(
                condition=Q(max_attempts_per_cycle__gte=1, max_attempts_per_cycle__lte=5),
                name="space_max_attempts_1_5",
            ),
            models.CheckConstraint(condition=Q(approval_required__in=ApprovalRequired.values),
                                   name="space_approval_required_valid"),
            models.CheckConstraint(condition=Q(checks_by__in=ChecksBy.values), name="space_checks_by_valid"),
            models.CheckConstraint(condition=Q(max_claims_per_member__isnull=True)
                                   | Q(max_claims_per_member__gte=1, max_claims_per_member__lte=1000),
                                   name="space_max_claims_per_member_1_1000"),
            models.CheckConstraint(condition=Q(priority_aging_minutes__isnull=True)
                                   | Q(priority_aging_minutes__gte=1, priority_aging_minutes__lte=43200),
                                   name="space_priority_aging_1_43200"),
            models.CheckConstraint(condition=Q(max_cycles__isnull=True) | Q(max_cycles__gte=1, max_cycles__lte=100),
                                   name="space_max_cycles_1_100"),
        ]

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    READER = "reader"
    WRITER = "writer"
    STEWARD = "steward"


ROLE_RANK = {Role.READER: 1, Role.WRITER: 2, Role.STEWARD: 3}


class Member(models.Model):
    # No index of its own: member_unique_name_per_space leads with space.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="members", db_index=False)
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices)
    kind = models.CharField(max_length=8, choices=MemberKind.choices, default=MemberKind.AGENT)  # SPEC §21
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "name"], name="member_unique_name_per_space"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="member_role_valid"),
            models.CheckConstraint(condition=Q(kind__in=MemberKind.values), name="member_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


class ApiKey(models.Model):
    # No index of its own: apikey_unique_prefix_per_space leads with space.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="api_keys", db_index=False)
    member = SpaceForeignKey(Member, on_delete=models.CASCADE, related_name="api_keys")
    # The prefix is the public half used to find the row before the space is known: unique on
    # its own in ``KeyPrefix``, the global lookup; the secret half is stored only hashed.
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64)
    # SPEC §2: increases when the key is rotated or its member's role changes (§7.1 binds
    # idempotent operations to it).
    generation = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "prefix"], name="apikey_unique_prefix_per_space"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.member.name})"

    @staticmethod
    def live(now) -> Q:
        """Live (SPEC §2): not revoked, and not past its expiry. The rule's one statement: the key
        lookups compile it into their SQL (``spaces.key_lookup``), lists of keys filter by it."""
        return Q(revoked_at=None) & (Q(expires_at=None) | Q(expires_at__gt=now))


class KeyPrefix(models.Model):
    """The global lookup of an API key's prefix (SPEC §11): which space its key is in, so the key's
    own read goes to that space (one shard under sharding by space). Written with the key, never
    changed; a reference table under Citus. Holds the prefix's uniqueness across all spaces."""

    prefix = models.CharField(max_length=16, primary_key=True)
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="+")


class JoinLink(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="join_links")
    token_hash = models.CharField(max_length=64, db_index=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    expires_at = models.DateTimeField(null=True, blank=True)
    max_uses = models.PositiveIntegerField(null=True, blank=True)
    uses = models.PositiveIntegerField(default=0)
    created_by = SpaceForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "token_hash"], name="joinlink_unique_token_per_space"),
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(uses__lte=models.F("max_uses")), name="joinlink_uses_lte_max"
            ),
        ]


class JoinRedemption(models.Model):
    """A join made with an ``Idempotency-Key`` (SPEC §2): its retry answers for the same member.

    Only the prefix of the key the last answer carried is kept (never a secret), so a
    replay can revoke it and answer with a fresh key.
    """

    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="+", db_index=False)
    link = SpaceForeignKey(JoinLink, on_delete=models.CASCADE, related_name="redemptions")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    member = SpaceForeignKey(Member, on_delete=models.CASCADE, related_name="+")
    answered_key_prefix = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "link", "key"], name="joinredemption_one_per_link_key"),
        ]


class CharterItem(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="charter_items")
    work_item_id = models.CharField(max_length=32)
    # The numeric part of work_item_id, so T2 sorts before T10.
    position = models.PositiveBigIntegerField()
    canonical_title = models.CharField(max_length=500)
    aliases = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["space", "work_item_id"], name="charter_unique_work_item_per_space"),
        ]
        indexes = [models.Index(fields=["space", "position"], name="charter_space_position")]

    def __str__(self) -> str:
        return f"{self.work_item_id} {self.canonical_title}"


class CatalogChange(models.Model):
    """Which catalog row a catalog version changed (SPEC §4.3), written in the transaction that
    bumps ``Space.catalog_version``: a server process whose bind index is older applies just
    these rows. ``work_item_id`` ``*`` means "too many to list: rebuild"."""

    EVERYTHING = "*"

    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.PositiveIntegerField()
    work_item_id = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["space", "version"], name="catalogchange_space_version")]


class Post(models.Model):
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="posts")
    author = SpaceForeignKey(Member, on_delete=models.PROTECT, related_name="posts")
    title = models.CharField(max_length=500, blank=True)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    hidden_at = models.DateTimeField(null=True, blank=True)
    withheld_at = models.DateTimeField(null=True, blank=True)
    withheld_by = SpaceForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["space", "id"], name="post_space_id")]

    def __str__(self) -> str:
        return f"post {self.pk}: {self.title or self.body[:40]}"

    @property
    def visible(self) -> bool:
        return self.hidden_at is None and self.withheld_at is None


class RateCounter(models.Model):
    """Requests counted per minute, shared by every server process (SPEC §3 Abuse): failed
    authentications per client address, requests per API key, failed admin logins per
    address. A global table (an address belongs to no space); the table is UNLOGGED, since a
    count lost in a database crash only forgives a minute."""

    scope = models.CharField(max_length=16)
    subject = models.CharField(max_length=128)
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "subject", "window_start"], name="ratecounter_one_per_window"),
        ]
        indexes = [models.Index(fields=["window_start"], name="ratecounter_window")]
