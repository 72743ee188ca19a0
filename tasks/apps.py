from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tasks import errors, reference  # noqa: F401  (registers refusals and sections)
        # The fronts that register themselves: the REST views the share token's reissuer
        # (spaces.secrets), the admin its model pages. (The MCP tools load with the first MCP
        # request: tasks.fronts.mcp_http.)
        from tasks.fronts import admin, rest  # noqa: F401
