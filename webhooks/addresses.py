"""Where a webhook may go (SPEC §17, safe by default), and the POST that goes there.

An endpoint's URL is ``https://`` and its host resolves to public addresses only, unless
``SPACES_WEBHOOK_ALLOW_HTTP`` / ``SPACES_WEBHOOK_ALLOW_PRIVATE`` say otherwise (a first run on
one machine). The check is made when the endpoint is registered and again on every delivery
against the address the socket actually connected to, so a name that resolves elsewhere the
second time (DNS rebinding) cannot reach the host's own network. Redirects are not followed
(http.client never does), each try has a deadline, and only the first KiB of an answer is read.
"""
from __future__ import annotations

import heapq
import http.client
import ipaddress
import itertools
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

TIMEOUT_SECONDS = 10.0
ANSWER_BYTES = 1024


class AddressRefused(Exception):
    """The URL may not be used: its scheme, its host, or an address it resolves to."""


# IPv6 ranges refused whatever they carry: ::/8 (the unspecified address, loopback, and the
# deprecated IPv4-compatible ::a.b.c.d and SIIT ::ffff:0:a.b.c.d forms, which Python's
# ``is_global`` takes as public), site-local fec0::/10, and NAT64's local-use 64:ff9b:1::/48.
REFUSED_IPV6 = tuple(ipaddress.IPv6Network(net) for net in ("::/8", "fec0::/10", "64:ff9b:1::/48"))
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the last 32 bits are an IPv4 address


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, NAT64, 6to4, Teredo): a packet to it
    may end at them, so each is judged as the IPv4 address it is."""
    found = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if ip in NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [address for address in found if address is not None]


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        carried = embedded_ipv4(ip)
        if carried:  # a translation's verdict is the IPv4 address's (mapped and NAT64 lie in ::/8)
            return all(v4.is_global and not v4.is_multicast for v4 in carried)
        if any(ip in net for net in REFUSED_IPV6):
            return False
    return ip.is_global and not ip.is_multicast


def check_url(url: str) -> tuple[str, str, int, str]:
    """The URL's (scheme, host, port, path with query), or ``AddressRefused`` saying why."""
    if not url.isascii() or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise AddressRefused("Must be ASCII without spaces or control characters: percent-encode the path "
                             "and write the host in its IDNA form (xn--…).")
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


def check_header_value(value: str) -> bool:
    """Whether ``value`` can be sent as an HTTP header's value: visible ASCII and inner spaces."""
    return value.isascii() and value == value.strip() and all(0x20 <= ord(c) < 0x7F for c in value)


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
    """POST ``body`` to ``url`` within ``timeout`` seconds in all, however slowly the endpoint
    answers (each read's own timeout would let a trickle of bytes hold a try for ever); never
    raises, for what the endpoint, the network or the endpoint's own settings do."""
    started = time.monotonic()
    deadline = Deadline(timeout)

    def answer(status: int | None, text: str = "", error: str = "") -> Answer:
        return Answer(status, int((time.monotonic() - started) * 1000), text, error[:300])

    try:
        scheme, host, port, path = check_url(url)
        sock = connect(host, port, timeout)
    except AddressRefused as refused:
        return answer(None, error=f"refused: {refused}")
    except OSError as error:
        return answer(None, error=f"cannot connect: {error}")
    except Exception as error:  # noqa: BLE001 - whatever a try raises is a failed try, recorded
        return answer(None, error=f"could not be sent ({type(error).__name__})")
    deadline.arm(sock)
    try:
        if scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            deadline.arm(sock)
        conn_class = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        conn = conn_class(host, port, timeout=timeout)
        conn.sock = sock  # already connected, to the address checked
        try:
            conn.request("POST", path, body=body, headers={**headers, "Content-Type": "application/json",
                                                           "User-Agent": "Spaces-Webhooks/1"})
            response = conn.getresponse()
            text = response.read(ANSWER_BYTES).decode("utf-8", errors="replace")
            if deadline.passed:  # the answer came whole, but after the try's time
                return answer(None, error=f"timed out: no whole answer within {timeout:g} s")
            return answer(response.status, text)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError) as error:
        if deadline.passed or isinstance(error, TimeoutError):
            return answer(None, error=f"timed out: no whole answer within {timeout:g} s")
        if isinstance(error, ValueError):  # a header's value http.client refuses: its text quotes the value
            return answer(None, error=f"could not be sent ({type(error).__name__})")
        return answer(None, error=f"{type(error).__name__}: {error}")
    except Exception as error:  # noqa: BLE001 - as above; its text may quote a secret
        return answer(None, error=f"could not be sent ({type(error).__name__})")
    finally:
        deadline.cancel()
        sock.close()


class Deadline:
    """Ends a try at its deadline: the socket is shut down then, so a read blocked on a receiver
    that sends a byte a second returns at once. One thread keeps every try's deadline
    (``DEADLINES``): a timer thread a try cost more than the try."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        self.passed = False
        self.armed: socket.socket | None = None  # the socket the deadline shuts down
        self.lock = threading.Lock()

    def arm(self, sock: socket.socket) -> None:
        sock.settimeout(max(0.01, self.ends - time.monotonic()))
        with self.lock:
            self.armed = sock
        DEADLINES.add(self, sock)

    def expire(self, sock: socket.socket) -> None:
        with self.lock:
            if self.armed is not sock:
                return  # cancelled, or armed on the socket that wraps this one
            self.passed = True
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed

    def cancel(self) -> None:
        with self.lock:  # a shutdown under way ends before the socket is closed
            self.armed = None


class Deadlines:
    """The deadlines of the tries in flight, in a heap, kept by one daemon thread (started on
    the first try) that expires each when its time comes; a cancelled one is skipped then."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Deadline, socket.socket]] = []
        self.changed = threading.Condition()
        self.order = itertools.count()
        self.thread: threading.Thread | None = None

    def add(self, deadline: Deadline, sock: socket.socket) -> None:
        with self.changed:
            heapq.heappush(self.heap, (deadline.ends, next(self.order), deadline, sock))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.keep, name="webhook-deadlines", daemon=True)
                self.thread.start()
            if self.heap[0][2] is deadline:
                self.changed.notify()  # the keeper waits for an earlier one only when this is the first

    def keep(self) -> None:
        while True:
            with self.changed:
                while not self.heap:
                    self.changed.wait()
                left = self.heap[0][0] - time.monotonic()
                if left > 0:
                    self.changed.wait(left)
                    continue
                _, _, deadline, sock = heapq.heappop(self.heap)
            deadline.expire(sock)


DEADLINES = Deadlines()


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
