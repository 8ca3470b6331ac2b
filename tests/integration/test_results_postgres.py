"""The results store in PostgreSQL (--results postgresql://...): a real campaign recorded
into a real PostgreSQL (the session's, a fresh database per test) is read back by
`bgbench results`, `report`, `compare`, `bgbench.results.load` and the deck exactly as
the same rows in an SQLite store; the URL's password is never shown or stored; a bad URL
is one line, exit 2, with nothing lost; coordinators recording at once do not clash."""

import json
import re
import socket
import subprocess
import threading
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from bgbench import results
from bgbench.coordinator.interfaces.deck_app import DeckConfig, create_app
from bgbench.coordinator.interfaces.deck_guard import CSRF_HEADER, HostRule
from bgbench.coordinator.storage import pg
from bgbench.coordinator.storage.location import ResultsURL, for_child, results_url
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError
from bgbench.launchers.servers import PG_BIN
from bgbench.run_result import ExperimentResult
from bgbench.run_result.histograms import LatencySummary
from tests import helpers
from tests.conftest import fresh_database

pytestmark = pytest.mark.integration
bgbench = partial(helpers.bgbench, timeout=600)
PASSWORD = "s3cret-Pw9"  # trust authentication ignores it: it must only never show
CAMPAIGN = """
campaign: shared-store
jobs:
  - foreach: {mix: [low, high]}
    store: {name: sqlite, options: {path: "DATA/${mix}.sqlite"}}
    sla: {delta_search_s: 1, delta_s: 1}
    rating: {objective: soar, max_threads: 2, final_runs: 1, repeats: 1}
    agents: {local: 1, processes: 1}
    params: {mix: "${mix}", usercount: 200}
"""
FRAMES = (
    "ratings", "experiments", "per_agent", "per_action", "validation", "sweep",
    "measurements", "campaigns", "campaign_jobs", "resources", "steps", "phases",
)  # fmt: skip
TABLES = {
    "ratings": "created, id",
    "experiments": "rating_id, seq",
    "measurements": "rating_id, seq",
    "campaigns": "created, id",
    "campaign_jobs": "campaign_id, seq",
}


def url_of(postgres_server, password: str = PASSWORD) -> ResultsURL:
    """A fresh database's URL, a password in it."""
    name = fresh_database(postgres_server).split("dbname=")[1]
    return results_url(
        f"postgresql://postgres:{password}@127.0.0.1:{postgres_server['port']}/{name}"
    )


def copy_to_sqlite(url: ResultsURL, directory: Path) -> Path:
    """Every row of the PostgreSQL store into a new SQLite store (the same rows, so both
    must read back the same)."""
    target = ResultsStore(directory)
    with pg.transaction(url, read_only=True) as source, target.connect() as db:
        for table, order in TABLES.items():
            for row in source.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall():
                columns = list(row)
                db.execute(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})",
                    tuple(row.values()),
                )
    return directory


def dump(url: ResultsURL) -> str:
    """The whole database as SQL text (pg_dump): what the store holds, secrets included."""
    parts = url.dsn.rsplit("/", 1)
    port = parts[0].rsplit(":", 1)[1]
    done = subprocess.run(
        [str(PG_BIN / "pg_dump"), "-h", "127.0.0.1", "-p", port, "-U", "postgres", parts[1]],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


# When matplotlib drew a figure, and the per-process ids of its clip paths and markers.
STAMP = re.compile(r"<dc:date>[^<]*</dc:date>|(?<=[#\"])[pm][0-9a-f]{10}(?=[)\"])")


def same_text(a: str, b: str, names: tuple[str, str]) -> None:
    """The same text once each names its own store as STORE (and figures their time)."""
    a, b = (STAMP.sub("", t.replace(name, "STORE")) for t, name in zip((a, b), names, strict=True))
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    assert a == b, (a[max(0, at - 200) : at + 200], b[max(0, at - 200) : at + 200])


@pytest.fixture(scope="module")
def recorded(postgres_server, tmp_path_factory):
    """A two-job campaign of SQLite ratings recorded into PostgreSQL through the CLI, and
    its rows copied into an SQLite store; (url, sqlite directory, campaign id, outputs)."""
    work = tmp_path_factory.mktemp("shared")
    url = url_of(postgres_server)
    file = work / "campaign.yaml"
    file.write_text(CAMPAIGN.replace("DATA", str(work)))
    run = bgbench("campaign", "run", str(file), "--results", url.dsn, "--json", cwd=work)
    assert run.returncode == 0, run.stderr[-2000:]
    campaign_id = json.loads(run.stdout)["campaign_id"]
    return url, copy_to_sqlite(url, work / "copy"), campaign_id, [run], work


def test_a_campaign_in_postgres_loads_as_the_same_rows_in_sqlite(recorded):
    url, copy, campaign_id, _, _ = recorded
    shared, local = results.load(url), results.load(copy)
    assert len(shared.ratings) == 2 and list(shared.campaigns["id"]) == [campaign_id]
    assert (shared.campaign_jobs["status"] == "done").all()
    assert len(shared.experiments) >= 4 and len(shared.per_action) > 0
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(shared, name), getattr(local, name), obj=name)
    rid, seq = shared.experiments.iloc[-1][["rating_id", "seq"]]
    assert shared.result(rid, seq) == local.result(rid, seq)
    pd.testing.assert_frame_equal(shared.resource_series(rid, seq), local.resource_series(rid, seq))
    assert results.load(str(url)).ratings["id"].tolist() == shared.ratings["id"].tolist()


