"""Where a webhook may go (SPEC §17, safe by default), and the POST that goes there.

An endpoint's URL is ``https://`` and its host resolves to public addresses only, unless
``SPACES_WEBHOOK_ALLOW_HTTP`` / ``SPACES_WEBHOOK_ALLOW_PRIVATE`` say otherwise (a first run on
one machine). The check is made when the endpoint is registered and again on every delivery
against the address the socket actually connected to, so a name that resolves elsewhere the
second time (DNS rebinding) cannot reach the host's own network. Redirects are not followed
(http.client never does), each try has a deadline, and only the first KiB of an answer is read.
"""
from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

TIMEOUT_SECONDS = 10.0
ANSWER_BYTES = 1024


class AddressRefused(Exception):
    """The URL may not be used: its scheme, its host, or an address it resolves to."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str) -> tuple[str, str, int, str]:
    """The URL's (scheme, host, port, path with query), or ``AddressRefused`` saying why."""
    parts = urlsplit(url)
    allowed = ("https", "http") if settings.SPACES_WEBHOOK_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed:
        raise AddressRefused("Must be an https:// URL." if parts.scheme != "https" else "Bad URL.")
    if not parts.hostname or parts.username or parts.password or parts.fragment:
        raise AddressRefused("Must be scheme://host[:port]/path, without credentials or a fragment.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise AddressRefused("Bad port.") from None
    return parts.scheme, parts.hostname, port, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, each allowed, or ``AddressRefused``."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressRefused(f"The host {host} does not resolve ({error}).") from None
    addresses = list(dict.fromkeys(info[4][0] for info in found))
    for address in addresses:
        check_address(address)
    return addresses


def check_address(address: str) -> None:
    if not settings.SPACES_WEBHOOK_ALLOW_PRIVATE and not is_public(address):
        raise AddressRefused(f"{address} is not a public address (loopback, private, link-local or reserved).")


def check_endpoint_url(url: str) -> None:
    """At registration: the URL's form, and every address its host resolves to now."""
    _, host, port, _ = check_url(url)
    resolve(host, port)


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no answer (``error`` says why)
    latency_ms: int
    body: str
    error: str = ""

    @property
    def ok(self) -> bool:
        """Delivered: a 2xx."""
        return self.status is not None and 200 <= self.status < 300


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float = TIMEOUT_SECONDS) -> Answer:
    """POST ``body`` to ``url``; never raises for what the endpoint or the network does."""
    started = time.monotonic()

    def answer(status: int | None, text: str = "", error: str = "") -> Answer:
        return Answer(status, int((time.monotonic() - started) * 1000), text, error[:300])

    try:
        scheme, host, port, path = check_url(url)
        sock = connect(host, port, timeout)
    except AddressRefused as refused:
        return answer(None, error=f"refused: {refused}")
    except OSError as error:
        return answer(None, error=f"cannot connect: {error}")
    try:
        if scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        conn_class = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        conn = conn_class(host, port, timeout=timeout)
        conn.sock = sock  # already connected, to the address checked
        try:
            conn.request("POST", path, body=body, headers={**headers, "Content-Type": "application/json",
                                                           "User-Agent": "Spaces-Webhooks/1"})
            sock.settimeout(max(0.1, timeout - (time.monotonic() - started)))
            response = conn.getresponse()
            text = response.read(ANSWER_BYTES).decode("utf-8", errors="replace")
            return answer(response.status, text)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException) as error:
        kind = "timed out" if isinstance(error, TimeoutError) else type(error).__name__
        return answer(None, error=f"{kind}: {error}")
    finally:
        sock.close()


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """A socket connected to one of the host's addresses, checked after it connected."""
    last: OSError | None = None
    for address in resolve(host, port):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((address, port))
            check_address(sock.getpeername()[0])
            return sock
        except AddressRefused:
            sock.close()
            raise
        except OSError as error:
            sock.close()
            last = error
    raise last or OSError(f"no address for {host}")
