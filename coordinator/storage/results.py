"""The results store: every rating and every experiment, in one SQLite file (or in a
PostgreSQL database a team's coordinators share: pg.py).

`results_dir/bgbench.sqlite` holds the resolved settings, host facts and versions
of each rating, and each experiment's figures with its full result (per-worker
throughput, latency histograms, verdicts, validation counts) as JSON. A rating
interrupted mid-search is resumed from here without re-running what finished.
"""

import csv
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.redaction import redact_config, redact_strings, redact_text
from bgbench.coordinator.storage import pg
from bgbench.coordinator.storage.evidence import RunFigures, reasons_of
from bgbench.coordinator.storage.location import Location, NoResultsStore, ResultsURL
from bgbench.coordinator.storage.schema import (
    DB_NAME,
    EXPERIMENT_COLUMNS,
    EXPERIMENT_COLUMNS_ALL,
    SCHEMA,
    checked_row,
    migrate,
    workload_of,
)
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

__all__ = ["DB_NAME", "ResultsStore", "checked_row"]


def _make(results_dir: Path, store: Location) -> None:
    """The results directory (a PostgreSQL store's work directory) made if need be."""
    if results_dir.exists() and not results_dir.is_dir():
        raise UserError(f"results directory {results_dir} is a file: give a directory")
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"results store {store} cannot be used: {exc}") from None


def _free_id(db: Any, base: str) -> str:
    """`base`, or base-N for the first N from 2 not yet a rating's id."""
    taken = {r[0] for r in db.execute("SELECT id FROM ratings WHERE id LIKE ?", (base + "%",))}
    record_id, n = base, 1
    while record_id in taken:
        n += 1
        record_id = f"{base}-{n}"
    return record_id


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _redacted_config(config_json: str) -> str:
    """Settings as recorded: whoever serialized them, no secret is stored."""
    return json.dumps(redact_config(json.loads(config_json)))


class ResultsStore:
    """Every rating and experiment, in `results_dir/bgbench.sqlite`, or with `url` in that
    PostgreSQL database (pg.py; `results_dir` then only holds the files beside the
    store: each experiment's work directory, logs, servers). `path` names the store in
    messages: the SQLite file, or the URL (its password redacted)."""

    def __init__(self, results_dir: Path, url: ResultsURL | None = None) -> None:
        self.work_dir = results_dir
        self.url = url
        self.path: Location = url if url is not None else results_dir / DB_NAME
        if url is not None:
            pg.create(url)
            return
        _make(results_dir, self.path)
        version = check_before_writing(self.file)  # a newer store is refused untouched
        with self._db() as db:
            db.executescript(SCHEMA)
            migrate(db, self.file)
            if version != SCHEMA_VERSION:  # marked once, not rewritten by every reader
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def file(self) -> Path:
        """The SQLite file (the work directory's, for a PostgreSQL store: never made)."""
        return self.work_dir / DB_NAME

    @property
    def shown(self) -> str:
        """What `--results` names this store by again (a URL's password redacted)."""
        return str(self.url) if self.url is not None else str(self.work_dir)

    @classmethod
    def at(cls, where: Location, work_dir: Path = Path("results")) -> "ResultsStore":
        """The store `--results` names (a directory or a URL), made if need be."""
        if isinstance(where, ResultsURL):
            return cls(work_dir, where)
        return cls(where)

    @classmethod
    def reopen(cls, path: Location) -> "ResultsStore":
        """The existing store whose `path` (its file, or its URL) this is."""
        return cls.existing(path if isinstance(path, ResultsURL) else path.parent)

    @classmethod
    def existing(cls, results_dir: Location) -> "ResultsStore":
        """A results store that must already exist (nothing is created looking for one)."""
        if isinstance(results_dir, ResultsURL):
            pg.existing(results_dir)
            return cls(Path("results").absolute(), results_dir)
        if not (results_dir / DB_NAME).exists():
            raise NoResultsStore(f"no results store in {results_dir}: give --results the directory "
                            "the rating was recorded in")  # fmt: skip
        return cls(results_dir)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """One transaction on the store (rows by name and position, as sqlite3.Row), for
        the storage modules that keep tables of their own in it (campaign_rows.py);
        nothing outside storage/ calls it."""
        with self._db() as db:
            yield db

    def try_write(self) -> None:
        """A write tried in the store and undone (a read-only store fails here): the
        sqlite3.Error (or StoreFault) itself, for the caller to word."""
        if self.url is not None:
            pg.writable(self.url)
            return
        db = sqlite3.connect(self.file, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("CREATE TABLE bgbench_write_probe (x)")
            db.execute("ROLLBACK")
        finally:
            db.close()

    @contextmanager
    def _db(self) -> Iterator[Any]:
        if self.url is not None:
            with pg.transaction(self.url) as pdb:
                yield pdb
            return
        with guarded(self.file):
            db = sqlite3.connect(self.file, timeout=30)
            db.row_factory = sqlite3.Row
            try:
                with db:
                    yield db
            finally:
                db.close()

    def _lock(self, db: Any, rating_id: str) -> None:
        """One writer of a rating's rows at a time across coordinators (PostgreSQL; an
        SQLite file has one writer at a time anyway)."""
        if isinstance(db, pg.PgDb):
            db.lock(rating_id)

    def _checked(self, table: str, row: Any) -> dict[str, Any]:
        out = checked_row(self.path, table, dict(row))
        if table == "ratings":  # records written before redaction held secrets
            out["config_json"] = _redacted_config(out["config_json"])
            out["message"] = redact_text(out["message"] or "")
        return out

    # -- ratings -----------------------------------------------------------------
    def start_rating(
        self,
        rating_id: str,
        objective: str,
        store: str,
        config_json: str,
        cwd: str = "",
        *,
        renamed: bool = False,
    ) -> str:
        """Record a new rating; its id. With `renamed`, an id already taken (two runs at
        the same T in the same second, on one coordinator or two) gets -2, -3, ...: the
        free one is picked and taken in one transaction (under a lock in PostgreSQL)."""
        workload, section = workload_of(config_json)
        config_json = _redacted_config(config_json)
        with self._db() as db:
            if renamed:
                self._lock(db, rating_id)
                rating_id = _free_id(db, rating_id)
            db.execute(
                "INSERT INTO ratings (id, created, updated, status, objective, store, config_json,"
                " cwd, workload, workload_config_json)"
                " VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (
                    rating_id, _now(), _now(), objective, store, config_json, cwd or None,
                    workload, section,
                ),
            )  # fmt: skip
        return rating_id

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
            self._lock(db, rating_id)
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
            self._lock(db, rating_id)
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
