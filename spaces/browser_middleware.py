"""Django's session, login and message middleware, stepping aside on the API.

They serve the admin's pages. The API under /v1/ authenticates every request with a
bearer key and sets no cookie, so on its paths they only spent time. Subclasses rather
than a wrapper, so the admin's checks still find them in ``MIDDLEWARE``. CSRF and
X-Frame-Options stay Django's own everywhere: cheap, and what ``check --deploy`` looks for.
"""
from __future__ import annotations

from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions

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
