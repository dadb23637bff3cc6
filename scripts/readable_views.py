#!/usr/bin/env python3
"""Writes the migration that creates one `<table>_readable` view per table with instants:
every column of the table, then each `*_at_ms` epoch-milliseconds column again as ISO 8601
UTC text named without `_ms` (`occurred_at_ms` -> `occurred_at`).

The code keys on the milliseconds; people reading the database with sqlite3, psql or
Datasette read the views. Usage (from a database headroom created, with every migration up to
the one being written applied):

    readable_views.py DB.sqlite sqlite > crates/store/migrations/sqlite/NNNN_readable_views.sql
    readable_views.py DB.sqlite postgres > crates/store/migrations/postgres/NNNN_readable_views.sql

crates/store/tests/readable_views.rs fails when a table gains an instant its view lacks.
"""
import sqlite3
import sys

ISO = {
    "sqlite": "strftime('%Y-%m-%dT%H:%M:%fZ', {c} / 1000.0, 'unixepoch')",
    "postgres": "to_char(to_timestamp({c} / 1000.0) AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
}


def main(db, dialect):
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name <> '_sqlx_migrations' ORDER BY name")]
    print("-- One `<table>_readable` view per table with instants: the table's columns, then each")
    print("-- epoch-milliseconds instant (`*_at_ms`) again as ISO 8601 UTC text without `_ms`, for")
    print("-- people reading the database (sqlite3, psql, Datasette). The code keys on the")
    print("-- milliseconds and never reads these views. Written by scripts/readable_views.py.")
    for t in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
        instants = [c for c in cols if c.endswith("_at_ms")]
        if not instants:
            continue
        for c in instants:
            if c[:-3] in cols:
                sys.exit(f"{t}.{c[:-3]} already exists")
        select = [f"    {c}" for c in cols]
        select += [f"    {ISO[dialect].format(c=c)} AS {c[:-3]}" for c in instants]
        print(f"\nCREATE VIEW {t}_readable AS SELECT\n" + ",\n".join(select) + f"\nFROM {t};")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ISO:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
