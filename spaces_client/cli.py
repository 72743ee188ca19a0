"""spaces: the command line for agents (reads SPACES_URL and SPACES_KEY).

SPACES_URL is the space's URL, e.g. http://127.0.0.1:8000/v1/spaces/agent-lab.
Every mutating command sends one Idempotency-Key and reuses it on each retry of a
transient failure, so retrying never does the work twice. Exit codes: 0 done,
1 refused (the refusal is printed), 2 usage or connection failure.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from spaces_client.client import SpacesClient, SpacesRefusal, SpacesUnavailable


def one_line(text: str) -> str:
    """A title as one line, whatever it holds: each line break shows as ⏎."""
    return " ⏎ ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text


def describe_task(task: dict) -> str:
    slot = f" [{task['work_item_id']}]" if task.get("work_item_id") else ""
    state = task["status"] if not task.get("blocked_by") else f"{task['status']}, waits on {numbers(task['blocked_by'])}"
    labels = f" #{' #'.join(task['labels'])}" if task.get("labels") else ""
    return (f"task {task['id']}{slot} ({state}, P{task.get('priority', 2)}, cycle {task['cycle']}): "
            f"{one_line(task['title'])}{labels}")


def age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def board_table(s: dict) -> str:
    """The summary as a few aligned tables (SPEC §14)."""
    rows = [("live", s["live"]), *((f"  {status}", n) for status, n in s["by_status"].items()),
            ("ready", s["ready"]), ("blocked", s["blocked"]), ("awaiting check", s["awaiting_check"]),
            ("done in the last 7 days", s["done_last_7_days"]),
            ("duplicates prevented (24 h)", s["duplicates_prevented_24h"])]
    oldest = s["oldest_ready"]
    rows.append(("oldest ready", f"task {oldest['task']}, {age(oldest['age_seconds'])} old" if oldest else "none"))
    width = max(len(label) for label, _ in rows)
    lines = [f"space {s['space']}", *(f"{label:<{width}}  {value}" for label, value in rows)]
    if s["claims_by_member"]:
        lines += ["", "holding"] + [f"  {h['name']:<{width - 2}}  tasks {numbers(h['tasks'])}"
                                     for h in s["claims_by_member"]]
    if s["slots"]:
        lines += ["", f"{'slot':<8} {'live':>5} {'done':>5}"]
        lines += [f"{slot['work_item_id']:<8} {slot['live']:>5} {slot['done']:>5}" for slot in s["slots"]]
    return "\n".join(lines)


def numbers(values: list[int]) -> str:
    return ", ".join(map(str, values))


def similar_lines(similar: list[dict]) -> list[str]:
    return [f"  {t['score']:.2f}  task {t['id']} ({t['status']}): {one_line(t['title'])}" for t in similar]


def readable(command: str, result: Any) -> str:
    if command == "create" and result.get("similar"):
        return "\n".join([describe_task(result), "similar live tasks (is one of them the same work?):",
                          *similar_lines(result["similar"])])
    if command in ("create", "task", "update", "block"):
        return describe_task(result)
    if command == "similar":
        return "\n".join(similar_lines(result["similar"])) or "no similar live task"
    if command == "unblock":
        return "removed"
    if command == "board":
        return board_table(result)
    if command in ("tasks", "ready"):
        return "\n".join(describe_task(t) for t in result["results"]) or ("nothing ready" if command == "ready"
                                                                          else "no tasks")
    if command == "next":
        if result.get("task") is None:
            return "nothing to do"
        if result.get("attempt"):
            a = result["attempt"]
            return f"check attempt {a['number']} of {describe_task(result['task'])} (post {a['post']})"
        return f"claimed {describe_task(result['task'])} until {result['claim']['expires_at']}"
    if command in ("done", "confirm", "reject"):
        a = result["attempt"]
        return f"attempt {a['number']} is {a['state']}; {describe_task(result['task'])}"
    if command == "give-back":
        return f"gave back {describe_task(result['task'])}"
    if command == "heartbeat":
        return f"claim {result['claim']['id']} renewed until {result['claim']['expires_at']}"
    if command == "post":
        return f"post {result['id']}"
    if command == "costs":
        return costs_table(result)
    if command == "events":
        return "\n".join(describe_event(e) for e in result["events"]) or f"no events after {result['next']}"
    if command == "webhooks":
        return webhooks_readable(result)
    if command == "routines":
        if result is None:
            return "removed"
        return "\n".join(map(describe_routine, result.get("results", [result]))) or "no routines"
    if command == "unpark":
        return f"unparked {describe_task(result)}"
    if command == "bind":
        scores = ", ".join(f"{s['work_item_id']} {s['jaccard']}" for s in result["scores"] if s["value"] > 0)
        return f"binds to {result['work_item_id'] or 'no slot (title fallback)'}; {scores or 'no scores'}"
    if command in ("ask", "answer"):
        return describe_question(result)
    if command == "message":
        return f"message {result['id']} to {numbers(result['to']) or 'nobody'}"
    if command == "inbox":
        lines = [f"question {q['id']} on task {q['task']}: {one_line(q['body'])}" for q in result["questions"]]
        lines += [f"approve? {describe_task(t)}" for t in result["approvals"]]
        lines += [f"check attempt {c['attempt']} of task {c['task']}" for c in result["checks"]]
        lines += [f"message {m['id']} from {m['sender']}{' on task ' + str(m['task']) if m['task'] else ''}: "
                  f"{one_line(m['body'])}" for m in result["messages"]]
        return "\n".join(lines) or "nothing waits on you"
    if command == "notifications":
        return "\n".join(f"{n['kind']} task {n['task']}: {json.dumps(n['details'])}" for n in result["results"]) \
            or "no notifications"
    return json.dumps(result, indent=2)


def describe_question(q: dict) -> str:
    said = f": {q['option'] or q['answer']}" if q["state"] == "answered" else ""
    return f"question {q['id']} on task {q['task']} is {q['state']}{said}"


def costs_table(result: dict) -> str:
    """``spaces costs``: a line a group, then the period's spend and the cost per accepted outcome."""
    lines = [f"{g['group'] or '(none)':<24} {g['usd']:>12.6f} USD  {g['input_tokens']:>10} in  "
             f"{g['output_tokens']:>10} out  {g['wasted_usd']:>10.6f} wasted" for g in result["groups"]]
    per = result["per_accepted_usd"]
    budget = result["budget_usd"]
    lines.append(f"{result['since']} – {result['until']}: {result['usd']:.6f} USD"
                 + (f" of a {budget:g} USD monthly budget" if budget is not None else "")
                 + f"; {result['accepted']} accepted, "
                 + (f"{per:.6f} USD each" if per is not None else "no cost per accepted outcome yet"))
    return "\n".join(lines)


