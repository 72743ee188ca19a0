"""The loop of a long-running command (SPEC §9): ``run_worker`` and ``sweep --every``.

Such a command rides out a database restart: when the database drops its connection or
cannot be reached, it says so, closes the connection and tries again after a pause that
doubles (1 s up to 30 s), and goes on once the database answers. It ends only when told to
stop (SIGTERM or SIGINT), after the round in progress (so work it finished is reported,
and nothing is left half-done), or when the database has stayed away longer than
``give_up_after`` seconds; both end with a non-zero status.
"""
from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time
from typing import Callable, TextIO

from django.core.management.base import CommandError
from django.db import connection

from common.problems import DATABASE_AWAY, error_summary

FIRST_WAIT, MOST_WAIT = 1.0, 30.0
DEFAULT_GIVE_UP_AFTER = 600.0


def positive_seconds(text: str) -> float:
    """An argument's type: a finite number of seconds above zero. ``--poll 0`` (or ``-1``) would
    spin on the database, ``--give-up-after -5`` would give up at once, ``nan`` never compares:
    each is a usage error naming the option, before anything runs."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"takes a positive number of seconds, not {text!r}")
    return seconds


def add_give_up_argument(parser) -> None:
    parser.add_argument("--give-up-after", type=positive_seconds, default=DEFAULT_GIVE_UP_AFTER, metavar="SECONDS",
                        help=f"Exit (non-zero) when the database has been away this long "
                             f"(default {DEFAULT_GIVE_UP_AFTER:g})")


class StopRequested:
    """SIGTERM and SIGINT, caught while the loop runs: the round in progress finishes first."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def __call__(self, signum: int, frame) -> None:
        self.signal = signum
        self.event.set()

    def wait(self, seconds: float) -> bool:
        """Pause up to ``seconds``; True as soon as a stop is asked for."""
        return self.event.wait(seconds)


def run_loop(one_round: Callable[[], float], *, stdout: TextIO, stderr: TextIO, give_up_after: float) -> None:
    """Run ``one_round`` again and again; it returns how long to pause before the next round.
    Never returns: exits when told to stop, raises ``CommandError`` when the database stays
    away past ``give_up_after``."""
    stop = StopRequested()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        wait, away_since = FIRST_WAIT, None
        while not stop.event.is_set():
            try:
                pause = one_round()
            except DATABASE_AWAY as error:
                connection.close()  # a connection the server dropped is no use: the next try opens a new one
                now = time.monotonic()
                away_since = now if away_since is None else away_since
                if now - away_since >= give_up_after:
                    raise CommandError(f"The database has been away for {now - away_since:.0f} s; giving up.") from error
                stderr.write(f"The database is not reachable ({error_summary(error)}); trying again in {wait:g} s.")
                stop.wait(wait)
                wait = min(wait * 2, MOST_WAIT)
                continue
            if away_since is not None:
                stdout.write("The database is back.")
            wait, away_since = FIRST_WAIT, None
            if pause > 0:
                stop.wait(pause)
        name = signal.Signals(stop.signal).name
        stderr.write(f"Stopped ({name}): the round in progress was finished.")
        stdout.flush()
        stderr.flush()
        sys.exit(128 + stop.signal)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
