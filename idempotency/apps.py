from django.apps import AppConfig


class IdempotencyConfig(AppConfig):
    """Operations, their observations, the first touch and settlement (SPEC §7)."""

    name = "idempotency"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from idempotency import errors  # noqa: F401  (registers the refusals)
