from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from exports import commands, errors  # noqa: F401  (registers the refusals and the share's reissuer)
