from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing each app's errors module fills the one refusal registry that both the
        # exception handler and GET /v1/reference read.
        from django.contrib.auth.signals import user_login_failed

        from spaces import errors, schema  # noqa: F401
        from spaces.browser_middleware import count_failed_login

        user_login_failed.connect(count_failed_login, dispatch_uid="spaces.count_failed_login")
