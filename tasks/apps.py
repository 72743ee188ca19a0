from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tasks import errors, reference  # noqa: F401  (registers refusals and sections)
        # The fronts that register themselves: the REST views the share token's reissuer
        # (spaces.secrets), the admin its model pages, the MCP toolset its tools (the MCP
        # library looks for an app's `mcp` module; ours lives with the other fronts).
        from tasks.fronts import admin, mcp, rest  # noqa: F401
