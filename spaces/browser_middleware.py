"""Django's session, login and message middleware, stepping aside on the API.

They serve the admin's pages. The API under /v1/ authenticates every request with a
bearer key and sets no cookie, so on its paths they only spent time. Subclasses rather
than a wrapper, so the admin's checks still find them in ``MIDDLEWARE``. CSRF and
X-Frame-Options stay Django's own everywhere: cheap, and what ``check --deploy`` looks for.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpResponse

from spaces import throttles

API_PREFIX = "/v1/"


def is_api_request(request) -> bool:
    return request.path_info.startswith(API_PREFIX)


class BrowserOnly:
    def __call__(self, request):
        if is_api_request(request):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(BrowserOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(BrowserOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(BrowserOnly, messages.MessageMiddleware):
    pass


# The admin, the board and the API docs load nothing from outside the server; the policy says
# so to the browser, so an injected script or style from elsewhere does not run. (Inline style
# attributes stay allowed: Django's admin templates and Swagger UI use a few.)
ADMIN_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
             "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
             "frame-ancestors 'none'")


PAGES_UNDER_CSP = ("/admin/", "/board/", "/v1/docs")


class AdminContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path_info.startswith(PAGES_UNDER_CSP):
            response.setdefault("Content-Security-Policy", ADMIN_CSP)
        return response


class AdminLoginThrottleMiddleware:
    """Failed admin logins are counted per client address (``spaces.throttles``, through the
    ``user_login_failed`` signal); past the limit a login attempt is refused before it is checked."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path_info == "/admin/login/":
            if throttles.over("admin_login", throttles.client_address(request),
                              settings.SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE):
                response = HttpResponse("Too many failed logins from your address; try again in a minute.",
                                        status=429, content_type="text/plain")
                response["Retry-After"] = "60"
                return response
        return self.get_response(request)


def count_failed_login(sender, credentials, request=None, **kwargs) -> None:
    """``user_login_failed``: one more failed login for the address (the admin's login form)."""
    if request is not None:
        throttles.hit("admin_login", throttles.client_address(request), settings.SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE)
