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

from fronts.client_address import client_address
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


# A flood from one address against many names is stopped too, at this many times the per-name limit.
ADDRESS_FACTOR = 10


def login_subjects(request, username: str) -> list[tuple[str, str, int]]:
    """What a failed admin login counts against: the address with the user name (so a flood
    against one name neither locks another person out at the same address nor the right
    password from elsewhere), and the address alone at ADDRESS_FACTOR times the limit."""
    address, limit = client_address(request), settings.SPACES_ADMIN_LOGIN_LIMIT_PER_MINUTE
    return [("admin_login", f"{address} {username.strip().casefold()}"[:128], limit),
            ("login_address", address, limit * ADDRESS_FACTOR)]


class AdminLoginThrottleMiddleware:
    """Failed admin logins are counted per client address and user name (``spaces.throttles``,
    through the ``user_login_failed`` signal); past a limit a login attempt is refused before it
    is checked."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path_info == "/admin/login/":
            username = request.POST.get("username", "")
            if any(throttles.over(scope, subject, limit) for scope, subject, limit in login_subjects(request, username)):
                response = HttpResponse("Too many failed logins for this name from your address; try again in a "
                                        "minute.", status=429, content_type="text/plain")
                response["Retry-After"] = "60"
                return response
        return self.get_response(request)


def count_failed_login(sender, credentials, request=None, **kwargs) -> None:
    """``user_login_failed``: one more failed login for the address and name (the admin's login form)."""
    if request is not None:
        for scope, subject, limit in login_subjects(request, str(credentials.get("username", ""))):
            throttles.hit(scope, subject, limit)
