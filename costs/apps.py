from django.apps import AppConfig


class CostsConfig(AppConfig):
    name = "costs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from costs import errors  # noqa: F401  (registers the refusals)
