from django.contrib import admin
from django.urls import include, path
from django.views.decorators.cache import cache_page
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from fronts.rest.urls import urlpatterns as API_ROUTES
from fronts.board.views import board_data_view, board_duplicates_view, board_page, board_task_view
from fronts.board.actions import board_action_view
from fronts.board.webhooks import webhook_action_view, webhooks_page
from fronts.home import favicon, home
from fronts.mcp.http import MCPEndpoint, protected_resource_view
from fronts.operator.metrics import metrics_view

# The admin reads as this product, not as Django's.
admin.site.site_header = "Spaces"
admin.site.site_title = "Spaces"
admin.site.index_title = "Spaces administration"
admin.site.index_template = "admin/spaces_index.html"  # Django's index, with each space's board on top

# The API's routes first, in one include: a request resolves its route without trying the
# browser's routes, and matches "v1/" once.
urlpatterns = [
    path("v1/", include(API_ROUTES)),
    path("", home, name="home"),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics_view, name="metrics"),  # SPEC §20: a token, or loopback
    path("admin/", admin.site.urls),
    # The board (SPEC §14): staff users with view_task, logged in as for the admin.
    path("board/<slug:slug>/", board_page, name="board"),
    path("board/<slug:slug>/data", board_data_view, name="board-data"),
    path("board/<slug:slug>/duplicates", board_duplicates_view, name="board-duplicates"),
    path("board/<slug:slug>/tasks/<int:number>", board_task_view, name="board-task"),
    path("board/<slug:slug>/tasks/<int:number>/<slug:action>", board_action_view, name="board-action"),
    path("board/<slug:slug>/webhooks", webhooks_page, name="board-webhooks"),
    path("board/<slug:slug>/webhooks/<int:webhook_id>/<slug:action>", webhook_action_view, name="board-webhook-action"),
    path("board/<slug:slug>/webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/retry", webhook_action_view,
         {"action": "retry"}, name="board-webhook-delivery-retry"),
    # MCP for agents, authenticated with the member's API key like the REST routes.
    path("mcp", MCPEndpoint.as_view(), name="mcp"),
    # SPEC §23, RFC 9728: how a client authenticates to /mcp (at the root, and for /mcp's path).
    path(".well-known/oauth-protected-resource", protected_resource_view, name="protected-resource"),
    path(".well-known/oauth-protected-resource/mcp", protected_resource_view, name="protected-resource-mcp"),
    # A2A (SPEC §18): a space as an agent other agents hand work to, with the member's API key.
    path("", include("fronts.a2a.urls")),
    # The schema is the same for every request of a deployment: built once per process an hour.
    path("v1/schema", cache_page(60 * 60)(SpectacularAPIView.as_view()), name="schema"),
    # Swagger UI with its start-up script served as a file of its own, so the page's
    # Content-Security-Policy allows no inline script.
    path("v1/docs", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
]

handler400 = "common.problems.bad_request_view"
handler403 = "common.problems.permission_denied_view"
handler404 = "common.problems.not_found_view"
handler500 = "common.problems.server_error_view"

# Unknown routes under /v1/ answer the JSON 404 in every mode (handler404 alone only
# applies when DEBUG is off).
from django.urls import re_path  # noqa: E402

from common.problems import not_found_view  # noqa: E402
from fronts.mcp.http import mcp_not_found_view  # noqa: E402

urlpatterns.append(re_path(r"^v1/", not_found_view))
urlpatterns.append(re_path(r"^mcp/", mcp_not_found_view))
