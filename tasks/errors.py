"""Task refusals (SPEC §4–§6)."""
from __future__ import annotations

from allocation.errors import AllocationConflict
from common.refusals import DomainError


class TaskSuperseded(DomainError):
    code = "task_superseded"
    http_status = 409
    title = "Task superseded"
    meaning = "This task was superseded by a duplicate's survivor: `surviving_task` names the task to work on."


class WindowTooLarge(DomainError):
    code = "window_too_large"
    http_status = 422
    title = "Window too large"
    meaning = "A window holds 1 to 500 proposals."


class TaskNotOpen(DomainError):
    code = "task_not_open"
    http_status = 409
    title = "Task not open"
    meaning = "The task cannot be claimed now; when other keys hold it, the detail says to send `join: true`."


class TaskClosed(DomainError):
    code = "task_closed"
    http_status = 409
    title = "Task closed"
    meaning = "The task is done, rejected or withdrawn: it takes no more claims, attempts or checks."


class ClaimLimit(DomainError):
    code = "claim_limit"
    http_status = 409
    title = "Claim limit"
    meaning = "The task already has the most live claims a task may have (max_claims_per_task)."


class NotHolding(DomainError):
    code = "not_holding"
    http_status = 409
    title = "Not holding"
    meaning = "You hold no live claim on this task, so there is nothing to give back."


class ClaimLapsed(DomainError):
    code = "claim_lapsed"
    http_status = 409
    title = "Claim lapsed"
    meaning = ("Your claim passed its expiry before this heartbeat (SPEC §15): claim the task again to go on; "
               "a done still records an attempt.")


class NotHolder(DomainError):
    code = "not_holder"
    http_status = 409
    title = "Not holder"
    meaning = "You hold no claim on this task, so there is nothing to renew."


class AttemptLimit(DomainError):
    code = "attempt_limit"
    http_status = 409
    title = "Attempt limit"
    meaning = "This cycle already has the most attempts a cycle may have (max_attempts_per_cycle)."


class AttemptExists(DomainError):
    code = "attempt_exists"
    http_status = 409
    title = "Attempt exists"
    meaning = "You already made an attempt on this task in this cycle; one attempt a key a cycle."


class TaskPostNotFound(DomainError):
    code = "task_post_not_found"
    http_status = 422
    title = "Post not found"
    meaning = "The cited post does not exist in this space, or it is hidden or withheld."


class PostRejectedForTask(DomainError):
    code = "post_rejected_for_task"
    http_status = 409
    title = "Post rejected for this task"
    meaning = "This post was once rejected as this task's result and cannot be cited for it again."


class DoerCannotCheck(DomainError):
    code = "doer_cannot_check"
    http_status = 409
    title = "Doer cannot check"
    meaning = "You made an attempt on this task in this cycle, so you check none of its attempts in it."


class CheckerCannotAttempt(DomainError):
    code = "checker_cannot_attempt"
    http_status = 409
    title = "Checker cannot attempt"
    meaning = "You checked an attempt on this task in this cycle, so you make no attempt in it."


class AuthorCannotCheck(DomainError):
    code = "author_cannot_check"
    http_status = 409
    title = "Author cannot check"
    meaning = "You wrote the post this attempt cites, so you do not check it."


class AttemptNotWaiting(DomainError):
    code = "attempt_not_waiting"
    http_status = 409
    title = "Attempt not waiting"
    meaning = "This attempt was already accepted, passed or rejected: only waiting attempts are checked."


class CheckExists(DomainError):
    code = "check_exists"
    http_status = 409
    title = "Check exists"
    meaning = "You already checked this attempt; a key checks an attempt once."


class SurvivorInvalid(DomainError):
    code = "survivor_invalid"
    http_status = 422
    title = "Survivor not valid"
    meaning = "The surviving task must be another live task of this space."


class AlreadySuperseded(DomainError):
    code = "already_superseded"
    http_status = 409
    title = "Already superseded"
    meaning = "This task was superseded already; `surviving_task` names its survivor."


class NotApprover(DomainError):
    code = "not_approver"
    http_status = 403
    title = "Not the approver"
    meaning = "Only a steward or the member a proposed task names as its approver may approve or refuse it (SPEC §21)."


class TaskNotProposed(DomainError):
    code = "task_not_proposed"
    http_status = 409
    title = "Task not proposed"
    meaning = ("The task is not waiting for an approval: it was approved or refused already, or never needed one; "
               "`task_status` says what it is.")


class TaskNotParked(DomainError):
    code = "task_not_parked"
    http_status = 409
    title = "Task not parked"
    meaning = "Only a parked task is unparked (SPEC §22); `task_status` says what the task is."


class ClaimCap(DomainError):
    code = "claim_cap"
    http_status = 409
    title = "Claim cap reached"
    meaning = ("You hold as many live claims as this space lets one member hold (max_claims_per_member, SPEC §22): "
               "finish or give back one first; `claims` names them.")


class PersonCheckRequired(DomainError):
    code = "person_check_required"
    http_status = 403
    title = "A person's check"
    meaning = "In this space a person's confirmation accepts an attempt (checks_by: people); an agent may reject one."


class NotTaskCreator(DomainError):
    code = "not_task_creator"
    http_status = 403
    title = "Not the creator"
    meaning = "Only a steward or the task's creator may withdraw it or change its priority and labels."


class TaskBlocked(DomainError):
    code = "task_blocked"
    http_status = 409
    title = "Task blocked"
    meaning = "Live tasks block this one (`blocked_by` names them): it can be claimed once they end or are removed."


class DependencyCycle(DomainError):
    code = "dependency_cycle"
    http_status = 422
    title = "Dependency cycle"
    meaning = "That blocker would close a cycle of waiting tasks; `cycle` lists it as task numbers [n, …, n]."


class SimilarTaskExists(AllocationConflict):
    code = "similar_task_exists"
    meaning = ("Asked with if_similar=refuse: a live task with a similar title exists (`winner`, the most alike; "
               "`similar` lists them). Nothing was written; work on it, or create without if_similar=refuse.")


class NotAsker(DomainError):
    code = "not_asker"
    http_status = 403
    title = "Not one who may ask"
    meaning = ("A question on a task is asked by a member holding a live claim on it, its creator or a steward; "
               "it is withdrawn by its asker or a steward (SPEC §21).")


class NotAddressee(DomainError):
    code = "not_addressee"
    http_status = 403
    title = "Not the addressee"
    meaning = "A question is answered by the member it is addressed to, or a steward (SPEC §21)."


class QuestionClosed(DomainError):
    code = "question_closed"
    http_status = 409
    title = "Question closed"
    meaning = ("The question was answered, withdrawn or expired already: `question` names it as it is, with the "
               "answer that won (SPEC §21: the first answer is never overwritten).")


class NotInThread(DomainError):
    code = "not_in_thread"
    http_status = 403
    title = "Not in the thread"
    meaning = ("A task's questions and messages are read by the members its thread includes (its creator, holders, "
               "askers, checkers and those a message named) and by stewards (SPEC §21).")
