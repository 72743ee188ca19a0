"""Closed-loop HTTP load through wrk: N clients, each one request at a time.

wrk is a C load generator, so the client takes little of the machine's CPU from the
server under test (a Python client on the same two cores took about half, which
flattened every ratio against fixed per-request costs). Each client is one wrk thread
with one connection, so client *i* is one agent with its own API key, as in a real team.

A request is a `Scenario`: method, path, body and headers, where these placeholders
are filled in per request by the Lua script:

- ``{key}``: the client's API key (``keys[i]``), sent as ``Authorization: Bearer`` on every request;
- ``{agent}``: the client's index *i*;
- ``{unique}``: a string unique in the whole benchmark run (titles, Idempotency-Keys);
- ``{pick}``: the next entry of ``picks`` (e.g. titles to bind), a different walk per client;
- ``{name}``: what step ``captures`` took from an earlier answer of this client's (see ``Step``).

A scenario with ``steps`` is a loop of requests each client walks in order (an agent's
loop: create, next, post, done, check, confirm); a step that is refused (4xx/5xx) or whose
answer lacks a capture sends the client back to the first step.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

WRK = "wrk"


@dataclass(frozen=True)
class Step:
    """One request of a loop; ``captures`` maps a placeholder name to the Lua pattern whose
    first capture, found in the answer, fills it in the steps after."""

    path: str
    body: str = "{}"
    method: str = "POST"
    captures: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    path: str
    keys: list[str]
    body: str = "{}"
    headers: dict[str, str] = field(default_factory=dict)
    picks: list[str] = field(default_factory=list)
    method: str = "POST"
    steps: list[Step] = field(default_factory=list)  # a loop instead of one request (path: the first's)

    def loop(self) -> list[Step]:
        return self.steps or [Step(self.path, self.body, self.method)]


@dataclass
class LoadResult:
    requests: int
    seconds: float
    p99_ms: float
    statuses: dict[int, int]
    errors: int = 0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def ensure_wrk() -> None:
    """wrk is a Debian package; install it where we may, else say how."""
    if shutil.which(WRK):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("== installing wrk (Debian package) for the load", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        return
    raise SystemExit("the benchmarks need wrk: apt-get install wrk")


def lua_string(value: str) -> str:
    """A Lua string literal for any text: printable ASCII as is, every other byte escaped."""
    out = []
    for byte in value.encode():
        char = chr(byte)
        out.append(char if 32 <= byte < 127 and char not in '"\\' else f"\\{byte:03d}")  # \034, never read on into a digit after it
    return '"' + "".join(out) + '"'


def lua_list(values: list[str]) -> str:
    return "{" + ",".join(lua_string(v) for v in values) + "}"


SCRIPT = r"""
local keys = %(keys)s
local picks = %(picks)s
local steps = %(steps)s
local header_names, header_values = %(header_names)s, %(header_values)s
local nonce = %(nonce)s

local threads = {}
local next_id = 0
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  agent = id
  counter = 0
  statuses = {}
  step = 1
  captured = {}
end

local function fill(template)
  return (string.gsub(template, "{(%%a+)}", function(name)
    if name == "key" then return keys[agent %% #keys + 1] end
    if name == "agent" then return tostring(agent) end
    if name == "unique" then return string.format("%%s-%%d-%%d", nonce, agent, counter) end
    if name == "pick" and #picks > 0 then return picks[(agent * 7919 + counter) %% #picks + 1] end
    return captured[name]
  end))
end

function request()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json"}
  for n, name in ipairs(header_names) do headers[name] = fill(header_values[n]) end
  local s = steps[step]
  return wrk.format(s.method, fill(s.path), headers, fill(s.body))
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  local s = steps[step]
  local complete = status < 400
  for name, pattern in pairs(s.captures) do
    local value = complete and string.match(body, pattern)
    if not value then complete = false else captured[name] = value end
  end
  step = complete and step %% #steps + 1 or 1
end

function done(summary, latency, requests)
  local merged = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      merged[status] = (merged[status] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(merged) do table.insert(parts, string.format('"%%d": %%d', status, count)) end
  local e = summary.errors
  io.write(string.format('RESULT {"requests": %%d, "duration_us": %%d, "p99_us": %%d, "errors": %%d, "statuses": {%%s}}\n',
    summary.requests, summary.duration, latency:percentile(99), e.connect + e.read + e.write + e.timeout,
    table.concat(parts, ", ")))
end
"""


def lua_script(scenario: Scenario) -> str:
    headers = {"Authorization": "Bearer {key}", **scenario.headers}
    names = list(headers)
    return SCRIPT % {
        "keys": lua_list(scenario.keys),
        "picks": lua_list([json.dumps(p)[1:-1] for p in scenario.picks]),  # ready to sit inside a JSON string
        "steps": "{" + ",".join(
            f"{{method={lua_string(step.method)}, path={lua_string(step.path)}, body={lua_string(step.body)}, "
            "captures={" + ",".join(f"[{lua_string(k)}]={lua_string(v)}" for k, v in step.captures.items()) + "}}"
            for step in scenario.loop()) + "}",
        "header_names": lua_list(names),
        "header_values": lua_list([headers[n] for n in names]),
        "nonce": lua_string(secrets.token_hex(6)),
    }


def run_load(base: str, scenario: Scenario, *, clients: int, seconds: float) -> LoadResult:
    ensure_wrk()
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua_script(scenario))
    try:
        completed = subprocess.run(
            [WRK, f"-t{clients}", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--timeout", "30s",
             "-s", script.name, base + scenario.path],
            check=True, capture_output=True, text=True,
        )
    finally:
        Path(script.name).unlink()
    match = re.search(r"^RESULT (.*)$", completed.stdout, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"wrk printed no result:\n{completed.stdout}\n{completed.stderr}")
    data = json.loads(match.group(1))
    return LoadResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p99_ms=data["p99_us"] / 1000,
        statuses={int(k): v for k, v in data["statuses"].items()},
        errors=data["errors"],
    )


def median_of(results: list[LoadResult]) -> LoadResult:
    """Each figure's own median over the repeats: the throughput of the median repeat,
    and the median of the repeats' p99s (a p99 from one 3-second repeat rests on a few
    dozen requests, so taking it from whichever repeat had the median throughput let
    one noisy tail decide)."""
    ordered = sorted(results, key=lambda r: r.rps)
    middle = ordered[len(ordered) // 2]
    p99s = sorted(r.p99_ms for r in results)
    return LoadResult(requests=middle.requests, seconds=middle.seconds, p99_ms=p99s[len(p99s) // 2],
                      statuses=middle.statuses, errors=middle.errors)


def fmt(result: LoadResult) -> str:
    codes = ",".join(f"{k}:{v}" for k, v in sorted(result.statuses.items()))
    errors = f" errors:{result.errors}" if result.errors else ""
    return f"{result.rps:8.0f} req/s  p99 {result.p99_ms:6.1f} ms  [{codes}{errors}]"
