"""The results store's schema: its tables, their columns and JSON columns, the in-place
migration of a store written by an older bgbench, and the check of a row read back.

Changing SCHEMA in a way an older bgbench could not read means raising
store_file.SCHEMA_VERSION.
"""

import json
import math
import sqlite3
from contextlib import closing
from functools import cache
from pathlib import Path
from typing import Any

from bgbench.coordinator.storage.location import Location
from bgbench.coordinator.storage.store_file import bad_row, loads
from bgbench.workloads.registry import DEFAULT_WORKLOAD

DB_NAME = "bgbench.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS ratings (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    status TEXT NOT NULL,          -- running | done | failed
    objective TEXT NOT NULL,
    store TEXT NOT NULL,
    config_json TEXT NOT NULL,
    hosts_json TEXT NOT NULL DEFAULT '[]',
    versions_json TEXT NOT NULL DEFAULT '{}',
    soar REAL,
    soar_threads INTEGER,
    socialites INTEGER,
    summary_json TEXT,
    message TEXT NOT NULL DEFAULT '',
    cwd TEXT,                      -- where the coordinator started it (relative paths)
    workload TEXT NOT NULL DEFAULT 'bg',
    workload_config_json TEXT NOT NULL DEFAULT '{}'  -- the workload's own settings section
);
CREATE TABLE IF NOT EXISTS experiments (
    rating_id TEXT NOT NULL REFERENCES ratings(id),
    seq INTEGER NOT NULL,
    phase TEXT NOT NULL,           -- warmup | search | final | retried
    threads INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    status TEXT NOT NULL,          -- passed | failed | fault
    actions_per_s REAL NOT NULL,
    within_percent REAL NOT NULL,
    unpredictable_percent REAL NOT NULL,
    reasons TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created TEXT NOT NULL,
    workload TEXT NOT NULL DEFAULT 'bg',
    workload_config_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (rating_id, seq)
);
CREATE TABLE IF NOT EXISTS campaigns (     -- coordinator/campaign/
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    status TEXT NOT NULL,          -- running | done | failed | interrupted
    file TEXT NOT NULL,            -- the campaign file as given
    file_text TEXT NOT NULL,       -- its text, and each included file's
    version TEXT NOT NULL,         -- bgbench's
    cwd TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS campaign_jobs (
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    seq INTEGER NOT NULL,          -- 1..n, the order the jobs run in
    label TEXT NOT NULL,           -- its foreach values, e.g. "store=postgres mix=high"
    vars_json TEXT NOT NULL,       -- the same as a JSON object
    settings_json TEXT NOT NULL,   -- the resolved document (after inheritance), redacted
    servers_json TEXT NOT NULL DEFAULT '[]',  -- servers it names, and those started for it
    study TEXT NOT NULL DEFAULT '',  -- a workload study it runs instead of a rating
    rating_id TEXT,                -- its rating, once started
    status TEXT NOT NULL,          -- pending | running | done | failed
    message TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (campaign_id, seq)
);
CREATE TABLE IF NOT EXISTS measurements (  -- a study's raw measurements (rating/study.py)
    rating_id TEXT NOT NULL REFERENCES ratings(id),
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,            -- the table it belongs to (load, queries, ...)
    row_json TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (rating_id, seq)
);
"""
EXPERIMENT_COLUMNS = (
    "rating_id", "seq", "phase", "threads", "duration_s", "status", "actions_per_s",
    "within_percent", "unpredictable_percent", "reasons", "created", "workload",
)  # fmt: skip
EXPERIMENT_COLUMNS_ALL = (
    "rating_id", "seq", "phase", "threads", "duration_s", "status", "actions_per_s",
    "within_percent", "unpredictable_percent", "reasons", "result_json", "created", "workload",
    "workload_config_json",
)  # fmt: skip


# The JSON columns of each table, and what each holds (a row holding another is damaged).
JSON_COLUMNS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "ratings": {"config_json": dict, "hosts_json": list, "versions_json": dict,
                "summary_json": (dict, type(None)), "workload_config_json": dict},
    "experiments": {"result_json": dict, "workload_config_json": dict},
    "measurements": {"row_json": dict},
    "campaigns": {},
    "campaign_jobs": {"vars_json": dict, "settings_json": dict, "servers_json": list},
}  # fmt: skip


def workload_of(config_json: str) -> tuple[str, str]:
    """The workload a rating's settings name, and its settings section as JSON."""
    data = json.loads(config_json)
    if not isinstance(data, dict):
        raise ValueError("the settings are not a mapping")
    name = str((data.get("workload") or {}).get("name") or DEFAULT_WORKLOAD)
    return name, json.dumps(data.get(name, {}))


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring a results store written by an older bgbench up to this schema, in place."""
    ratings = {r["name"] for r in db.execute("PRAGMA table_info(ratings)")}
    if "cwd" not in ratings:  # from before resumes knew where a rating started
        db.execute("ALTER TABLE ratings ADD COLUMN cwd TEXT")
    if "workload" in ratings:
        return
    # From before workloads were named: every rating was BG's, its section under "bg".
    for table in ("ratings", "experiments"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN workload TEXT NOT NULL DEFAULT 'bg'")
        db.execute(
            f"ALTER TABLE {table} ADD COLUMN workload_config_json TEXT NOT NULL DEFAULT '{{}}'"
        )
    for row in db.execute("SELECT id, config_json FROM ratings").fetchall():
        try:
            name, section = workload_of(row["config_json"])
        except (ValueError, RecursionError) as exc:
            raise bad_row(path, f"rating {row['id']}", f"config_json ({exc})") from None
        db.execute(
            "UPDATE ratings SET workload = ?, workload_config_json = ? WHERE id = ?",
            (name, section, row["id"]),
        )
        db.execute(
            "UPDATE experiments SET workload = ?, workload_config_json = ? WHERE rating_id = ?",
            (name, section, row["id"]),
        )


SQL_TYPES: dict[str, tuple[type, ...]] = {"TEXT": (str,), "REAL": (int, float), "INTEGER": (int,)}


@cache
def column_kinds() -> dict[str, dict[str, tuple[tuple[type, ...], bool]]]:
    """Each table's columns: the Python types SQLite gives back, and whether NOT NULL."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            t: {c[1]: (SQL_TYPES[c[2]], bool(c[3])) for c in db.execute(f"PRAGMA table_info({t})")}
            for t in tables
        }


def checked_row(path: Location, table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row of `table`, once each column holds the type bgbench writes and each JSON
    column JSON of the kind it writes; one line naming the store and the row if not."""
    where = f"{table} row {_row_name(row)}"
    for column, (types, required) in column_kinds().get(table, {}).items():
        value = row.get(column)
        if value is None and (not required or column not in row):
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise bad_row(path, f"{where}: {column}", f"holds {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise bad_row(path, f"{where}: {column}", f"holds {value}")
    for column, kind in JSON_COLUMNS.get(table, {}).items():
        if row.get(column) is not None:
            value = loads(row[column], path, f"{where}: {column}", None)
            if not isinstance(value, kind):
                raise bad_row(path, f"{where}: {column}", "is not what bgbench writes")
    return row


def _row_name(row: dict[str, Any]) -> str:
    if "id" in row:
        return repr(row["id"])
    return f"{row.get('rating_id')!r} seq {row.get('seq')}"
