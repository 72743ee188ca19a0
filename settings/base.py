"""Settings for the Spaces service, read from the environment (SPEC §9).

DATABASE_URL          postgres://…; unset: the embedded server bin/run starts (devserver.embedded_postgres)
DJANGO_SECRET_KEY     required when DJANGO_DEBUG=0
DJANGO_DEBUG          "0" (default) or "1" (bin/run turns it on)
DJANGO_ALLOWED_HOSTS  comma-separated; default "127.0.0.1,localhost" (plus "testserver" in debug)
"""
from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from common.database_url import parse_database_url
from devserver import embedded_postgres


BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


DEBUG = env_bool("DJANGO_DEBUG", False)  # secure by default: bin/run asks for debug explicitly

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
    SECRET_KEY = "insecure-development-key-only-for-debug-runs-0123456789abcdefghijklmnop"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
if DEBUG:
    ALLOWED_HOSTS += ["testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "spaces",
    "events",
    "allocation",
    "idempotency",
    "tasks",
    "exports",
    "webhooks",
    "costs",
    "calls",
    "fronts",
]

MIDDLEWARE = [
    # Outermost: every request counted, timed and logged as one JSON line (SPEC §20).
    "fronts.operator.requests.RequestTelemetryMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app folders themselves (no collectstatic step needed), compressed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "fronts.rest.body_limits.RequestBodyLimitMiddleware",
    # Sessions, login and messages step aside on the API's /v1/ paths (fronts.browser_middleware).
    "fronts.browser_middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "fronts.browser_middleware.AuthenticationMiddleware",
    "fronts.browser_middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "fronts.browser_middleware.AdminContentSecurityPolicyMiddleware",
    "fronts.browser_middleware.AdminLoginThrottleMiddleware",
    "fronts.rest.middleware.UnitOfWorkMiddleware",
]

ROOT_URLCONF = "settings.urls"
WSGI_APPLICATION = "settings.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

def database_url() -> str:
    """``DATABASE_URL``, or the embedded server that ``bin/run`` keeps running (SPEC §9)."""
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        return url
    url = embedded_postgres.running_url(os.environ.get("SPACES_RUN_NAME", "").strip() or "run")
    if url is None:
        raise ImproperlyConfigured(embedded_postgres.START_HINT)
    return url


DATABASES = {
    "default": parse_database_url(database_url(), conn_max_age=int(os.environ.get("DJANGO_CONN_MAX_AGE", "600")),
                                  pool_size=int(os.environ.get("DJANGO_DB_POOL_SIZE", "0") or 0))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# WhiteNoise serves the apps' static files straight from their folders (WHITENOISE_USE_FINDERS),
# so no collectstatic step is needed; set DJANGO_STATIC_ROOT to collect them somewhere instead.
STATIC_ROOT = os.environ.get("DJANGO_STATIC_ROOT") or None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# SPEC §3: a request body is at most 1 MiB.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["fronts.rest.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["fronts.rest.permissions.IsMember"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["common.json_input.StrictJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "fronts.rest.schema.SpacesAutoSchema",
    "EXCEPTION_HANDLER": "common.problems.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Spaces API",
    "DESCRIPTION": "Coordination for teams of AI agents: tasks created once, retries that are safe.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/v1",
    # Every operation's refusals, with SPEC §3's problem body (fronts/rest/schema.py).
    "COMPONENT_SPLIT_REQUEST": True,  # a body's schema apart from the answer's: strict, and as sent
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "fronts.rest.schema.document_refusals"],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI from our own static files (drf-spectacular-sidecar), never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A choice set several components share, named once (SPEC §21: a member is an agent or a person).
    "ENUM_NAME_OVERRIDES": {"MemberKindEnum": "spaces.models.MemberKind"},
}

# The MCP front: stateless streamable HTTP, so any server process can answer.
DJANGO_MCP_GLOBAL_SERVER_CONFIG = {"name": "spaces", "stateless": True}
DJANGO_MCP_GET_SERVER_INSTRUCTIONS_TOOL = False

# Spaces' own knobs.
SPACES_OPERATION_LEASE_SECONDS = int(os.environ.get("SPACES_OPERATION_LEASE_SECONDS", "30"))
# Exports (SPEC §7.3): attempts before an export is failed, and rows written per stored chunk.
SPACES_EXPORT_MAX_ATTEMPTS = int(os.environ.get("SPACES_EXPORT_MAX_ATTEMPTS", "5"))
SPACES_EXPORT_BATCH_ROWS = int(os.environ.get("SPACES_EXPORT_BATCH_ROWS", "5000"))
SPACES_OPERATION_RETENTION_HOURS = int(os.environ.get("SPACES_OPERATION_RETENTION_HOURS", "24"))
# SPEC §3 Abuse (spaces.throttles): failed authentications and failed admin logins a client
# address may make in a minute, and the proxies whose X-Forwarded-For names the client.
SPACES_BAD_KEY_LIMIT_PER_MINUTE = int(os.environ.get("SPACES_BAD_KEY_LIMIT_PER_MINUTE", "60"))
SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE = int(os.environ.get("SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE", "10"))
# Each server process keeps the bind indexes of the catalogs it binds against, the least
# recently used evicted past this many bytes.
SPACES_CATALOG_CACHE_BYTES = int(os.environ.get("SPACES_CATALOG_CACHE_BYTES", str(256 * 1024 * 1024)))
# Webhooks (SPEC §17) go to https:// URLs on public addresses only; bin/run allows plain
# http and private addresses for a first run on one machine. Production sets neither.
SPACES_WEBHOOK_ALLOW_HTTP = env_bool("SPACES_WEBHOOK_ALLOW_HTTP", False)
SPACES_WEBHOOK_ALLOW_PRIVATE = env_bool("SPACES_WEBHOOK_ALLOW_PRIVATE", False)
# GET /metrics (SPEC §20): a scraper presents this as a bearer token; unset, loopback only.
SPACES_METRICS_TOKEN = os.environ.get("SPACES_METRICS_TOKEN", "").strip()
# /mcp refuses a request whose Origin is not this server's own (the MCP transport's defence
# against DNS rebinding); a browser-based MCP client served from elsewhere is listed here.
SPACES_MCP_ALLOWED_ORIGINS = [o.strip() for o in os.environ.get("SPACES_MCP_ALLOWED_ORIGINS", "").split(",")
                              if o.strip()]
SPACES_TRUSTED_PROXIES = [p.strip() for p in os.environ.get("SPACES_TRUSTED_PROXIES", "").split(",") if p.strip()]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # WARNING and up: Django's own "django" logger prints its INFO lines (the autoreloader's
    # "Watching for file changes") itself, and would print each twice through the root here.
    "handlers": {"console": {"class": "logging.StreamHandler", "level": "WARNING"},
                 # One JSON line per request (fronts.operator.requests), as it is.
                 "requests": {"class": "logging.StreamHandler", "formatter": "message"}},
    "formatters": {"message": {"format": "%(message)s"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    # Refusals (4xx) are answers, not incidents: log server errors only (REST and MCP alike; an
    # MCP tool answers a refusal as its result, so the SDK logs nothing for it).
    "loggers": {
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "spaces.requests": {"handlers": ["requests"], "level": os.environ.get("SPACES_REQUEST_LOG_LEVEL", "INFO"),
                            "propagate": False},
    },
}

if not DEBUG:
    # TLS is terminated by the proxy in front of gunicorn; it sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
