"""`bgbench results [show|export|sweep]`: the ratings recorded in the results store
(coordinator/interfaces/cli.py adds results_app under `results`)."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bgbench.coordinator.interfaces.consoles import err, out
from bgbench.errors import UserError

if TYPE_CHECKING:
    from bgbench.coordinator.configuration.config import Settings
    from bgbench.coordinator.storage.location import Location
    from bgbench.coordinator.storage.results import ResultsStore

results_app = typer.Typer(help="Ratings recorded in the results store.", no_args_is_help=False)
ResultsFlag = Annotated[
    str | None,
    typer.Option(help="results directory, or a postgresql://USER@HOST:PORT/DB store"),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="print the result as JSON")]


def results_location(results: str | Path | None) -> "Location":
    """What --results names: an absolute results directory (default results), or a
    PostgreSQL store's URL (one line, exit 2, when it is not one)."""
    from bgbench.coordinator.rating.api import results_path
    from bgbench.coordinator.storage.location import ResultsURL, location

    where = location(results)
    return where if isinstance(where, ResultsURL) else results_path(where)


def _results_store(results: str | None) -> "ResultsStore":
    from bgbench.coordinator.storage.results import ResultsStore

    return ResultsStore.existing(results_location(results))


@results_app.callback(invoke_without_command=True)
def results_list(
    ctx: typer.Context,
    results: ResultsFlag = None,
) -> None:
    """List the recorded ratings."""
    if ctx.invoked_subcommand is not None:
        return
    from bgbench.coordinator.reports.report import render_ratings

    out().print(render_ratings(_results_store(results).ratings()))


@results_app.command("show")
def results_show(
    rating_id: Annotated[str, typer.Argument(help="rating id")],
    results: ResultsFlag = None,
) -> None:
    """One rating and every experiment it ran."""
    from bgbench.coordinator.reports.report import render_record

    db = _results_store(results)
    record = db.rating(rating_id)
    settings = recorded_settings(record)
    out().print(render_record(record, db.experiments(rating_id), settings))


@results_app.command("export")
def results_export(
    rating_id: Annotated[str, typer.Argument(help="rating id")],
    fmt: Annotated[str, typer.Option("--format", help="csv, json or parquet")] = "csv",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file to write")] = None,
    results: ResultsFlag = None,
) -> None:
    """Export a rating's experiments to CSV, JSON or Parquet."""
    from bgbench.inputs import check_output

    db = _results_store(results)
    target = check_output(output or Path(f"{rating_id}.{fmt}"), "--output")
    try:
        n = db.export(rating_id, fmt, target)
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror}; choose another --output") from None
    out().print(f"wrote {n} experiments to {target}")


@results_app.command("sweep")
def results_sweep(
    rating_id: Annotated[str, typer.Argument(help="rating id of a sweep")],
    csv_file: Annotated[
        Path | None, typer.Option("--csv", help="also write the table to this CSV file")
    ] = None,
    results: ResultsFlag = None,
    as_json: JsonFlag = False,
) -> None:
    """A thread sweep's table (rate --objective sweep): per T and action."""
    from bgbench.coordinator.rating import api
    from bgbench.coordinator.records.sweep import write_csv
    from bgbench.coordinator.reports.report import render_sweep

    db = _results_store(results)
    table = api.sweep_table(db, rating_id)
    if as_json:
        print(json.dumps(table.to_dict(), indent=2))
    else:
        record = db.rating(rating_id)
        title = f"Thread sweep {rating_id} of {record['store']}"
        out().print(render_sweep(table, recorded_settings(record), title))
    if csv_file is not None:
        try:
            n = write_csv(table, csv_file)
        except OSError as exc:
            raise UserError(
                f"--csv: cannot write {csv_file}: {exc.strerror}; choose another file"
            ) from None
        err().print(f"wrote {n} rows to {csv_file}")


def recorded_settings(record: dict[str, Any]) -> "Settings":
    """A recorded rating's settings for showing (its secrets stay redacted)."""
    from pydantic import ValidationError

    from bgbench.coordinator.configuration.config import Settings, describe_validation_error

    data = json.loads(record["config_json"])
    if data.get("agents", {}).get("token"):
        data["agents"]["token"] = None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"rating {record['id']}: {describe_validation_error(exc)}") from None
