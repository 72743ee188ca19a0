"""What numbering the feed at commit costs writers of one space (SPEC §17), in isolation.

Eight clients each commit history rows of one task, one row a transaction, as fast as they
can, with the feed's triggers as they ship ("full"), without the copy into the feed ("no
feed"), with the copy but no seal ("copy only": no seq, no counter), with the seal's update of the event left out ("no update": the counter alone), and
with the seq written to a narrow table of its own instead ("narrow"), and with the
NOTIFY alone ("notify only": no counter, no update), in turn, twice.

    .venv/bin/python benchmarks/feed_seal_bench.py [--clients 8] [--rows 600]

Uses a fresh PostgreSQL database (BENCH_DATABASE_URL, by default the embedded server in
.postgres/bench). Prints transactions a second; asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, fresh_database, psycopg_dsn  # noqa: E402

SEAL = (ROOT / "events/migrations/0002_seal_at_commit.py").read_text().split('SEAL = """')[1].split(
    "CREATE CONSTRAINT TRIGGER")[0].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
UPDATE = "UPDATE events_event SET seq = next_seq WHERE id = NEW.id;"
COUNTER = SEAL[SEAL.index("    INSERT INTO events_feedcounter"):SEAL.index("RETURNING last_seq INTO next_seq;") + 33]
VARIANTS = {
    "full": SEAL,
    "no update": SEAL.replace(UPDATE, ""),
    "narrow": SEAL.replace(UPDATE, "INSERT INTO bench_seq VALUES (NEW.space_id, next_seq, NEW.id);"),
    # The NOTIFY alone at commit (no counter, no update): what any notifying writer pays.
    "notify only": SEAL.replace(UPDATE, "").replace(COUNTER, "next_seq := 0;"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rows", type=int, default=600, help="transactions per client per variant")
    args = parser.parse_args()
    url = fresh_database()
    import psycopg

    from spaces import services
    from tests.factories import create_task

    space = services.create_space(slug="seal", name="seal")
    actor = services.add_member(space=space, role="steward", name="steward")
    task = create_task(space=space, actor=actor, title="sealed")
    admin = psycopg.connect(psycopg_dsn(url), autocommit=True)
    admin.execute("CREATE TABLE bench_seq (space_id bigint, seq bigint, event_id bigint, PRIMARY KEY (space_id, seq))")

    def load(label: str) -> None:
        def write() -> None:
            with psycopg.connect(psycopg_dsn(url), autocommit=True) as conn:
                for _ in range(args.rows):
                    conn.execute("INSERT INTO tasks_taskevent (space_id, task_id, kind, actor_id, details, created_at) "
                                 "VALUES (%s, %s, 'held', %s, '{\"member\": 3, \"cycle\": 1}'::jsonb, now())",
                                 [space.pk, task.pk, actor.pk])

        threads = [threading.Thread(target=write) for _ in range(args.clients)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(f"{label:10} {args.clients * args.rows / (time.perf_counter() - began):7.0f} transactions/s")

    for _ in range(2):
        admin.execute("ALTER TABLE tasks_taskevent DISABLE TRIGGER tasks_history_into_feed")
        load("no feed")
        admin.execute("ALTER TABLE tasks_taskevent ENABLE TRIGGER tasks_history_into_feed")
        admin.execute("ALTER TABLE events_event DISABLE TRIGGER events_seal")
        load("copy only")
        admin.execute("ALTER TABLE events_event ENABLE TRIGGER events_seal")
        for name, function in VARIANTS.items():
            admin.execute(function)
            load(name)
    admin.execute(SEAL)


if __name__ == "__main__":
    main()