def test_report_compare_and_results_read_postgres_as_sqlite(recorded, tmp_path):
    url, copy, campaign_id, _, _ = recorded
    ids = results.load(copy).ratings["id"].tolist()
    names = (str(url), str(copy / "bgbench.sqlite"))
    for args in (["results"], ["results", "show", ids[0]], ["campaign", "show", campaign_id],
                 ["compare", *ids]):  # fmt: skip
        a = bgbench(*args, "--results", url.dsn)
        b = bgbench(*args, "--results", str(copy))
        assert a.returncode == b.returncode == 0, (args, a.stderr, b.stderr)
        same_text(a.stdout, b.stdout, names)
    for ident in (campaign_id, ids[1]):
        pages = []
        for where, out in ((url.dsn, "pg"), (str(copy), "lite")):
            page = tmp_path / f"{out}-{ident}.html"
            done = bgbench("report", ident, "--results", where, "-o", str(page))
            assert done.returncode == 0, done.stderr
            pages.append(page.read_text())
        same_text(pages[0], pages[1], names)
        assert ident in pages[0] and ("<svg" in pages[0] or "<img" in pages[0])
    both = [tmp_path / "pg-compare.html", tmp_path / "lite-compare.html"]
    for where, page in zip((url.dsn, str(copy)), both, strict=True):
        assert bgbench("compare", *ids, "--results", where, "-o", str(page)).returncode == 0
    same_text(both[0].read_text(), both[1].read_text(), names)


def test_the_deck_lists_a_postgres_store_and_serves_its_report(recorded, tmp_path):
    url, copy, campaign_id, _, _ = recorded
    ids = results.load(copy).ratings["id"].tolist()
    base = "http://127.0.0.1:8765"
    hosts = HostRule.for_binding("127.0.0.1", "127.0.0.1", 8765)
    app = create_app(DeckConfig(tmp_path / "res", tmp_path / "settings", hosts, store=url))
    with TestClient(app, base_url=base, headers={"Origin": base, CSRF_HEADER: app.state.csrf}) as c:
        page = c.get("/ratings")
        assert page.status_code == 200
        assert all(i in page.text for i in ids) and campaign_id in page.text
        assert PASSWORD not in page.text
        report = c.get(f"/ratings/{ids[0]}/report")
        assert report.status_code == 200 and ids[0] in report.text, report.text[:300]
    assert for_child(url) == (url.dsn.replace(f":{PASSWORD}", ""), {"PGPASSWORD": PASSWORD})


