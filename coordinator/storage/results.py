"""The results store: every rating and every experiment, in one SQLite file.

`results_dir/bgbench.sqlite` holds the resolved settings, host facts and versions
of each rating, and each experiment's figures with its full result (per-worker
throughput, latency histograms, verdicts, validation counts) as JSON. A rating
interrupted mid-search is resumed from here without re-running what finished.
"""

import csv
import json
import math
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.redaction import redact_config, redact_strings, redact_text
from bgbench.coordinator.storage.evidence import RunFigures, reasons_of
from bgbench.coordinator.storage.store_file import (
    SCHEMA_VERSION,
    bad_row,
    check_before_writing,
    checked,
    guarded,
    loads,
)
from bgbench.errors import UserError
from bgbench.run_result import ExperimentResult
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


def _migrate(db: sqlite3.Connection, path: Path) -> None:
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


def checked_row(path: Path, table: str, row: dict[str, Any]) -> dict[str, Any]:
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _row_name(row: dict[str, Any]) -> str:
    if "id" in row:
        return repr(row["id"])
    return f"{row.get('rating_id')!r} seq {row.get('seq')}"


def _redacted_config(config_json: str) -> str:
    """Settings as recorded: whoever serialized them, no secret is stored."""
    return json.dumps(redact_config(json.loads(config_json)))


