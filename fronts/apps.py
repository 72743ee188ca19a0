from django.apps import AppConfig


class FrontsConfig(AppConfig):
    """The adapters people and agents reach the commands through: REST, MCP, the admin, the board
    and the home page. No models: each app owns its tables and commands; a front only reads a
    request, calls a command, and writes its answer."""

    name = "fronts"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_login_failed

        from fronts.browser_middleware import count_failed_login

        # Failed logins to the admin and the board are counted (and throttled) by address and name.
        user_login_failed.connect(count_failed_login, dispatch_uid="spaces.count_failed_login")
        # GET /v1/reference's sections, each described from the code it documents. (The reissuers
        # of secret-bearing answers register with the apps whose commands answer them.)
        from fronts.reference import a2a, agents, allocation, cost, events, fleet, people, tasks  # noqa: F401
        # /v1/schema documents the API key scheme (a drf-spectacular extension registers when loaded).
        from fronts.rest import auth_schema  # noqa: F401
        # An A2A push config's deliveries are rendered by the A2A front (webhooks.formats).
        from fronts.a2a import push  # noqa: F401
