"""The client and CLI are a package of their own (client/): installable alone into a clean
virtual environment, standard library only, Python 3.9 or newer."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from tests.conftest import load_agent_lab
from tests.factories import member_with_key
from tests.live_server import ROOT, gunicorn

pytestmark = [pytest.mark.slow]


def test_the_client_is_written_for_python_3_9():
    for path in (ROOT / "spaces_client").glob("*.py"):
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 9))


@pytest.mark.django_db(transaction=True)
def test_pip_install_client_alone_gives_a_working_spaces_command_without_django(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", str(ROOT / "client")],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    python, spaces = str(venv / "bin" / "python"), str(venv / "bin" / "spaces")
    assert subprocess.run([python, "-c", "import django"], capture_output=True).returncode != 0  # no server parts
    location = subprocess.run([python, "-c", "import spaces_client; print(spaces_client.__file__)"],
                              capture_output=True, text=True, cwd=tmp_path).stdout
    assert str(venv) in location  # the installed copy, not the checkout
    helped = subprocess.run([spaces, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert helped.returncode == 0 and "work" in helped.stdout and "next" in helped.stdout
    space = load_agent_lab()
    _, key = member_with_key(space, "writer", "remote-agent")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    with gunicorn(workers=1) as base:
        env.update(SPACES_URL=f"{base}/v1/spaces/agent-lab", SPACES_KEY=key)
        created = subprocess.run([spaces, "create", "Retry policy"], capture_output=True, text=True, env=env,
                                 cwd=tmp_path, timeout=60)
        claimed = subprocess.run([spaces, "next", "--wait", "1"], capture_output=True, text=True, env=env,
                                 cwd=tmp_path, timeout=60)
    assert created.returncode == 0 and created.stdout.startswith("task 1"), created.stdout + created.stderr
    assert claimed.returncode == 0 and claimed.stdout.startswith("claimed task 1"), claimed.stdout