class ResultsStore:
    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / DB_NAME
        if results_dir.exists() and not results_dir.is_dir():
            raise UserError(f"results directory {results_dir} is a file: give a directory")
        try:
            results_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"results store {self.path} cannot be used: {exc}") from None
        version = check_before_writing(self.path)  # a newer store is refused untouched
        with self._db() as db:
            db.executescript(SCHEMA)
            _migrate(db, self.path)
            if version != SCHEMA_VERSION:  # marked once, not rewritten by every reader
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @classmethod
    def existing(cls, results_dir: Path) -> "ResultsStore":
        """A results store that must already exist (nothing is created looking for one)."""
        if not (results_dir / DB_NAME).exists():
            raise UserError(f"no results store in {results_dir}: give --results the directory "
                            "the rating was recorded in")  # fmt: skip
        return cls(results_dir)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction on the store (rows as sqlite3.Row), for the modules that keep
        tables of their own in it (coordinator/campaign/records.py)."""
        with self._db() as db:
            yield db

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with guarded(self.path):
            db = sqlite3.connect(self.path, timeout=30)
            db.row_factory = sqlite3.Row
            try:
                with db:
                    yield db
            finally:
                db.close()

    def _checked(self, table: str, row: sqlite3.Row) -> dict[str, Any]:
        out = checked_row(self.path, table, dict(row))
        if table == "ratings":  # records written before redaction held secrets
            out["config_json"] = _redacted_config(out["config_json"])
            out["message"] = redact_text(out["message"] or "")
        return out

    # -- ratings -----------------------------------------------------------------
    def start_rating(
        self, rating_id: str, objective: str, store: str, config_json: str, cwd: str = ""
    ) -> None:
        workload, section = workload_of(config_json)
        config_json = _redacted_config(config_json)
        with self._db() as db:
            db.execute(
                "INSERT INTO ratings (id, created, updated, status, objective, store, config_json,"
                " cwd, workload, workload_config_json)"
                " VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (
                    rating_id, _now(), _now(), objective, store, config_json, cwd or None,
                    workload, section,
                ),
            )  # fmt: skip

    def update_config(self, rating_id: str, config_json: str) -> None:
        workload, section = workload_of(config_json)
        config_json = _redacted_config(config_json)
        with self._db() as db:
            db.execute(
                "UPDATE ratings SET config_json = ?, workload = ?, workload_config_json = ?, "
                "updated = ? WHERE id = ?",
                (config_json, workload, section, _now(), rating_id),
            )

    def set_hosts(
        self, rating_id: str, hosts: list[dict[str, Any]], versions: dict[str, str]
    ) -> None:
        with self._db() as db:
            db.execute(
                "UPDATE ratings SET hosts_json = ?, versions_json = ?, updated = ? WHERE id = ?",
                (
                    json.dumps(redact_strings(hosts)),
                    json.dumps(redact_strings(versions)),
                    _now(),
                    rating_id,
                ),
            )

    def finish_rating(
        self,
        rating_id: str,
        status: str,
        soar: float | None,
        soar_threads: int | None,
        socialites: int | None,
        summary: dict[str, Any] | None,
        message: str = "",
    ) -> None:
        with self._db() as db:
            db.execute(
                "UPDATE ratings SET status = ?, soar = ?, soar_threads = ?, socialites = ?, "
                "summary_json = ?, message = ?, updated = ? WHERE id = ?",
                (
                    status, soar, soar_threads, socialites,
                    json.dumps(redact_strings(summary)) if summary is not None else None,
                    redact_text(message), _now(), rating_id,
                ),
            )  # fmt: skip

    def rating(self, rating_id: str) -> dict[str, Any]:
        with self._db() as db:
            row = db.execute("SELECT * FROM ratings WHERE id = ?", (rating_id,)).fetchone()
        if row is None:
            raise UserError(f"no rating {rating_id!r} in {self.path}: see `bgbench results`")
        return self._checked("ratings", row)

    def ratings(self) -> list[dict[str, Any]]:
        with self._db() as db:
            rows = db.execute(
                "SELECT r.*, (SELECT count(*) FROM experiments e WHERE e.rating_id = r.id) AS runs"
                " FROM ratings r ORDER BY created, id"
            ).fetchall()
        return [self._checked("ratings", r) for r in rows]

    # -- experiments -------------------------------------------------------------
    def add_experiment(self, rating_id: str, phase: str, result: ExperimentResult) -> None:
        status = result.status
        with self._db() as db:
            seq = db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM experiments WHERE rating_id = ?",
                (rating_id,),
            ).fetchone()[0]
            rating = db.execute(
                "SELECT workload, workload_config_json FROM ratings WHERE id = ?", (rating_id,)
            ).fetchone()
            workload, section = (rating[0], rating[1]) if rating else (DEFAULT_WORKLOAD, "{}")
            db.execute(
                f"INSERT INTO experiments ({', '.join(EXPERIMENT_COLUMNS_ALL)}) "
                f"VALUES ({', '.join('?' * len(EXPERIMENT_COLUMNS_ALL))})",
                (
                    rating_id, seq, phase, result.threads, result.duration_s, status,
                    result.actions_per_s, result.within_percent, result.unpredictable_percent,
                    redact_text(reasons_of(result)), json.dumps(redact_strings(result.to_record())),
                    _now(), workload, section,
                ),
            )  # fmt: skip
            db.execute("UPDATE ratings SET updated = ? WHERE id = ?", (_now(), rating_id))

    def experiments(self, rating_id: str) -> list[dict[str, Any]]:
        with self._db() as db:
            rows = db.execute(
                "SELECT * FROM experiments WHERE rating_id = ? ORDER BY seq", (rating_id,)
            ).fetchall()
        return [self._checked("experiments", r) for r in rows]

    # -- a study's measurements ----------------------------------------------------
    def add_measurement(self, rating_id: str, name: str, row: dict[str, Any]) -> None:
        with self._db() as db:
            seq = db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM measurements WHERE rating_id = ?",
                (rating_id,),
            ).fetchone()[0]
            db.execute(
                "INSERT INTO measurements (rating_id, seq, name, row_json, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (rating_id, seq, name, json.dumps(redact_strings(row)), _now()),
            )
            db.execute("UPDATE ratings SET updated = ? WHERE id = ?", (_now(), rating_id))

    def measurements(self, rating_id: str) -> list[dict[str, Any]]:
        """A study's measurements in the order made: {"seq", "name", **row}."""
        with self._db() as db:
            rows = db.execute(
                "SELECT seq, name, row_json FROM measurements WHERE rating_id = ? ORDER BY seq",
                (rating_id,),
            ).fetchall()
        where = f"measurements of rating {rating_id}"
        out = []
        for r in rows:
            row = loads(r[2], self.path, f"{where}, row {r[0]}", {})
            if not isinstance(row, dict):
                raise bad_row(self.path, f"{where}, row {r[0]}", "is not what bgbench writes")
            out.append({"seq": r[0], "name": r[1], **row})
        return out

    def known_runs(self, rating_id: str) -> dict[tuple[str, float], dict[int, list[RunFigures]]]:
        """Finished runs of each experiment, by phase (search or final) and duration, then
        T (or open-loop rate), in the order they ran (faults are not runs: they rerun;
        warm-ups are not rated)."""
        known: dict[tuple[str, float], dict[int, list[RunFigures]]] = {}
        for e in self.experiments(rating_id):
            if e["status"] == "fault" or e["phase"] in ("warmup", "retried", "sweep"):
                continue
            data = json.loads(e["result_json"])
            by_key = known.setdefault((e["phase"], e["duration_s"]), {})
            where = f"experiments row {rating_id!r} seq {e['seq']}"
            key = checked(self.path, where, _key_of, data, e["threads"])
            figures = checked(self.path, where, RunFigures.of_record, data)
            by_key.setdefault(key, []).append(figures)
        return known

    # -- export ------------------------------------------------------------------
    def export(self, rating_id: str, fmt: str, out: Path) -> int:
        """Experiments (a rating) or measurements (a study) as CSV, JSON or Parquet; how
        many rows."""
        rating = self.rating(rating_id)
        measured = self.measurements(rating_id)
        if measured and fmt != "json":
            return _write_rows(redact_strings(measured), fmt, out)
        experiments = self.experiments(rating_id)
        rows = [redact_strings({k: e[k] for k in EXPERIMENT_COLUMNS}) for e in experiments]
        if fmt == "json":
            full = dict(rating)
            full["config"] = redact_config(json.loads(full.pop("config_json")))
            full["hosts"] = json.loads(full.pop("hosts_json"))
            full["versions"] = json.loads(full.pop("versions_json"))
            full["summary"] = json.loads(full.pop("summary_json") or "null")
            full["workload_config"] = json.loads(full.pop("workload_config_json"))
            full["experiments"] = [
                {**row, "result": json.loads(e["result_json"])}
                for row, e in zip(rows, experiments, strict=True)
            ]
            if measured:
                full["measurements"] = measured
            out.write_text(json.dumps(redact_strings(full), indent=2))  # older records too
            return len(measured) if measured else len(rows)
        elif fmt == "csv":
            with open(out, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=EXPERIMENT_COLUMNS)
                writer.writeheader()
                writer.writerows(rows)
        elif fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = (
                pa.Table.from_pylist(rows)
                if rows
                else pa.table({c: [] for c in EXPERIMENT_COLUMNS})
            )
            pq.write_table(table, out)
        else:
            raise UserError(f"unknown export format {fmt!r}: use csv, json or parquet")
        return len(rows)


def _key_of(data: dict[str, Any], threads: int) -> int:
    """An experiment's T, or its open-loop rate."""
    return round(data.get("target_rate") or 0) or threads


def _write_rows(rows: list[dict[str, Any]], fmt: str, out: Path) -> int:
    """Rows of differing keys (a study's tables) as one CSV or Parquet table: every key
    seen, in first-seen order, blank where a row has none."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "csv":
        with open(out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows]), out)
    else:
        raise UserError(f"unknown export format {fmt!r}: use csv, json or parquet")
    return len(rows)
