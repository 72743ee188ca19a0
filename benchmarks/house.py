"""The house at a commit: each top-level package's production modules and lines, and the import
arrows that run up (an app importing a front, or the old ``operations`` package and the apps
importing each other). Reads the commit from git, so two commits compare without a checkout:

    .venv/bin/python benchmarks/house.py 74d2896 HEAD
"""
from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter

LEFT_OUT = ("tests/", "benchmarks/", "third_party/", "devserver/", "settings/", "client/", "spaces_client/")
APPS = {"allocation", "common", "costs", "events", "exports", "idempotency", "spaces", "tasks", "webhooks",
        "telemetry", "commands"}
UP = {"fronts", "operations"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def house(commit: str) -> tuple[Counter, Counter, list[tuple[str, str]]]:
    files, lines, arrows = Counter(), Counter(), []
    for path in git("ls-tree", "-r", "--name-only", commit).split():
        if not path.endswith(".py") or "/" not in path or "/migrations/" in path or path.startswith(LEFT_OUT):
            continue
        top, source = path.split("/")[0], git("show", f"{commit}:{path}")
        files[top] += 1
        lines[top] += source.count("\n")
        for node in ast.walk(ast.parse(source)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            for name in names:
                target = name.split(".")[0]
                if (top in APPS and target in UP) or (top == "operations" and target in APPS - {"common"}):
                    arrows.append((path, name))
    return files, lines, arrows


def main(commits: list[str]) -> None:
    for commit in commits:
        files, lines, arrows = house(commit)
        print(f"== {commit}: {sum(files.values())} modules, {sum(lines.values())} lines, {len(arrows)} arrows up")
        for top in sorted(files):
            print(f"  {top:12} {files[top]:3} modules {lines[top]:6} lines")
        for path, name in sorted(set(arrows)):
            print(f"  up: {path} -> {name}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["HEAD"])
