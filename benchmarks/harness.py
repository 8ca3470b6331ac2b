"""What the server benchmarks share: deploy/local/servers.py (and its fresh PostgreSQL
database), `bgbench ... --json` in a subprocess, and running a campaign of
examples/campaigns/ with each job's recorded rating read back from the results store."""

import copy
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bgbench.coordinator.storage.results import ResultsStore

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = ROOT / "examples" / "campaigns"
_spec = importlib.util.spec_from_file_location("servers", ROOT / "deploy/local/servers.py")
servers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(servers)


def bgbench(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", *args, "--json"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


new_database = servers.new_database

Patch = Callable[[dict[str, Any]], None]


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on `base` as the campaign language merges: mappings key by key."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def only(names: list[str]) -> Patch:
    """Keep the job entries whose `name` is one of `names`."""

    def patch(data: dict[str, Any]) -> None:
        data["jobs"] = [j for j in data["jobs"] if j.get("name") in names]

    return patch


def every_job(settings: dict[str, Any]) -> Patch:
    """Merge `settings` into every job entry (over what its templates say): e.g. shorter
    experiments and a smaller database for a quick check of a figure."""

    def patch(data: dict[str, Any]) -> None:
        data["jobs"] = [merge(j, settings) for j in data["jobs"]]

    return patch


def campaign_file(name: str, results: Path, patches: list[Patch]) -> Path:
    """examples/campaigns/NAME.yaml, or with `patches` a patched copy of it in `results`
    (its includes made absolute), which the campaign records as the file it ran."""
    path = CAMPAIGNS / f"{name}.yaml"
    if not patches:
        return path
    data = yaml.safe_load(path.read_text())
    for patch in patches:
        patch(data)
    includes = data.get("include", [])
    includes = [includes] if isinstance(includes, str) else includes
    data["include"] = [str((path.parent / i).resolve()) for i in includes]
    results.mkdir(parents=True, exist_ok=True)
    out = results / f"{name}.yaml"
    out.write_text(f"# {path}, patched by benchmarks/\n" + yaml.safe_dump(data, sort_keys=False))
    return out


def run_campaign(name: str, results: Path, patches: list[Patch] | None = None) -> list[dict]:
    """`bgbench campaign run` of examples/campaigns/NAME.yaml (its progress on stderr), then
    every job of `bgbench campaign show --json` with its rating's recorded summary (`rate
    --json`'s, or a study's tables) and experiments (`run --json`'s results) added."""
    path = campaign_file(name, results, patches or [])
    command = ["campaign", "run", str(path), "--results", str(results), "--json"]
    print("bgbench " + " ".join(command), file=sys.stderr, flush=True)
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", *command], stdout=subprocess.PIPE, text=True
    )
    if not proc.stdout.strip():  # a refused campaign: bgbench said why on stderr
        raise SystemExit(proc.returncode or 1)
    return recorded(json.loads(proc.stdout)["campaign_id"], results)


def recorded(campaign_id: str, results: Path) -> list[dict]:
    """Every job of a recorded campaign (`bgbench campaign show --json`), each with its
    rating's summary and experiments from the results store (run_campaign's answer)."""
    shown = bgbench("campaign", "show", campaign_id, "--results", str(results))
    store = ResultsStore.existing(results)
    for job in shown["jobs"]:
        job["record"], job["experiments"] = None, []
        if job["rating_id"]:
            row = store.rating(job["rating_id"])
            job["record"] = json.loads(row["summary_json"]) if row["summary_json"] else None
            job["experiments"] = [
                json.loads(e["result_json"]) for e in store.experiments(job["rating_id"])
            ]
        if job["status"] != "done":
            print(f"job {job['seq']} ({job['label']}) {job['status']}: {job['message']}",
                  file=sys.stderr)  # fmt: skip
    return shown["jobs"]  # type: ignore[no-any-return]


def campaign_jobs(
    name: str, results: Path | None, show: str | None, patches: list[Patch], tmp: str
) -> list[dict]:
    """The jobs of recorded campaign `show` in `results`, or of a new run of campaign NAME
    (in `results`, or a temporary directory)."""
    if show:
        if results is None:
            raise SystemExit("--show CAMPAIGN_ID needs the --results DIR that holds it")
        return recorded(show, results)
    return run_campaign(name, results or Path(tmp) / "results", patches)


def done(jobs: list[dict], name: str) -> list[dict]:
    """The finished jobs of the entry called `name` (failed ones were reported)."""
    return [j for j in jobs if j["label"].split(" ")[0] == name and j["status"] == "done"]
