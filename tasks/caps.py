"""Caps on claims (SPEC §22): at most ``max_claims_per_member`` live claims a member, at most
``label_caps[label]`` live claims on the tasks carrying a label. The database keeps them.

The rule is two SQL functions (``tasks.sql``), compiled once from the models (the live claim is
``Claim.live``, as everywhere): ``tasks_member_at_cap`` and ``tasks_full_labels`` (the
space's capped labels whose tasks hold their cap of live claims). A trigger runs before every
claim is inserted, whatever path inserts it (``next``'s statement, a claim by number, a join, an
assignment): it takes an advisory lock on the member and on each capped label of the task, in
that order, then asks the functions with a fresh snapshot, so two hosts racing for the last
place are ordered and the second is refused (``cap_reached``). ``next``'s queue leaves out the
tasks the same function says are full (``tasks.filters.ready_queue``), so a refusal is only
ever a race lost, and ``next`` asks again.
"""
from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import DatabaseError
from django.db.models import CharField, F, Func, Q, Subquery

from spaces.models import Space

MEMBER_CAP_LOCK_CLASS = 17  # second key: the member's id
LABEL_CAP_LOCK_CLASS = 18  # second key: hashtext of "<space id>:<label>"
# The SQLSTATEs the trigger raises (a class of our own, so nothing else means them).
MEMBER_AT_CAP = "SPC01"
LABEL_AT_CAP = "SPC02"

# The functions' names (their SQL is tasks.sql.member_at_cap and full_labels).
MEMBER_AT_CAP_FUNCTION = "tasks_member_at_cap"
FULL_LABELS_FUNCTION = "tasks_full_labels"


def not_full(space_id, full=None) -> Q:
    """Tasks none of whose labels is full. ``full``: the space's full labels as the caller asked
    them a moment before (an expression, ``next``'s parameter: asked once a call, and not at all
    where the space caps no label); without it the function is asked in a subquery that reads no
    row of the queue, so once a statement (an InitPlan), however many tasks the queue passes over."""
    if full is None:
        full = Subquery(Space.objects.filter(pk=space_id).annotate(
            full=Func(F("pk"), function=FULL_LABELS_FUNCTION, output_field=ArrayField(CharField()))).values("full"))
    return ~Q(labels__overlap=full)


def cap_reached(error: DatabaseError) -> str | None:
    """The cap a database error says the trigger refused a claim for — ``"member"`` or
    ``"label"`` — or None when it is another error."""
    return {MEMBER_AT_CAP: "member", LABEL_AT_CAP: "label"}.get(getattr(error.__cause__, "sqlstate", None))
