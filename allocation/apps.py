from django.apps import AppConfig


class AllocationConfig(AppConfig):
    name = "allocation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from allocation import errors  # noqa: F401  (registers the refusals)
