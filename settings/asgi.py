"""ASGI entry point (the service is synchronous; gunicorn with WSGI is the production path)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings.base")

application = get_asgi_application()
