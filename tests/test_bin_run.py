"""`bin/run` three times, with a data folder of its own: one demo steward across runs, a fresh key each
time (the previous one revoked), and everything it started stopped by a TERM."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import uuid

import httpx
import pytest

from tests.live_server import ROOT, free_port

pytestmark = [pytest.mark.slow]


def start(name: str, port: int) -> tuple[subprocess.Popen, str, str]:
    """Start bin/run (no DATABASE_URL: its own embedded server) and read its banner, which it
    prints once the server answers: the process, the key it printed, and what it printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(SPACES_RUN_NAME=name, SPACES_PORT=str(port))
    process = subprocess.Popen(["bin/run"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    output, key = [], None
    for line in process.stdout:
        output.append(line)
        match = re.match(r"^\s+(sk_\w+)\s*$", line)
        key = match.group(1) if match else key
        if key and "export SPACES_URL=" in line:
            break
    assert key, "".join(output)
    # Keep reading what it prints (the server's request log), so a full pipe never stalls it.
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    return process, key, "".join(output)


def manage(name: str, *args: str) -> subprocess.CompletedProcess:
    """``manage.py`` as in another shell beside ``bin/run``: no DATABASE_URL, no secret, no debug."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    env["SPACES_RUN_NAME"] = name
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise


def run_files(name: str) -> list:
    """What a bin/run of this name keeps: its database folder, secret key, admin password, env file."""
    return [ROOT / ".postgres" / name, ROOT / ".postgres" / f"{name}.secret_key",
            ROOT / ".postgres" / f"{name}.admin_password", ROOT / ".postgres" / f"{name}.env"]


def cleanup_run(name: str) -> None:
    for path in run_files(name):
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def test_every_run_keeps_one_demo_steward_revokes_the_last_key_and_stops_what_it_started():
    name = f"runtest-{uuid.uuid4().hex[:8]}"
    data = run_files(name)
    try:
        keys, output = [], ""
        for _ in range(3):
            port = free_port()
            process, key, printed = start(name, port)
            try:
                api = f"http://127.0.0.1:{port}/v1/spaces/agent-lab"
                # The banner came once the server answered: the first request needs no retry.
                members = httpx.get(f"{api}/members", headers={"Authorization": f"Bearer {key}"}, timeout=10)
                assert members.status_code == 200, members.text
                assert [m["name"] for m in members.json()["results"]] == ["demo-steward"]  # one member, every run
                for old in keys:  # each run revokes the key the one before printed
                    assert httpx.get(f"{api}/tasks", headers={"Authorization": f"Bearer {old}"}).status_code == 401
                if not keys:  # manage.py in another shell finds bin/run's database, secret and debug
                    beside = manage(name, "sweep", "--dry-run")
                    assert beside.returncode == 0, beside.stdout + beside.stderr
            finally:
                stop(process)
            keys.append(key)
            output = printed
        assert len(set(keys)) == 3
        base = f"http://127.0.0.1:{port}"
        assert f"{base}/board/agent-lab/" in output and f"export SPACES_URL={api} SPACES_KEY={key}" in output
        assert f'"url": "{base}/mcp"' in output and f'"Authorization": "Bearer {key}"' in output  # an MCP client's
        assert f"{base}/a2a/agent-lab/.well-known/agent-card.json" in output
        assert "user admin" in output and data[2].stat().st_mode & 0o077 == 0  # the admin password: owner-only
        # A quiet start: no warning of our own set-up, each line of Django's once.
        noise = [line for line in output.splitlines() if re.search(r"warn|deprecat|error", line, re.I)
                 and "This is a development server" not in line]
        assert noise == [], noise
        assert output.count("Watching for file changes") == 1, output
        leftovers = subprocess.run(["pgrep", "-f", f".postgres/{name}"], capture_output=True, text=True).stdout
        assert leftovers == "", "the embedded server outlived bin/run"
        stopped = manage(name, "sweep", "--dry-run")  # with nothing running: how to start it, in one line
        assert stopped.returncode == 2 and len(stopped.stderr.strip().splitlines()) == 1
        assert "bin/run" in stopped.stderr and "Traceback" not in stopped.stderr
    finally:
        cleanup_run(name)


def test_a_busy_port_stops_it_before_it_starts_anything():
    """With the port taken, bin/run says so and exits non-zero before it starts the database
    or revokes a key, and leaves no process behind."""
    import socket

    name = f"runtest-{uuid.uuid4().hex[:8]}"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(SPACES_RUN_NAME=name, SPACES_PORT=str(port))
        run = subprocess.run(["bin/run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert f"port {port} is in use" in run.stderr
    assert "sk_" not in run.stdout  # no key was made (none revoked)
    leftovers = subprocess.run(["pgrep", "-f", f".postgres/{name}"], capture_output=True, text=True).stdout
    assert leftovers == "" and not (ROOT / ".postgres" / name).exists()


def test_help_says_what_it_does_and_starts_nothing():
    for flag in ("--help", "-h"):
        done = subprocess.run(["bin/run", flag], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Run the service on http://127.0.0.1:8000" in done.stdout, done.stderr
        assert "starting" not in done.stdout and "set -euo" not in done.stdout
    wrong = subprocess.run(["bin/run", "--nope"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "bin/run --help" in wrong.stderr
