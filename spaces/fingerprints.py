"""The request fingerprint of an idempotent operation (SPEC §7.1), for every kind of operation."""
from __future__ import annotations

import hashlib
import json
from typing import Any


def request_fingerprint(method: str, path: str, body: Any) -> str:
    """SHA-256 of method, path and the canonical JSON body."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: a lone surrogate ("\ud800", valid JSON) still fingerprints; the request's
    # own validation refuses it afterwards.
    return hashlib.sha256(f"{method.upper()}\n{path}\n{canonical}".encode("utf-8", "surrogatepass")).hexdigest()
