"""A Hypothesis state machine drives the claim/attempt/check services with several members
and checks SPEC §6's invariants after every step."""
from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from commands.unit import in_transaction
from common.refusals import DomainError
from spaces import services as space_services
from tasks import attempts, claims
from tasks.models import Attempt, AttemptState, Check, Claim, Task, TaskStatus
from tests.factories import create_task
from tests.factories import MemberFactory, SpaceFactory

MEMBERS = 4
TASKS = 2
slugs = itertools.count()

member_index = st.integers(0, MEMBERS - 1)
task_index = st.integers(0, TASKS - 1)
attempt_number = st.integers(1, 6)


class ClaimsMachine(RuleBasedStateMachine):
    @initialize(confirmations=st.sampled_from([0, 1, 2]))
    def set_up(self, confirmations):
        self.space = SpaceFactory(slug=f"machine-{next(slugs)}", confirmations_required=confirmations)
        self.members = [MemberFactory(space=self.space, role="writer") for _ in range(MEMBERS)]
        self.posts = [space_services.create_post(space=self.space, author=m, body="r") for m in self.members]
        self.tasks = [create_task(space=self.space, actor=self.members[0], title=f"task {i}") for i in range(TASKS)]
        self.cycles = {t.pk: 1 for t in self.tasks}

    def task(self, i: int) -> Task:
        return Task.objects.select_related("space").get(pk=self.tasks[i].pk)

    def attempt(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DomainError:
            return None  # a refusal is a valid outcome; the invariants still must hold

    @rule(m=member_index)
    def next_task(self, m):
        self.attempt(in_transaction, claims.claim_next_task, space=self.space, member=self.members[m])

    @rule(m=member_index, t=task_index, join=st.booleans())
    def claim(self, m, t, join):
        self.attempt(claims.claim_task, space=self.space, member=self.members[m], number=self.task(t).number, join=join)

    @rule(m=member_index, t=task_index)
    def give_back(self, m, t):
        self.attempt(claims.give_back, task=self.task(t), member=self.members[m])

    @rule(m=member_index, t=task_index, p=member_index)
    def done(self, m, t, p):
        self.attempt(attempts.mark_done, task=self.task(t), member=self.members[m], post_id=self.posts[p].pk)

    @rule(m=member_index, t=task_index, n=attempt_number)
    def confirm(self, m, t, n):
        self.attempt(attempts.confirm_attempt, task=self.task(t), number=n, member=self.members[m])

    @rule(m=member_index, t=task_index, n=attempt_number)
    def reject(self, m, t, n):
        task = self.task(t)
        before = task.cycle
        result = self.attempt(attempts.reject_attempt, task=task, number=n, member=self.members[m], reason="no")
        if result is not None:
            _, _, reopened = result
            after = self.task(t).cycle
            assert after == (before + 1 if reopened else before)  # reopen ⇒ cycle + 1, else unchanged
            self.cycles[task.pk] = after

    @rule(t=task_index)
    def lapse(self, t):
        Claim.objects.filter(task=self.tasks[t], ended_at=None).update(expires_at=timezone.now() - timedelta(seconds=1))
        claims.expire_claims()

    @invariant()
    def claims_within_limit(self):
        if not hasattr(self, "space"):
            return
        live = Counter(Claim.objects.filter(space_id=self.space.pk, ended_at=None).values_list("task_id", flat=True))
        assert all(n <= self.space.max_claims_per_task for n in live.values())

    @invariant()
    def attempts_within_limits(self):
        if not hasattr(self, "space"):
            return
        rows = list(Attempt.objects.filter(space_id=self.space.pk).values_list("task_id", "cycle", "member_id"))
        per_cycle = Counter((t, c) for t, c, _ in rows)
        assert all(n <= self.space.max_attempts_per_cycle for n in per_cycle.values())
        assert len(set(rows)) == len(rows)  # one attempt a member a cycle

    @invariant()
    def doer_or_checker(self):
        if not hasattr(self, "space"):
            return
        doers = set(Attempt.objects.filter(space_id=self.space.pk).values_list("task_id", "cycle", "member_id"))
        checks = Check.objects.filter(space_id=self.space.pk).select_related("attempt")
        for check in checks:
            assert check.member_id != check.attempt.member_id  # never one's own attempt
            if (check.task_id, check.cycle, check.member_id) in doers:
                # Only a zero-confirmation space lets a doer confirm a rival attempt.
                assert self.space.confirmations_required == 0 and check.verdict == "confirm"

    @invariant()
    def accepted_means_done(self):
        if not hasattr(self, "space"):
            return
        for task in Task.objects.filter(space_id=self.space.pk):
            accepted = task.attempts.filter(state=AttemptState.ACCEPTED).count()
            assert accepted <= 1
            assert (accepted == 1) == (task.status == TaskStatus.DONE)
            if task.status == TaskStatus.IN_REVIEW:
                assert task.attempts.filter(cycle=task.cycle, state=AttemptState.WAITING).exists()
            if task.status == TaskStatus.OPEN:
                assert not task.claims.filter(ended_at=None).exists()


@pytest.mark.django_db
def test_claims_attempts_and_checks_keep_their_invariants():
    run_state_machine_as_test(
        ClaimsMachine,
        settings=settings(max_examples=40, stateful_step_count=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]),
    )
