"""The layout holds (docs/architecture.md): no module imports another that imports it back,
directly or through others, at the top or inside a function; the apps never import a front;
and the tasks app stays a part of the whole, not most of it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("allocation", "commands", "common", "costs", "events", "exports", "fronts", "idempotency", "spaces", "tasks",
            "telemetry", "webhooks")
DOMAIN = ("allocation", "calls", "common", "costs", "events", "exports", "idempotency", "spaces", "tasks", "webhooks")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def production_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
            if "migrations" not in path.parts and "management" not in path.parts}


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports anywhere in it (``from a import b`` counts ``a.b``
    when that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def graph() -> dict[str, set[str]]:
    modules = production_modules()
    known = set(modules)
    # A package's __init__ is not a dependency of its own modules' imports of each other.
    return {name: {other for other in imports(path, known) if other != name} for name, path in modules.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_through_others():
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_apps_never_import_a_front():
    offenders = {name: sorted(other for other in targets if other.startswith("fronts"))
                 for name, targets in graph().items() if name.startswith(DOMAIN)}
    assert {name: targets for name, targets in offenders.items() if targets} == {}


def production_files() -> list[Path]:
    """The project's own modules: no tests, benchmarks, migrations, vendored kit or environments."""
    left_out = {"tests", "benchmarks", "migrations", "third_party"}
    return [path for path in ROOT.rglob("*.py") if not any(
        part in left_out or part.startswith(".") for part in path.relative_to(ROOT).parts)]


def test_the_tasks_app_is_under_three_tenths_of_production_code():
    def lines(paths) -> int:
        return sum(len(path.read_text().splitlines()) for path in paths)

    production = production_files()
    tasks = [path for path in production if path.relative_to(ROOT).parts[0] == "tasks"]
    assert lines(tasks) / lines(production) < 0.30


TRANSACTION_STATE = re.compile(r"\b(atomic_blocks|get_autocommit|set_autocommit|transaction_status)\b|\.autocommit\s*=")


def test_no_module_reads_or_changes_the_transactions_state():
    """One transaction mode, decided by the runner (docs/architecture.md): no production module
    reads or toggles the transaction's state by hand."""
    production = production_files()
    found = [(str(path.relative_to(ROOT)), match.group(0)) for path in production
             for match in TRANSACTION_STATE.finditer(path.read_text())]
    assert found == []
    assert TRANSACTION_STATE.search("connection.connection.autocommit = True")  # the pattern finds a toggle


def takes_a_unit(source: str) -> bool:
    """Whether code names a ``unit``: a parameter, a variable or a keyword argument."""
    return any(isinstance(node, ast.arg) and node.arg == "unit" or isinstance(node, ast.Name) and node.id == "unit"
               or isinstance(node, ast.keyword) and node.arg == "unit" for node in ast.walk(ast.parse(source)))


def test_services_take_their_inputs_not_the_unit():
    """The unit of work is the runner's, the command layer's and the fronts': the services below
    them take what they need (the operation, the unit's lock as a statement takes it) as inputs,
    so none can end, commit or split a transaction it did not open."""
    below = [path for package in (*DOMAIN, "telemetry") for path in (ROOT / package).rglob("*.py")
             if not {"migrations", "management"} & set(path.parts) and path.name != "commands.py"]
    found = sorted(str(path.relative_to(ROOT)) for path in below if takes_a_unit(path.read_text()))
    assert found == []
    assert takes_a_unit("def f(*, unit): unit.commit_phase()") and not takes_a_unit('"""the unit: ..."""')


def test_telemetry_imports_no_app():
    """Counting and tracing are at the bottom: every app imports them, so they import none."""
    offenders = {name: sorted(targets) for name, targets in graph().items()
                 if name.startswith("telemetry") and any(not t.startswith("telemetry") for t in targets)}
    assert offenders == {}


def test_the_command_layer_imports_no_front():
    offenders = {name: sorted(t for t in targets if t.startswith("fronts"))
                 for name, targets in graph().items() if name.startswith("commands")}
    assert {name: targets for name, targets in offenders.items() if targets} == {}


# The fronts' imports of an app's services: every change a command, every shared read a selector.
# Left, on purpose: the admin's two maintenance actions, an operator's and no member's (expire
# reservations now, expire idempotent operations now), which are the sweep's own services.
SERVICES_LEFT_IN_FRONTS = {
    ("fronts.admin.allocation", "allocation.services"), ("fronts.admin.allocation", "idempotency.services"),
}


def test_the_fronts_import_no_more_services_than_those_left():
    found = {(name, other) for name, targets in graph().items() if name.startswith("fronts")
             for other in targets if other.endswith(".services")}
    assert found - SERVICES_LEFT_IN_FRONTS == set()


HTTP = re.compile(r"^\s*(from|import) (django\.http|rest_framework\.(request|response))\b", re.M)


def test_a_domain_app_reads_no_request_and_writes_no_response():
    """HTTP is the fronts': below them, only the one problem renderer (common.problems, which
    DRF's exception handler and the fronts call) names a request or a response."""
    found = sorted(name for name, path in production_modules().items()
                   if name.startswith(DOMAIN) and name != "common.problems" and HTTP.search(path.read_text()))
    assert found == []
    assert HTTP.search("from django.http import QueryDict") and not HTTP.search('"""django.http"""')


WRITES = re.compile(r"\.objects\.(create|bulk_create|get_or_create|update_or_create)\(|"
                    r"\.objects\.[^\n]*\.(update|delete|create|bulk_create)\(|^\s*\w+\.(save|delete)\(", re.M)


def test_a_front_writes_no_row_itself():
    """Every change from a front is a command (its service writes): no front saves, updates,
    creates or deletes a model's rows on its own."""
    found = sorted(name for name, path in production_modules().items()
                   if name.startswith("fronts") and WRITES.search(path.read_text()))
    assert found == []
    assert WRITES.search("    Task.objects.filter(pk=1).update(status='open')") and WRITES.search("        obj.save()")
    assert not WRITES.search("        # What formset.save() would have recorded")


SQL_TEXT = re.compile(r"""(?:^|[^\w])f?["'](SELECT|INSERT INTO|UPDATE|DELETE FROM|WITH|LISTEN|EXPLAIN) """, re.M)
# A front's own probes, which read no app's table: the readiness check's "SELECT 1", and the
# admin's estimate of a long list's count (EXPLAIN of the admin's own compiled query).
SQL_LEFT_IN_FRONTS = {"fronts.operator.health", "fronts.admin.tasks"}


def test_each_apps_hand_written_sql_is_in_its_sql_module():
    """SQL by name: an app's statements are built in its ``sql.py`` (named, described, from the
    models' metadata), and run by name elsewhere; ``common`` holds the helpers they are built with."""
    found = sorted(name for name, path in production_modules().items()
                   if not name.startswith("common") and not name.endswith(".sql")
                   and name not in SQL_LEFT_IN_FRONTS and SQL_TEXT.search(path.read_text()))
    assert found == []
    assert SQL_TEXT.search('cursor.execute(f"SELECT {x}")') and SQL_TEXT.search("sql = 'WITH a AS (…)'")
    assert not SQL_TEXT.search('"""Select the next task"""')
