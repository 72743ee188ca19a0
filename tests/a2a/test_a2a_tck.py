"""The official A2A conformance kit (``third_party/a2a-tck``, the TCK's mandatory category) against
a served space, on each binding, while an agent of the space claims the work sent to it (the
kit waits for its tasks to be worked on). The run fails on any finding the kit makes that is not
a deviation listed here, with why: each is a test of the kit's that A2A v1.0 does not ask for, or
that the SPEC answers otherwise (docs/api.md, "A2A conformance", gives each its spec line).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from tests.conftest import FIXTURE
from tests.factories import member_with_key
from tests.live_server import ROOT, gunicorn
from spaces import services
from spaces.catalog import parse_catalog_row

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

KIT = ROOT / "third_party" / "a2a-tck"
VENV = ROOT / ".venv-tck"  # the kit's own environment: it brings pytest plugins of its own

LISTING = "tests/mandatory/protocol/test_tasks_list_method.py::"
# A kit test A2A v1.0 does not ask for, with why. Every one fails on both bindings.
DEVIATIONS = {
    # The kit gives each listing test a context id of its own to count its tasks by; a space is
    # one context, its slug (SPEC §18), and A2A v1.0 §3.4.1 lets an agent refuse a client's
    # context ("MAY accept", and "MUST reject" one it cannot take): the creates are refused.
    **{LISTING + name: "a context id of the kit's own" for name in (
        "TestFiltering::test_filter_by_context_id",
        "TestFiltering::test_combined_filters",
        "TestPagination::test_custom_page_size",
        "TestPagination::test_page_token_navigation",
        "TestPagination::test_last_page_detection",
        "TestPagination::test_total_size_accuracy",
        "TestEdgeCasesAndErrors::test_default_page_size_is_50",
    )},
    # ListTasksResponse.page_size is "the page size used for this response" (a2a.proto), the
    # size asked for or 50, as the A2A SDK's own server answers; the kit takes it for the count
    # of tasks on the page.
    **{LISTING + name: "pageSize is the page's size, not its count" for name in (
        "TestBasicListing::test_list_tasks_empty_when_none_exist",
        "TestPagination::test_default_page_size",
    )},
    # The kit flags words anywhere in the public card: the security scheme's name
    # (spaces_api_key), the catalog's own titles ("token spend dashboard"), and the host the kit
    # itself dialled (127.0.0.1). A2A v1.0 asks that a card hold no secrets; it holds none.
    "tests/mandatory/security/test_agent_card_security.py::test_sensitive_information_protection":
        "words, not secrets",
}


def kit_environment() -> Path:
    """``.venv-tck`` with the kit's pinned packages, made again when the pins change."""
    lock = KIT / "requirements.lock"
    stamp = VENV / f".installed-{hashlib.sha256(lock.read_bytes()).hexdigest()[:16]}"
    if not stamp.exists():
        uv = ROOT / ".venv" / "bin" / "uv"
        subprocess.run([str(uv), "venv", "--quiet", "--allow-existing", "--python", str(ROOT / ".venv" / "bin" / "python"),
                        str(VENV)], check=True, timeout=300)
        subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(VENV / "bin" / "python"), "-r", str(lock)],
                       check=True, timeout=600)
        stamp.touch()
    return VENV / "bin" / "python"


def agent_space(slug: str) -> tuple[str, str]:
    """A space with the agent-lab catalog: the steward's key the kit calls with, and an agent's."""
    data = json.loads(FIXTURE.read_text())
    space = services.create_space(slug=slug, name=f"Conformance {slug}")
    services.import_catalog(space=space, rows=[parse_catalog_row(r) for r in data["catalog"]])
    return member_with_key(space, "steward", "conformance-kit")[1], member_with_key(space, "writer", "agent")[1]


def agent_at_work(base: str, slug: str, key: str, stop: threading.Event) -> None:
    """An agent of the space: it claims what is sent to it as it comes (``next`` with ``wait``)."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        while not stop.is_set():
            try:
                http.post(f"/v1/spaces/{slug}/next", json={"wait": 1})
            except httpx.HTTPError:
                stop.wait(0.2)


def kit_run(python: Path, base: str, slug: str, key: str, transport: str, report: Path) -> dict[str, str]:
    """Each of the kit's mandatory tests run over ``transport``, with its outcome."""
    env = {**os.environ, "A2A_AUTH_TYPE": "bearer", "A2A_AUTH_TOKEN": key, "PYTHONPATH": str(KIT.parent),
           "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run(
        [str(python), "-m", "pytest", "tests/mandatory/", f"--sut-url={base}/a2a/{slug}", "--test-scope=all",
         "-m", "mandatory or mandatory_protocol or mandatory_jsonrpc", "--transports", transport,
         "-p", "a2a_tck_space_card", "-p", "no:cacheprovider", "-q", "--tb=line",
         "--json-report", f"--json-report-file={report}"],
        cwd=KIT, env=env, capture_output=True, text=True, timeout=900)
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    tests = json.loads(report.read_text())["tests"]
    return {test["nodeid"]: test["outcome"] for test in tests}


@pytest.mark.parametrize("transport", ["jsonrpc", "rest"])
def test_the_a2a_conformance_kit_finds_only_the_named_deviations(transport: str, tmp_path: Path):
    python = kit_environment()
    slug = f"tck-{transport}"
    key, agent_key = agent_space(slug)
    stop = threading.Event()
    with gunicorn(workers=2, threads=4) as base:
        agent = threading.Thread(target=agent_at_work, args=(base, slug, agent_key, stop), daemon=True)
        agent.start()
        try:
            outcomes = kit_run(python, base, slug, key, transport, tmp_path / "report.json")
        finally:
            stop.set()
            agent.join(timeout=30)
    failed = {test for test, outcome in outcomes.items() if outcome in ("failed", "error")}
    passed = {test for test, outcome in outcomes.items() if outcome == "passed"}
    assert len(passed) >= 60, outcomes  # the kit ran: its core tests answer, not just its setup
    assert failed - DEVIATIONS.keys() == set(), sorted(failed - DEVIATIONS.keys())
    # A deviation that stops failing is taken off the list (and docs/api.md) in the same change.
    assert DEVIATIONS.keys() - failed == set(), sorted(DEVIATIONS.keys() - failed)
