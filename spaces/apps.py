from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing each app's errors module fills the one refusal registry that both the
        # exception handler and GET /v1/reference read; the commands register the API key's
        # reissuer (a replayed key issue), which the runner may need before any route loads.
        from spaces import commands, errors  # noqa: F401
