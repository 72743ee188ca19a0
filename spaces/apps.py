from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing each app's errors module fills the one refusal registry that both the
        # exception handler and GET /v1/reference read.
        from spaces import errors, schema  # noqa: F401
