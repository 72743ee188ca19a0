"""WSGI entry point: ``gunicorn settings.wsgi:application`` (gunicorn.conf.py names it)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")

from common import gate  # noqa: E402  (after the settings module is named)
from fronts.operator import health
from telemetry import tracing  # noqa: E402

tracing.instrument()  # only when OTEL_* ask for traces; each worker starts its exporter (gunicorn.conf.py)
# Each request holds one of the process's few running slots; a waiting one gives it back.
# Health checks are answered in front of it all (fronts.operator.health).
application = health.wrap(gate.wrap(get_wsgi_application()))
