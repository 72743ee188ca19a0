from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the refusals, and the share token's reissuer (spaces.secrets).
        from exports import api, errors  # noqa: F401
