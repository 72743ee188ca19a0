"""A small closed-loop HTTP load generator: N client threads, each one request at a time.

Threads are enough here: the client's work per request (a few hundred microseconds)
is small next to the server's, and it keeps the benchmark to the standard library.
"""
from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

# A request: (method, path, body or None, headers)
RequestFactory = Callable[[int, int], tuple[str, str, object, dict[str, str]]]


@dataclass
class LoadResult:
    requests: int
    seconds: float
    latencies_ms: list[float]
    statuses: dict[int, int]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")


def run_load(base: str, make_request: RequestFactory, *, clients: int, seconds: float) -> LoadResult:
    parts = urlsplit(base)
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        mine: list[float] = []
        seen: dict[int, int] = {}
        n = 0
        barrier.wait()
        while time.monotonic() < stop_at:
            method, path, body, headers = make_request(index, n)
            n += 1
            payload = None if body is None else json.dumps(body)
            started = time.perf_counter()
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            try:
                conn.request(method, path, body=payload, headers={"Content-Type": "application/json", **headers})
                response = conn.getresponse()
                response.read()
                status = response.status
            except OSError:
                status = 599
            finally:
                conn.close()
            mine.append((time.perf_counter() - started) * 1000)
            seen[status] = seen.get(status, 0) + 1
        with lock:
            latencies.extend(mine)
            for k, v in seen.items():
                statuses[k] = statuses.get(k, 0) + v

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.monotonic()
    for t in threads:
        t.join()
    return LoadResult(len(latencies), time.monotonic() - started, latencies, statuses)


def median_of(results: list[LoadResult]) -> LoadResult:
    """The repeat with the median throughput (its latencies come along)."""
    ordered = sorted(results, key=lambda r: r.rps)
    return ordered[len(ordered) // 2]


def fmt(result: LoadResult) -> str:
    codes = ",".join(f"{k}:{v}" for k, v in sorted(result.statuses.items()))
    return f"{result.rps:8.0f} req/s  p99 {result.p99_ms:6.1f} ms  [{codes}]"


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")
