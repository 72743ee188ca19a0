from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from events import errors  # noqa: F401  (registers the refusals)
