"""Answers that carry a secret (an API key, a share token), SPEC §7.1 and §2.

An idempotent operation stores its answer to replay it, but a secret is never stored in
plain text: the answer is stored with its secret fields emptied and a reference to what
the secret opens. A replay answers for the same member or share with a fresh secret and
revokes the one the lost answer carried. Each kind of secret registers its reissuer here
(the app that owns the secret does, when it loads); the idempotency runner calls it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# kind -> reissue(ref) -> (the answer's secret fields, freshly filled; the new ref)
Reissuer = Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]
REISSUERS: dict[str, Reissuer] = {}


@dataclass(frozen=True)
class SecretAnswer:
    """What makes an answer secret-bearing: which reissuer, which body fields hold the secret,
    and what the reissuer needs to find the secret's holder."""

    kind: str
    fields: tuple[str, ...]
    ref: dict[str, Any]

    def as_stored(self) -> dict[str, Any]:
        return {"kind": self.kind, "fields": list(self.fields), "ref": self.ref}


def reissuer(kind: str) -> Callable[[Reissuer], Reissuer]:
    def register(function: Reissuer) -> Reissuer:
        REISSUERS[kind] = function
        return function
    return register


def mark_secret(response, secret: SecretAnswer):
    """Tell the idempotency runner that ``response`` carries a secret (see module doc)."""
    response.spaces_secret = secret
    return response


def without_secret(body: Any, secret: SecretAnswer | None) -> Any:
    if secret is None or not isinstance(body, dict):
        return body
    return {name: (None if name in secret.fields else value) for name, value in body.items()}


def reissue(stored: dict[str, Any], body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stored answer ``body`` with a fresh secret, and the stored reference to keep for the next replay."""
    fields, ref = REISSUERS[stored["kind"]](stored["ref"])
    return {**body, **fields}, {**stored, "ref": ref}
