"""Which of the project's modules one keyed create runs through, and how many of their functions
(a profiler hook around one request through the whole stack, middleware to answer).

    .venv/bin/python benchmarks/module_walk.py [--route create|next]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints the modules; asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, fresh_database  # noqa: E402


def walk(call) -> dict[str, set[str]]:
    """The project's modules (by path) ``call`` entered, with the functions entered in each."""
    seen: dict[str, set[str]] = {}
    root = str(ROOT) + "/"

    def hook(frame, event, arg) -> None:
        if event == "call":
            path = frame.f_code.co_filename
            if path.startswith(root) and "/.venv/" not in path and "/benchmarks/" not in path:
                seen.setdefault(path[len(root):], set()).add(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", choices=["create", "next"], default="create")
    args = parser.parse_args()
    fresh_database()
    from django.test import Client

    from spaces import services

    space = services.create_space(slug="walk", name="walk")
    key = services.issue_key(member=services.add_member(space=space, role="writer", name="walker"))[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    path = "/v1/spaces/walk/tasks" if args.route == "create" else "/v1/spaces/walk/next"

    def send(n: int):
        body = {"title": f"walk the stack {n}"} if args.route == "create" else {}
        return client.post(path, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=f"walk-{n}")

    client.post("/v1/spaces/walk/tasks", {"title": "warm up"}, content_type="application/json")
    send(0)  # every module imported and every cache warm before the walk (statements built once)
    send(1)
    seen = walk(lambda: send(2))
    for module in sorted(seen):
        print(f"{module:40} {len(seen[module]):3} functions")
    print(f"{args.route} with an Idempotency-Key: {len(seen)} modules, {sum(map(len, seen.values()))} functions")


if __name__ == "__main__":
    main()
