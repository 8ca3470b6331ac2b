"""Secrets never printed or stored (issue 24, item 3), through the real CLI on a real
PostgreSQL: runs whose connection strings carry libpq's sslpassword (quoted, with a space
and an escaped quote), a password, a URI password and a URI query parameter, and a
campaign whose file holds an api_key, a token in a URL and a foreach value used as a
password. Every byte written (the results store, every file under the results directory,
the exports, the reports, the events files) and every line printed (check-config,
results, report, compare, campaign) is searched for each secret."""

import json
from functools import partial
from pathlib import Path

import pytest

from tests import helpers

# Each secret holds a marker nothing else holds.
SSLPW = "ssl pw'Sslpw7x"  # written in the DSN as 'ssl pw\'Sslpw7x'
SECRETS = {
    "sslpassword (keyword)": "Sslpw7x",
    "password (keyword)": "Pgpw7x",
    "URI password": "Uripw7x",
    "URI query sslpassword": "Qsslpw7x",
    "campaign api_key": "Apikey7x",
    "campaign URL token": "Qtok7x",
    "campaign foreach password": "Pwvar7x",
    "campaign query sslpassword": "Qsslcamp7x",
}


bgbench = partial(helpers.bgbench, timeout=600)


def ok(*args: str) -> str:
    proc = bgbench(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def leaks(data: bytes | str) -> list[str]:
    raw = data.encode() if isinstance(data, str) else data
    return [name for name, marker in SECRETS.items() if marker.encode() in raw]


def leaking_files(root: Path) -> dict[str, list[str]]:
    return {
        str(p.relative_to(root)): found
        for p in sorted(root.rglob("*"))
        if p.is_file() and (found := leaks(p.read_bytes()))
    }


@pytest.fixture(scope="module")
def database(postgres_server) -> tuple[str, int, str]:
    """(libpq keyword DSN without a secret, port, database) of a fresh database."""
    from tests.conftest import fresh_database

    dsn = fresh_database(postgres_server)
    fields = dict(part.split("=", 1) for part in dsn.split())
    return dsn, int(fields["port"]), fields["dbname"]


def _run(where: Path, dsn: str, name: str) -> str:
    out = ok(
        "run", "--store", "postgres", "--agents", "1", "--threads", "2", "--duration", "2",
        "--users", "200", "--results", str(where / "results"), "--json",
        "--events", str(where / f"{name}.events"), "-p", f"store.options.dsn={dsn}",
        "-p", "rating.steady_state=false",
    )  # fmt: skip
    assert not leaks(out), out
    return str(json.loads(out[: out.rindex("}") + 1])["experiment_id"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory, database) -> tuple[Path, list[str]]:
    """Two runs recorded in one results directory: a keyword DSN, then a URI."""
    where = tmp_path_factory.mktemp("secrets")
    dsn, port, db = database
    keyword = f"{dsn} password=Pgpw7x sslpassword='ssl pw\\'Sslpw7x'"
    uri = f"postgresql://postgres:Uripw7x@127.0.0.1:{port}/{db}?sslpassword=Qsslpw7x"
    return where, [_run(where, keyword, "keyword"), _run(where, uri, "uri")]


def test_check_config_prints_no_secret(tmp_path, database):
    dsn, port, db = database
    settings = tmp_path / "pg.yaml"
    settings.write_text(
        "store:\n  name: postgres\n  options:\n"
        f"    dsn: \"{dsn} sslpassword='ssl pw\\\\'Sslpw7x' password=Pgpw7x\"\n"
    )
    out = ok("check-config", str(settings))
    assert "valid" in out and "sslpassword='***'" in out, out
    assert not leaks(out), out
    uri = f"postgresql://postgres:Uripw7x@127.0.0.1:{port}/{db}?sslpassword=Qsslpw7x"
    out = ok("check-config", str(settings), "-p", f"store.options.dsn={uri}")
    assert "postgres:***@" in out and "sslpassword=***" in out, out
    assert not leaks(out), out


def test_runs_store_and_show_no_secret(runs, tmp_path):
    where, ids = runs
    results = where / "results"
    assert leaking_files(where) == {}  # the store, logs, events files
    shown = ok("results", "--results", str(results))
    shown += ok("results", "show", ids[0], "--results", str(results))
    for rid in ids:
        for fmt in ("json", "csv", "parquet"):
            ok("results", "export", rid, "--format", fmt, "-o", str(tmp_path / f"{rid}.{fmt}"),
               "--results", str(results))  # fmt: skip
        shown += ok("report", rid, "-o", str(tmp_path / f"{rid}.html"), "--results", str(results))
    shown += ok("compare", *ids, "-o", str(tmp_path / "compare.html"), "--results", str(results))
    assert not leaks(shown), shown
    assert leaking_files(tmp_path) == {}
    # What was redacted is shown as redacted, so the test looks where the secret was.
    exported = json.loads((tmp_path / f"{ids[0]}.json").read_text())
    assert "sslpassword='***'" in exported["config"]["store"]["options"]["dsn"]
    report = (tmp_path / f"{ids[1]}.html").read_text()
    assert "postgres:***@" in report and "sslpassword=***" in report


CAMPAIGN = """
campaign: secrets  # api_key: Apikey7x
description: "posts to https://hooks.example/x?token=Qtok7x&n=1"
templates:
  quick:
    sla: {{delta_search_s: 1, delta_s: 1}}
    rating: {{objective: soar, max_threads: 2, final_runs: 2, repeats: 1}}
    agents: {{local: 1, processes: 1}}
jobs:
  - extends: quick
    foreach: {{pw: [Pwvar7x], api_key: [Apikey7x]}}
    store:
      name: postgres
      options:
        dsn: "postgresql://postgres:${{pw}}@127.0.0.1:{port}/{db}?sslpassword=Qsslcamp7x"
    params: {{usercount: 200}}
"""


def test_a_campaign_stores_and_shows_no_secret(tmp_path, database):
    _, port, db = database
    file = tmp_path / "secrets.yaml"
    file.write_text(CAMPAIGN.format(port=port, db=db))
    results = tmp_path / "results"
    out = ok("campaign", "run", str(file), "--results", str(results), "--json",
             "--events", str(tmp_path / "campaign.events"))  # fmt: skip
    outcome = json.loads(out[out.index("{") : out.rindex("}") + 1])
    assert outcome["status"] == "done", outcome
    cid = outcome["campaign_id"]
    shown = out + ok("campaign", "show", cid, "--results", str(results), "--json")
    shown += ok("campaign", "list", "--results", str(results))
    shown += ok("report", cid, "-o", str(tmp_path / "campaign.html"), "--results", str(results))
    rid = outcome["jobs"][0]["rating_id"]
    shown += ok("report", rid, "-o", str(tmp_path / "rating.html"), "--results", str(results))
    ok("results", "export", rid, "--format", "json", "-o", str(tmp_path / "rating.json"),
       "--results", str(results))  # fmt: skip
    assert not leaks(shown), shown
    files = {k: v for k, v in leaking_files(tmp_path).items() if k != file.name}
    assert files == {}
    page = (tmp_path / "campaign.html").read_text()
    assert "token=***" in page and "api_key: ***" in page  # the file's text, redacted


def test_a_password_in_a_store_url_is_not_in_its_description(tmp_path, riak_url):
    # The binding describes itself with its URL: what the agent sends is redacted before
    # the coordinator prints, records or reports it.
    url = riak_url.replace("http://", "http://bg:Uripw7x@", 1)
    results = tmp_path / "results"
    out = ok(
        "run", "--store", "riak", "--agents", "1", "--threads", "1", "--duration", "2",
        "--mix", "sessions", "--users", "200", "--results", str(results), "--json",
        "--events", str(tmp_path / "run.events"), "-p", f"store.options.url={url}",
        "-p", "store.options.consistency=noquorum", "-p", "rating.steady_state=false",
    )  # fmt: skip
    run = json.loads(out[: out.rindex("}") + 1])
    assert "at http://bg:***@127.0.0.1:" in run["store"], run["store"]
    out += ok("report", run["experiment_id"], "-o", str(tmp_path / "run.html"),
              "--results", str(results))  # fmt: skip
    assert not leaks(out), out
    assert leaking_files(tmp_path) == {}
