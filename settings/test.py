"""Settings for the test suite: production's (debug off), with a throwaway secret key, plain
HTTP and Django's test client host. Real server processes started by tests get their own
environment (tests/live_server.py)."""
import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-never-used-outside-the-test-suite-0123456789")
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")

from settings.base import *  # noqa: E402,F401,F403
from settings.base import ALLOWED_HOSTS  # noqa: E402

ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]
