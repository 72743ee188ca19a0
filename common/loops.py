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
from dataclasses import dataclass
from typing import Callable, Sequence, TextIO

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


@dataclass
class Beside:
    """A loop run in a thread of its own beside the command's main loop (``run_worker``'s
    deliveries beside its exports), with the same rules; ``pause`` waits between its rounds
    (at most a second or so: the stop is seen between two rounds); ``close`` runs once it stops."""

    one_round: Callable[[], float]
    pause: Callable[[float], None]
    close: Callable[[], None] = lambda: None


def run_loop(one_round: Callable[[], float], *, stdout: TextIO, stderr: TextIO, give_up_after: float,
             beside: Sequence[Beside] = ()) -> None:
    """Run ``one_round`` again and again; it returns how long to pause before the next round.
    Never returns: exits when told to stop, raises ``CommandError`` when the database stays
    away past ``give_up_after`` (in any of the loops)."""
    stop = StopRequested()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    failures: list[BaseException] = []

    def run_beside(loop: Beside) -> None:
        try:
            rounds(loop.one_round, loop.pause, stop, stdout=stdout, stderr=stderr, give_up_after=give_up_after)
        except BaseException as error:  # noqa: BLE001 - handed to the main thread, which raises it
            failures.append(error)
            stop.event.set()
        finally:
            loop.close()
            connection.close()

    threads = [threading.Thread(target=run_beside, args=(loop,), name="beside", daemon=True) for loop in beside]
    try:
        for thread in threads:
            thread.start()
        try:
            rounds(one_round, stop.wait, stop, stdout=stdout, stderr=stderr, give_up_after=give_up_after)
        finally:
            stop.event.set()
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]
        name = signal.Signals(stop.signal).name
        stderr.write(f"Stopped ({name}): the round in progress was finished.")
        stdout.flush()
        stderr.flush()
        sys.exit(128 + stop.signal)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def rounds(one_round: Callable[[], float], pause: Callable[[float], object], stop: StopRequested, *,
           stdout: TextIO, stderr: TextIO, give_up_after: float) -> None:
    """One loop's rounds until ``stop``, riding out the database's absence (module doc)."""
    wait, away_since = FIRST_WAIT, None
    while not stop.event.is_set():
        try:
            seconds = one_round()
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
        if seconds > 0 and not stop.event.is_set():
            pause(seconds)