def add_cost(parser: argparse.ArgumentParser, meaning: str) -> None:
    """``--usd --input-tokens --output-tokens --seconds --model``: a spend report (SPEC §19)."""
    parser.add_argument("--usd", type=float, help=f"{meaning}, in USD (at most 6 decimal places)")
    parser.add_argument("--input-tokens", type=int)
    parser.add_argument("--output-tokens", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--model")


def cost_of(args: argparse.Namespace) -> dict | None:
    cost = {name: getattr(args, name) for name in ("usd", "input_tokens", "output_tokens", "seconds", "model")
            if getattr(args, name, None) is not None}
    return cost or None


def webhooks_readable(result: Any) -> str:
    """``spaces webhooks …``'s answers, a line each."""
    if result is None:
        return "removed"
    if "secret" in result:
        return (f"webhook {result['id']} for {result['url']}\nsigning secret (shown this once, keep it): "
                f"{result['secret']}")
    if "state" in result:
        return f"delivery {result['id']} ({result['type']}) is {result['state']}"
    rows = result.get("results", [])
    if rows and "url" in rows[0]:
        return "\n".join(f"{w['id']}  {'enabled ' if w['enabled'] else 'disabled'}  {w['url']}  "
                         f"{','.join(w['types']) or 'every type'}" for w in rows)
    return "\n".join(
        f"{d['id']}  {d['type']}{'' if d['seq'] is None else ' #' + str(d['seq'])}  {d['state']}  "
        f"{d['attempts']} tries" + (f"  last: {d['tries'][-1]['status_code'] or d['tries'][-1]['error']}"
                                    if d["tries"] else "") for d in rows) or "none"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spaces", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the service's JSON instead of a summary")
    parser.add_argument("--deadline", type=float, default=60.0,
                        help="seconds to keep retrying transient failures with the same Idempotency-Key (default 60)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("create", help="create a task (a 409 names the task that already holds the work)")
    p.add_argument("title")
    p.add_argument("--body", default="")
    p.add_argument("--mode", dest="delivery_mode", choices=["result", "repository_change", "review"])
    p.add_argument("--work-item", dest="work_item_id", help="bind to this catalog slot (e.g. T3)")
    p.add_argument("--if-similar", dest="if_similar", choices=["allow", "refuse"],
                   help="refuse: create nothing (409 similar_task_exists) when a live task looks like it")
    add_graph_options(p)
    p.add_argument("--blocked-by", dest="blocked_by", type=int, action="append", metavar="N",
                   help="a task this one waits on (repeat for more)")
    p.add_argument("--approval", action="store_true", default=None,
                   help="create it proposed: nobody works on it until a steward (or --approver) approves")
    p.add_argument("--approver", type=int, metavar="MEMBER", help="the member id who may approve it besides stewards")
    p = sub.add_parser("approve", help="a proposed task may start (a steward or its approver): spaces approve 5")
    p.add_argument("number", type=int)
    p = sub.add_parser("refuse", help="a proposed task is not to be done: spaces refuse 5 --reason 'not now'")
    p.add_argument("number", type=int)
    p.add_argument("--reason", default="")
    p = sub.add_parser("ask", help="ask about a task; it waits until answered: spaces ask 5 'v1 or v2?' --to creator")
    p.add_argument("number", type=int)
    p.add_argument("body")
    p.add_argument("--to", default="creator", help='"creator" (default), "stewards" or a member id')
    p.add_argument("--option", dest="options", action="append", metavar="OPTION",
                   help="an answer to choose from (repeat for more)")
    p.add_argument("--give-back", dest="hold", action="store_false", default=None,
                   help="give your claim back instead of keeping it paused while the question is open")
    p.add_argument("--wait", type=float, default=0, metavar="S", help="wait up to S seconds (0-60) for the answer")
    p = sub.add_parser("answer", help="answer a question: spaces answer TASK QUESTION 'v2' (or --option v2)")
    p.add_argument("number", type=int)
    p.add_argument("question", type=int)
    p.add_argument("body", nargs="?", default="")
    p.add_argument("--option", help="one of the question's options")
    p = sub.add_parser("message", help="message a task's thread (--task N) or members (--to ID): "
                                       "spaces message 'skipped the flaky test' --task 5")
    p.add_argument("body")
    p.add_argument("--task", dest="number", type=int, help="the task whose thread it goes to")
    p.add_argument("--to", dest="to", type=int, action="append", metavar="MEMBER", help="a member id (repeatable)")
    p = sub.add_parser("inbox", help="what waits on you: questions, approvals, checks, unread messages")
    p.add_argument("--read", action="store_true", help="then mark its messages read")
    p = sub.add_parser("update", help="change a task's priority or labels: spaces update 5 --priority 0 --label api")
    p.add_argument("number", type=int)
    add_graph_options(p)
    p.add_argument("--no-labels", action="store_true", help="remove every label")
    p = sub.add_parser("block", help="make a task wait on another: spaces block 5 3 (task 5 is blocked by task 3)")
    p.add_argument("number", type=int)
    p.add_argument("blocker", type=int)
    p = sub.add_parser("unblock", help="task 5 no longer waits on task 3: spaces unblock 5 3")
    p.add_argument("number", type=int)
    p.add_argument("blocker", type=int)
    p = sub.add_parser("next", help="claim the most urgent ready task (--label to narrow), or --number N [--join], "
                                    "or --check")
    p.add_argument("--label", dest="labels", action="append", metavar="LABEL",
                   help="only tasks carrying this label (repeat: all of them)")
    p.add_argument("--number", type=int)
    p.add_argument("--join", action="store_true", help="hold the task beside its other holders (up to 3)")
    p.add_argument("--check", action="store_true", help="get an attempt you may check instead")
    p.add_argument("--wait", type=float, default=0, metavar="S",
                   help="when nothing is ready, wait up to S seconds (0-60) for work instead of answering at once")
    p = sub.add_parser("heartbeat", help="renew your claim on a task while you work on it: spaces heartbeat 12")
    p.add_argument("number", type=int)
    add_cost(p, "what the claim spent so far")
    p = sub.add_parser(
        "work", help="claim a task, run a command on it, deliver its output: spaces work --wait 30 -- ./agent.sh",
        description="Claim a task (waiting up to --wait seconds), run COMMAND with the task in its environment "
        "(SPACES_TASK, SPACES_TASK_TITLE, SPACES_TASK_BODY, SPACES_URL, SPACES_KEY, SPACES_COST_FILE, "
        "SPACES_QUESTION_FILE) while a heartbeat keeps the claim alive; on exit 0 post its standard output as the "
        "result and mark the task done; on exit 75 with a question written to $SPACES_QUESTION_FILE (text, or JSON "
        "{\"body\", \"to\", \"options\"}) ask it of the task's creator (or \"to\"): with --hold wait for the "
        "answer and run the command again with $SPACES_ANSWER, else give the claim back; otherwise give the claim back. Either way it reports the command's wall time and the cost the command "
        "wrote as JSON to $SPACES_COST_FILE ({\"usd\", \"input_tokens\", \"output_tokens\", \"model\"}). --loop takes the next task after each. Exit codes: 0 done (or nothing to do), 1 the "
        "command failed or the service refused, 2 usage or no answer.")
    p.add_argument("--wait", type=float, default=0, metavar="S", help="wait up to S seconds (0-60) for a task")
    p.add_argument("--label", dest="labels", action="append", metavar="LABEL",
                   help="only tasks carrying this label (repeat: all of them)")
    p.add_argument("--loop", action="store_true", help="after each task, take the next (Ctrl-C stops)")
    p.add_argument("--hold", action="store_true",
                   help="when the command asks a question, keep the claim (paused), wait for the answer and run "
                        "the command again with it in $SPACES_ANSWER; without it the claim goes back")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND...")
    p = sub.add_parser("give-back", help="end your claim on a task")
    p.add_argument("number", type=int)
    add_cost(p, "what the claim spent in all")
    p = sub.add_parser("post", help="write a post (cite it with `done`)")
    p.add_argument("body")
    p.add_argument("--title", default="")
    p = sub.add_parser("done", help="record an attempt citing a post: spaces done 12 --post 7")
    p.add_argument("number", type=int)
    p.add_argument("--post", type=int, required=True)
    add_cost(p, "what your claim (or, holding none, this attempt) spent in all")
    p = sub.add_parser("costs", help="what the space spent this month (or --since/--until), per member, label, "
                       "model or slot, and the cost per accepted outcome")
    p.add_argument("--since", metavar="TIME", help="ISO 8601 (default: the start of this month, UTC)")
    p.add_argument("--until", metavar="TIME", help="ISO 8601 (default: now)")
    p.add_argument("--group-by", default="member", choices=["member", "label", "model", "work_item_id"])
    p = sub.add_parser("confirm", help="confirm an attempt: spaces confirm TASK ATTEMPT")
    p.add_argument("number", type=int)
    p.add_argument("attempt", type=int)
    p = sub.add_parser("reject", help="reject an attempt: spaces reject TASK ATTEMPT --reason ...")
    p.add_argument("number", type=int)
    p.add_argument("attempt", type=int)
    p.add_argument("--reason", default="")
    p = sub.add_parser("tasks", help="list tasks")
    p.add_argument("--status")
    p.add_argument("--label", dest="labels", action="append", metavar="LABEL", help="carrying this label (repeatable)")
    p.add_argument("--priority", type=int, choices=range(5))
    p.add_argument("-q", "--search", dest="q", help="full-text search over titles and bodies, best match first")
    p = sub.add_parser("ready", help="the tasks `next` would hand out, most urgent first")
    p.add_argument("--label", dest="labels", action="append", metavar="LABEL", help="carrying this label (repeatable)")
    p = sub.add_parser("task", help="show one task with its claims and attempts")
    p.add_argument("number", type=int)
    sub.add_parser("board", help="the space at a glance: live work by state, who holds what, duplicates prevented")
    p = sub.add_parser("bind", help="preview how a title binds to the catalog")
    p.add_argument("title")
    p = sub.add_parser("similar", help="the live tasks whose titles look like this one (before you create it)")
    p.add_argument("title")
    p = sub.add_parser("notifications", help="your notifications")
    p.add_argument("--unread", action="store_true")
    p = sub.add_parser("events", help="the space's feed, oldest first: spaces events --after 120 --follow")
    p.add_argument("--after", type=int, metavar="SEQ", help="only events after this seq (default: the oldest kept)")
    p.add_argument("--type", dest="types", action="append", metavar="TYPE",
                   help="only this type, such as task.created (repeatable)")
    p.add_argument("--follow", action="store_true",
                   help="keep printing events as they come (Ctrl-C stops; resumes from the last seq it printed)")
    p = sub.add_parser("webhooks", help="a steward's webhook endpoints: spaces webhooks add https://… --type task.done")
    hooks = p.add_subparsers(dest="webhooks_action", required=True, metavar="ACTION")
    hooks.add_parser("list", help="the space's endpoints")
    w = hooks.add_parser("add", help="register an endpoint; prints its signing secret, shown once")
    w.add_argument("url")
    w.add_argument("--type", dest="types", action="append", metavar="TYPE",
                   help="only this event type (repeatable; default every type)")
    w.add_argument("--description", default="")
    for action, what in (("remove", "delete an endpoint"), ("test", "send it a webhook.test event"),
                         ("deliveries", "its deliveries, newest first, with their tries")):
        hooks.add_parser(action, help=what).add_argument("webhook", type=int)
    w = hooks.add_parser("retry", help="send a failed delivery again")
    w.add_argument("webhook", type=int)
    w.add_argument("delivery", type=int)
    p = sub.add_parser("unpark", help="a steward puts a parked task back in the queue: spaces unpark 5")
    p.add_argument("number", type=int)
    p = sub.add_parser("routines", help="work made each period of a schedule: spaces routines add 'Audit the "
                                        "dependencies' --schedule '0 9 * * 1' --timezone Europe/Paris")
    routine = p.add_subparsers(dest="routines_action", metavar="ACTION")
    routine.add_parser("list", help="the space's routines and when each runs next (the default)")
    r = routine.add_parser("add", help="a steward's routine: its task is made once each period by the sweep")
    r.add_argument("title")
    r.add_argument("--schedule", required=True, metavar="CRON", help="five cron fields, e.g. '0 9 * * 1'")
    r.add_argument("--timezone", metavar="ZONE", help="IANA time zone of the schedule (default UTC)")
    r.add_argument("--body")
    r.add_argument("--work-item-id", metavar="SLOT")
    r.add_argument("--overlap", choices=["skip", "allow"],
                   help="skip (default): no new task while the last one is live; allow: one each period")
    r.add_argument("--catch-up", choices=["latest", "none"],
                   help="after downtime: latest (default) makes the latest missed period's task; none makes none")
    add_graph_options(r)
    for action, what in (("pause", "stop making its tasks"), ("resume", "make its tasks again, from the next "
                                                                        "period"), ("remove", "delete it")):
        routine.add_parser(action, help=what).add_argument("routine", type=int)
    return parser


def add_graph_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--priority", type=int, choices=range(5), help="0 most urgent .. 4 (default 2)")
    p.add_argument("--label", dest="labels", action="append", metavar="LABEL", help="a label (repeat for more)")


def given(**fields: Any) -> dict:
    return {k: v for k, v in fields.items() if v is not None}


def ready(client: SpacesClient, labels: list[str] | None) -> dict:
    """The first 200 ready tasks in the order `next` takes them, as the server orders them."""
    return client.tasks(ready="true", order="next", limit=200, **given(label=labels))


def call(client: SpacesClient, args: argparse.Namespace) -> Any:
    actions: dict[str, Callable[[], Any]] = {
        "create": lambda: client.create_task(args.title, body=args.body, **given(
            delivery_mode=args.delivery_mode, work_item_id=args.work_item_id, priority=args.priority,
            labels=args.labels, blocked_by=args.blocked_by, if_similar=args.if_similar, approval=args.approval,
            approver=args.approver)),
        "approve": lambda: client.approve(args.number),
        "ask": lambda: client.ask(args.number, args.body, to=int(args.to) if args.to.isdigit() else args.to,
                                  options=args.options, hold=args.hold, wait=args.wait),
        "answer": lambda: client.answer(args.number, args.question, args.body, args.option),
        "message": lambda: client.message(args.body, number=args.number, to=args.to),
        "inbox": lambda: read_inbox(client, args.read),
        "refuse": lambda: client.refuse(args.number, args.reason),
        "update": lambda: client.update_task(args.number, **given(
            priority=args.priority, labels=[] if args.no_labels else args.labels)),
        "block": lambda: client.block(args.number, args.blocker),
        "unblock": lambda: client.unblock(args.number, args.blocker),
        "ready": lambda: ready(client, args.labels),
        "next": lambda: client.next(number=args.number, join=args.join, kind="check" if args.check else None,
                                    labels=args.labels, wait=args.wait),
        "heartbeat": lambda: client.heartbeat(args.number, cost=cost_of(args)),
        "give-back": lambda: client.give_back(args.number, cost=cost_of(args)),
        "costs": lambda: client.costs(since=args.since, until=args.until, group_by=args.group_by),
        "post": lambda: client.post(args.body, args.title),
        "done": lambda: client.done(args.number, args.post, cost=cost_of(args)),
        "confirm": lambda: client.confirm(args.number, args.attempt),
        "reject": lambda: client.reject(args.number, args.attempt, args.reason),
        "tasks": lambda: client.tasks(**given(status=args.status, label=args.labels, priority=args.priority,
                                              q=args.q)),
        "task": lambda: client.task(args.number),
        "bind": lambda: client.bind(args.title),
        "similar": lambda: client.similar(args.title),
        "board": client.summary,
        "notifications": lambda: client.notifications(unread=args.unread),
        "events": lambda: client.events(after=args.after, types=args.types),
        "webhooks": lambda: webhooks_call(client, args),
        "unpark": lambda: client.unpark(args.number),
        "routines": lambda: routines_call(client, args),
    }
    return actions[args.command]()


def read_inbox(client: SpacesClient, mark_read: bool) -> dict:
    inbox = client.inbox()
    if mark_read and inbox["messages"]:
        client.inbox_read([m["id"] for m in inbox["messages"]])
    return inbox


def routines_call(client: SpacesClient, args: argparse.Namespace) -> Any:
    action = args.routines_action or "list"
    if action == "list":
        return client.routines()
    if action == "add":
        return client.add_routine(args.title, args.schedule, **given(
            timezone=args.timezone, body=args.body, work_item_id=args.work_item_id, overlap=args.overlap,
            catch_up=args.catch_up, priority=args.priority, labels=args.labels))
    if action == "remove":
        return client.remove_routine(args.routine)
    return client.update_routine(args.routine, enabled=action == "resume")


def describe_routine(r: dict) -> str:
    runs = f"next {r['next_run_at']}" if r["enabled"] else "paused"
    last = f", last task {r['last_task']}" if r["last_task"] else ""
    return f"routine {r['id']} {one_line(r['title'])!r}  {r['schedule']} {r['timezone']}  {runs}{last}"


def webhooks_call(client: SpacesClient, args: argparse.Namespace) -> Any:
    action = args.webhooks_action
    if action == "list":
        return client.webhooks()
    if action == "add":
        return client.add_webhook(args.url, types=args.types, description=args.description)
    if action == "remove":
        return client.remove_webhook(args.webhook)
    if action == "test":
        return client.test_webhook(args.webhook)
    if action == "deliveries":
        return client.webhook_deliveries(args.webhook)
    return client.retry_delivery(args.webhook, args.delivery)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    url, key = os.environ.get("SPACES_URL"), os.environ.get("SPACES_KEY")
    if not url or not key:
        print("spaces: set SPACES_URL (e.g. http://127.0.0.1:8000/v1/spaces/agent-lab) and SPACES_KEY", file=sys.stderr)
        return 2
    try:
        client = SpacesClient(url, key, deadline=args.deadline)
        if args.command == "work":
            return work(client, args, url, key)
        if args.command == "events" and args.follow:
            return follow(client, args)
        result = call(client, args)
    except SpacesRefusal as refusal:
        out(json.dumps(refusal.body, indent=2) if args.json else refused(refusal))
        return 1
    except (SpacesUnavailable, ValueError) as exc:
        print(f"spaces: {exc}", file=sys.stderr)
        return 2
    out(json.dumps(result, indent=2) if args.json else readable(args.command, result))
    return 0


def describe_event(event: dict) -> str:
    task = f" task {event['task']}" if event.get("task") is not None else ""
    actor = f" by {event['actor']['name']}" if event.get("actor") else ""
    return f"{event['seq']}  {event['at']}  {event['type']}{task}{actor}"


def follow(client: SpacesClient, args: argparse.Namespace) -> int:
    """``spaces events --follow``: every event as it comes, one line each (or JSON lines)."""
    try:
        for event in client.follow(after=args.after, types=args.types):
            out(json.dumps(event) if args.json else describe_event(event))
    except KeyboardInterrupt:
        return 130
    return 0


MAX_RESULT_BYTES = 64 * 1024  # a post's body (SPEC §3)


def work(client: SpacesClient, args: argparse.Namespace, url: str, key: str) -> int:
    """``spaces work``: a command-line agent as a member of the team (SPEC §15)."""
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:
        print("spaces work: give the command after --, e.g. spaces work --wait 30 -- ./agent.sh", file=sys.stderr)
        return 2
    status = 0
    try:
        while True:
            status = work_once(client, args, command, url, key)
            if not args.loop or status == 2:
                return status
    except KeyboardInterrupt:
        return 130


def work_once(client: SpacesClient, args: argparse.Namespace, command: list[str], url: str, key: str) -> int:
    try:
        with client.claimed(wait=args.wait, labels=args.labels) as claimed:
            if claimed is None:
                if not args.loop:
                    out("nothing to do")
                return 0
            task = claimed.task
            out(f"working on {describe_task(task)}")
            with tempfile.TemporaryDirectory(prefix="spaces-work-") as folder:
                cost_file, question_file = Path(folder) / "cost.json", Path(folder) / "question.json"
                env = {**os.environ, "SPACES_TASK": str(task["id"]), "SPACES_TASK_TITLE": task["title"],
                       "SPACES_TASK_BODY": task.get("body", ""), "SPACES_URL": url, "SPACES_KEY": key,
                       "SPACES_COST_FILE": str(cost_file), "SPACES_QUESTION_FILE": str(question_file)}
                started = time.monotonic()
                while True:
                    try:
                        finished = subprocess.run(command, env=env, stdout=subprocess.PIPE)
                    except OSError as error:
                        raise CommandFailed(f"cannot run {command[0]}: {error}") from None
                    finally:
                        claimed.cost = reported_cost(cost_file, time.monotonic() - started)
                    if finished.returncode != EX_TEMPFAIL or not question_file.exists():
                        break
                    question = written_question(question_file)
                    question_file.unlink()
                    if not args.hold:
                        asked = client.ask(task["id"], hold=False, **question)
                        out(f"asked question {asked['id']} on task {task['id']}; gave the claim back (the task "
                            "is ready again once it is answered)")
                        return 0
                    env.update(awaited_answer(client, task["id"], question))
            if finished.returncode != 0:
                raise CommandFailed(f"{command[0]} exited {finished.returncode}")
            result = finished.stdout.decode("utf-8", "replace")
            if len(result.encode()) > MAX_RESULT_BYTES:
                result = result.encode()[:MAX_RESULT_BYTES - 64].decode("utf-8", "ignore") + "\n… (output cut at 64 KiB)"
            post = client.post(result if result.strip() else f"{command[0]} exited 0 with no output.",
                               title=f"Result of task {task['id']}")
            done = client.done(task["id"], post["id"], cost=claimed.cost)
            out(readable("done", done))
            return 0
    except CommandFailed as failure:
        print(f"spaces work: {failure}; gave the claim back", file=sys.stderr)
        return 1


EX_TEMPFAIL = 75  # sysexits.h: the command asks a question before it can go on (SPEC §21)
ANSWER_POLL_SECONDS = 2.0  # after a waited ask's 60 s, how often the question is read again


def written_question(question_file: Path) -> dict:
    """The question the command wrote: plain text (to the creator), or a JSON object with
    ``body`` and optionally ``to`` and ``options``."""
    text = question_file.read_text(encoding="utf-8", errors="replace").strip()
    try:
        written = json.loads(text)
    except ValueError:
        written = None
    if isinstance(written, dict) and isinstance(written.get("body"), str):
        return {name: written[name] for name in ("body", "to", "options") if name in written}
    if not text:
        raise CommandFailed("exit 75 with an empty $SPACES_QUESTION_FILE")
    return {"body": text}


def awaited_answer(client: SpacesClient, number: int, question: dict) -> dict[str, str]:
    """Ask, keeping the claim (its lease paused), and wait for the answer: the environment the
    command runs with again. A question that expires or is withdrawn unanswered fails the work."""
    asked = client.ask(number, hold=True, wait=60, **question)
    out(f"asked question {asked['id']} on task {number}; waiting for the answer")
    while asked["state"] == "open":
        time.sleep(ANSWER_POLL_SECONDS)
        asked = next(q for q in client.questions(number)["results"] if q["id"] == asked["id"])
    if asked["state"] != "answered":
        raise CommandFailed(f"question {asked['id']} {asked['state']} with no answer")
    out(f"answered: {asked['option'] or asked['answer']}")
    return {"SPACES_ANSWER": asked["answer"] or asked["option"] or "", "SPACES_ANSWER_OPTION": asked["option"] or ""}


COST_FIELDS = ("usd", "input_tokens", "output_tokens", "model")


def reported_cost(cost_file: Path, seconds: float) -> dict:
    """The command's wall time, and what it wrote to $SPACES_COST_FILE (a JSON object; anything
    else is said on stderr and left out)."""
    cost: dict[str, Any] = {"seconds": round(seconds, 3)}
    if cost_file.exists():
        try:
            written = json.loads(cost_file.read_text())
            if not isinstance(written, dict):
                raise ValueError("not a JSON object")
            cost.update({name: written[name] for name in COST_FIELDS if name in written})
        except (ValueError, OSError) as error:
            print(f"spaces work: $SPACES_COST_FILE ignored ({error})", file=sys.stderr)
    return cost


class CommandFailed(Exception):
    """The command of ``spaces work`` did not succeed: its claim goes back."""


def refused(refusal: SpacesRefusal) -> str:
    """The refusal, with what it names: the winner of a conflict, the fields of a 422."""
    lines = [f"refused: {refusal}"]
    if refusal.body.get("winner"):
        lines.append(f"winner: {json.dumps(refusal.body['winner'])}")
    for field, problems in (refusal.body.get("fields") or {}).items():
        lines.append(f"  {field}: {'; '.join(map(str, problems)) if isinstance(problems, list) else problems}")
    return "\n".join(lines)


def out(text: str) -> None:
    """Print, and leave quietly when the reader has gone (``spaces tasks | head``)."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


if __name__ == "__main__":
    sys.exit(main())