def test_the_password_is_never_shown_nor_stored(recorded):
    url, _, _, runs, work = recorded
    assert PASSWORD in url.dsn and PASSWORD not in str(url) and PASSWORD not in repr(url)
    for run in runs:
        assert PASSWORD not in run.stdout + run.stderr
    assert "***" in run.stderr  # the URL is shown, redacted
    held = dump(url)
    assert "shared-store" in held and PASSWORD not in held
    for path in work.rglob("*"):
        if path.is_file() and path.suffix != ".sqlite":
            assert PASSWORD.encode() not in path.read_bytes(), path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_bad_url_is_one_line_and_exit_2_with_nothing_lost(tmp_path):
    kept = tmp_path / "results"
    assert bgbench("results", cwd=tmp_path).returncode == 2  # nothing there yet
    ResultsStore(kept).start_rating("R1", "soar", "sqlite", '{"workload": {"name": "bg"}}')
    before = (kept / "bgbench.sqlite").read_bytes()
    down = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/bg"
    cases = [
        (["results", "--results", "mysql://u@127.0.0.1/x"], "scheme 'mysql'"),
        (["results", "--results", "postgresql:///nohost"], "no host"),
        (["report", "R1", "--results", "postgresql://u@127.0.0.1:5432"], "name one database"),
        (["results", "--results", down], "cannot connect"),
        (["report", "R1", "--results", down], "cannot connect"),
        (["rate", "--store", "sqlite", "--results", down], "cannot connect"),
        (["campaign", "list", "--results", down], "cannot connect"),
    ]
    for args, reason in cases:
        done = bgbench(*args, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (args, done.stderr)
        assert reason in lines[0] and PASSWORD not in done.stderr + done.stdout, lines
    assert (kept / "bgbench.sqlite").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["results"]  # no data, no work dir made
    assert not list(kept.iterdir())[1:]


RUN = "20261207-000000-T1"  # a run's id: its time to the second and its T


def experiment(threads: int) -> ExperimentResult:
    lat = LatencySummary(10, 1.0, 1.0, 1.0, 1.0, 1.0)
    return ExperimentResult(
        experiment_id=f"E-T{threads}", threads=threads, duration_s=1.0, elapsed_s=1.0,
        store="test", actions=10, sessions=10, errors=0, actions_per_s=10.0,
        sessions_per_s=10.0, within_percent=100.0, unpredictable_percent=0.0, reads=0,
        unpredictable_reads=0, per_action=[], overall=lat, agents=[], passed=True,
    )  # fmt: skip


def test_coordinators_recording_at_once_do_not_clash(postgres_server, tmp_path):
    """Four coordinators make the schema at once (none has it yet), each records its own
    rating and a run whose id the others' runs take too, and all four record into one
    rating (R0) at once: every row kept, ids and seq unique."""
    url = url_of(postgres_server)
    errors: list[BaseException] = []
    ran: list[str] = []  # runs at the same T in the same second, on each coordinator
    started = threading.Barrier(4, timeout=120)

    def coordinator(n: int) -> None:
        try:
            store = ResultsStore(tmp_path / f"w{n}", url)  # the schema made by whoever is first
            store.start_rating(f"R{n}", "soar", "sqlite", '{"workload": {"name": "bg"}}')
            started.wait()
            ran.append(store.start_rating(RUN, "run", "sqlite", "{}", renamed=True))
            for t in range(1, 6):
                store.add_experiment(f"R{n}", "search", experiment(t))
                store.add_experiment("R0", "final", experiment(t))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=coordinator, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not errors, errors
    store = ResultsStore.existing(url)
    runs = [RUN, *(f"{RUN}-{n}" for n in (2, 3, 4))]
    assert sorted(ran) == runs
    assert sorted(r["id"] for r in store.ratings()) == [*runs, "R0", "R1", "R2", "R3"]
    assert [e["seq"] for e in store.experiments("R0")] == list(range(1, 26))  # 10 + 3 x 5
    assert [e["seq"] for e in store.experiments("R3")] == [1, 2, 3, 4, 5]
    with pg.transaction(url, read_only=True) as db:
        assert db.execute("SELECT count(*) FROM bgbench_meta").fetchone()[0] == 1


def test_a_newer_or_damaged_store_is_refused_in_one_line(postgres_server, tmp_path):
    url = url_of(postgres_server)
    store = ResultsStore(tmp_path, url)
    store.start_rating("R1", "soar", "sqlite", '{"workload": {"name": "bg"}}')
    with pg.transaction(url) as db:
        db.execute("UPDATE ratings SET config_json = ? WHERE id = 'R1'", ("{not json\x1b[2J",))
    with pytest.raises(UserError, match=r"ratings row 'R1': config_json is not JSON") as bad:
        results.load(url)
    assert "\x1b" not in str(bad.value) and PASSWORD not in str(bad.value)
    with pg.transaction(url) as db:
        db.execute("UPDATE bgbench_meta SET value = '99' WHERE key = 'schema_version'")
    for attempt in (lambda: ResultsStore(tmp_path, url), lambda: results.load(url)):
        with pytest.raises(UserError, match=r"made by a newer bgbench \(schema 99 > 2\)"):
            attempt()
    with pg.transaction(url, read_only=True) as db:  # refused untouched
        assert db.execute("SELECT value FROM bgbench_meta").fetchone()[0] == "99"
