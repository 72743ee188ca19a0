"""Benchmark settings: the service plus baseline endpoints that exist only here."""
from settings.base import *  # noqa: F401,F403

ROOT_URLCONF = "benchmarks.urls"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
