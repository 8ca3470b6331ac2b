"""The `bgbench` command line."""

import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bgbench.coordinator.interfaces.cli_campaign import campaign_app
from bgbench.coordinator.interfaces.cli_deck import deck
from bgbench.coordinator.interfaces.cli_live import EventsOption, MetricsPortOption, live_sink
from bgbench.coordinator.interfaces.cli_report import report_app
from bgbench.coordinator.interfaces.cli_results import (
    JsonFlag,
    ResultsFlag,
    results_app,
    results_location,
)
from bgbench.coordinator.interfaces.consoles import err, out
from bgbench.errors import BGBenchError, SystemFault, UserError

INTERRUPTED_EXIT = 130  # records/faults.EXIT_INTERRUPTED, without importing it here

if TYPE_CHECKING:
    from bgbench.coordinator.configuration.config import Settings

# Each command imports what it runs: `bgbench --help`, a bad flag and every other command
# pay nothing for the rest (statistics, the agents' gRPC client, pydantic models, rich).
__all__ = ["app", "main"]  # and, as before the API existed, those of __getattr__ below

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Rate data stores against an SLA under a workload (BG's social network by default).",
)


def __getattr__(name: str) -> Any:
    """new_rating_id, results_path and resumed_settings, importable from here as before the
    API existed, imported when asked for."""
    if name in ("new_rating_id", "results_path"):
        from bgbench.coordinator.rating import api

        return getattr(api, name)
    if name == "resumed_settings":
        from bgbench.coordinator.rating.resume import resumed_settings

        return resumed_settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML or YAML settings file")
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-p",
        help="override a setting: NAME=VALUE, NAME a dotted path (run.seed) or a "
        "paper's parameter name the workload accepts (usercount, threadcount, ...)",
    ),
]


def _overrides(params: list[str] | None, **flags: Any) -> list[tuple[str, Any]]:
    from bgbench.coordinator.configuration.config import parse_override

    pairs = [parse_override(p) for p in params or []]
    pairs += [(path, value) for path, value in flags.items() if value is not None]
    return pairs


def _settings(config: Path | None, param: list[str] | None, flags: dict[str, Any]) -> "Settings":
    from bgbench.coordinator.configuration.config import load_settings

    return load_settings(config, _overrides(param, **flags))


def _common_flags(
    workload: str | None,
    store: str | None,
    threads: int | None,
    duration: float | None,
    agents: int | None,
    processes: int | None,
    mix: str | None,
    users: int | None,
    results: str | None,
) -> dict[str, Any]:
    from bgbench.coordinator.configuration.config import SCALE_OVERRIDE
    from bgbench.coordinator.storage.location import ResultsURL, location

    where = location(results) if results else None  # a bad URL: one line, before anything

    return {
        "workload.name": workload,
        "store.name": store,
        "run.threadcount": threads,
        "run.maxexecutiontime": duration,
        "agents.local": agents,
        "agents.processes": processes,
        "mix": mix,  # the workload's own alias for its mix
        SCALE_OVERRIDE: users,
        "results_dir": str(where) if isinstance(where, Path) else None,
        "results.url": where.dsn if isinstance(where, ResultsURL) else None,
    }


WorkloadFlag = Annotated[
    str | None, typer.Option(help="the workload to run (default bg; see bgbench stores)")
]
StoreFlag = Annotated[str | None, typer.Option(help="store binding (bgbench stores), or model")]
AgentsFlag = Annotated[int | None, typer.Option(help="local agents to spawn")]
ProcessesFlag = Annotated[int | None, typer.Option(help="load processes per agent")]
MixFlag = Annotated[str | None, typer.Option(help="verylow, low, high or sessions")]
UsersFlag = Annotated[int | None, typer.Option(help="members in the database")]
TargetRateFlag = Annotated[
    float | None,
    typer.Option(
        help="open loop: actions/s arriving over all agents (Poisson; run.arrivals), latency "
        "counted from each intended start; with rate --over rate, the first rate searched"
    ),
]


@app.command()
def run(
    ctx: typer.Context,
    config: ConfigOption = None,
    workload: WorkloadFlag = None,
    store: StoreFlag = None,
    threads: Annotated[int | None, typer.Option(help="T: threads over all agents")] = None,
    duration: Annotated[float | None, typer.Option(help="seconds")] = None,
    agents: AgentsFlag = None,
    processes: ProcessesFlag = None,
    mix: MixFlag = None,
    users: UsersFlag = None,
    results: ResultsFlag = None,
    target_rate: TargetRateFlag = None,
    as_json: JsonFlag = False,
    param: ParamOption = None,
    events: EventsOption = None,
    metrics_port: MetricsPortOption = None,
) -> None:
    """Run one experiment at T threads and print every figure."""
    from bgbench.coordinator.interfaces.console import ConsoleView, with_bottleneck
    from bgbench.coordinator.rating import api
    from bgbench.coordinator.reports.report import render

    flags = _common_flags(
        workload, store, threads, duration, agents, processes, mix, users, results
    )
    flags["run.target_rate"] = target_rate
    settings = _settings(config, param, flags)
    view = ConsoleView(err())
    record = api.run(settings, say=view.say, events=live_sink(ctx, events, metrics_port, view))
    if as_json:
        print(record.result.to_json())
    else:
        out().print(with_bottleneck(render(record.result, settings), record.result.bottleneck))
        if not record.unrecorded:
            out().print(f"recorded in {record.path}")
    if record.unrecorded:
        raise SystemFault(record.unrecorded)
    if record.result.fault:
        raise SystemFault(record.result.fault)


@app.command()
def rate(
    ctx: typer.Context,
    config: ConfigOption = None,
    workload: WorkloadFlag = None,
    store: StoreFlag = None,
    objective: Annotated[
        str | None,
        typer.Option(
            help="both, soar, socialites, exhaustive, or sweep (no search: a list "
            "of thread counts, each run rating.sweep_repeats times, averaged)"
        ),
    ] = None,
    delta: Annotated[float | None, typer.Option(help="Delta: final duration, s")] = None,
    delta_search: Annotated[
        float | None, typer.Option(help="Delta_s: duration while searching, s")
    ] = None,
    t0: Annotated[int | None, typer.Option(help="first thread count")] = None,
    max_threads: Annotated[int | None, typer.Option(help="highest T tried")] = None,
    warmup: Annotated[
        float | None, typer.Option(help="run unrated for S seconds before the search")
    ] = None,
    state: Annotated[str | None, typer.Option(help="carry, reload or readback")] = None,
    target_rate: TargetRateFlag = None,
    over: Annotated[
        str | None,
        typer.Option(help="threads (closed loop, the default) or rate (search the open-loop rate)"),
    ] = None,
    agents: AgentsFlag = None,
    processes: ProcessesFlag = None,
    mix: MixFlag = None,
    users: UsersFlag = None,
    results: ResultsFlag = None,
    resume: Annotated[
        str | None, typer.Option(help="continue this interrupted rating (its own settings)")
    ] = None,
    as_json: JsonFlag = False,
    param: ParamOption = None,
    events: EventsOption = None,
    metrics_port: MetricsPortOption = None,
) -> None:
    """Rate a store: SoAR and Socialites against the SLA (search, then a final experiment),
    or sweep a list of thread counts (--objective sweep)."""
    from bgbench.coordinator.interfaces.console import ConsoleView, with_bottleneck
    from bgbench.coordinator.rating import api
    from bgbench.coordinator.reports.report import render_rating
    from bgbench.coordinator.storage.results import ResultsStore

    view = ConsoleView(err())
    sink = live_sink(ctx, events, metrics_port, view)  # closed with the command
    if resume:
        if workload is not None:
            raise UserError("--workload: a resumed rating keeps its recorded workload")
        store_db = ResultsStore.existing(results_location(results))
        settings = api.settings_to_resume(store_db, resume, _overrides(param))
        record = api.rate(settings, store_db, resume=resume, say=view.say, events=sink)
    else:
        flags = _common_flags(workload, store, None, None, agents, processes, mix, users, results)
        flags.update(
            {
                "rating.objective": objective,
                "sla.delta_s": delta,
                "sla.delta_search_s": delta_search,
                "rating.t0": t0,
                "rating.max_threads": max_threads,
                "rating.warmup_s": warmup,
                "rating.state": state,
                "run.target_rate": target_rate,
                "rating.over": over,
            }
        )
        settings = _settings(config, param, flags)
        record = api.rate(settings, settings.results_dir, say=view.say, events=sink)
    if record.summary is None:
        raise SystemFault(record.fault or f"rating {record.rating_id} did not finish")
    if as_json:
        print(json.dumps(record.summary.to_dict(), indent=2))
    else:
        experiments = ResultsStore.reopen(record.results).experiments(record.rating_id)
        shown = render_rating(record.summary, experiments, settings)
        out().print(with_bottleneck(shown, record.summary.bottleneck))


@app.command()
def study(
    name: Annotated[
        str,
        typer.Argument(
            help="the study (bgbench study NAME --help lists none: "
            "see the workload's README section)"
        ),
    ],
    config: ConfigOption = None,
    workload: WorkloadFlag = None,
    store: StoreFlag = None,
    users: UsersFlag = None,
    results: ResultsFlag = None,
    as_json: JsonFlag = False,
    param: ParamOption = None,
) -> None:
    """Run one of a workload's own studies (the sensor-log paper's `load` and `queries`),
    record every measurement, print its tables."""
    from bgbench.coordinator.execution.target_kinds import target_kind
    from bgbench.coordinator.rating.api import new_rating_id, results_path, settings_url
    from bgbench.coordinator.rating.study import run_study
    from bgbench.coordinator.reports.report import study_tables

    flags = _common_flags(workload, store, None, None, None, None, None, users, results)
    settings = _settings(config, param, flags)
    if not target_kind(settings).measures_a_store:
        raise UserError("a study measures a real store: choose one with --store (bgbench stores)")
    results_dir = results_path(settings.results_dir)
    url = settings_url(settings)
    record = run_study(settings, name, new_rating_id(), results_dir, err().print, url)
    if as_json:
        print(json.dumps(record.to_dict(), indent=2, default=str))
        return
    out().print(
        f"Study {record.study} {record.rating_id} of {record.workload} on {record.store}, "
        f"{record.seconds:,.1f} s"
    )
    for table in study_tables(record.tables):
        out().print(table)


@app.command("check-config")
def check_config(
    file: Annotated[Path, typer.Argument(help="TOML or YAML settings file")],
    param: ParamOption = None,
) -> None:
    """Validate a settings file (and overrides) without generating any load."""
    from bgbench.coordinator.configuration.redaction import redact_config
    from bgbench.coordinator.execution.checkconfig import check_settings_file

    settings = check_settings_file(file, _overrides(param))
    out().print(f"{file}: valid")
    out().print_json(json.dumps(redact_config(json.loads(settings.model_dump_json()))))


app.command()(deck)

app.add_typer(results_app, name="results")
app.add_typer(campaign_app, name="campaign")
app.add_typer(report_app)  # report and compare


@app.command()
def validate(
    directory: Annotated[Path, typer.Argument(help="logs of an experiment, agent or rating")],
    memory_budget: Annotated[
        str, typer.Option(help="above this, validate out of core (spill files on disk)")
    ] = "2GiB",
    workers: Annotated[int | None, typer.Option(help="processes (default: all cores)")] = None,
    initial: Annotated[
        Path | None, typer.Option(help="BG logs: initial values, CSV of type,rid,value")
    ] = None,
    initial_default: Annotated[
        int | None, typer.Option(help="BG logs: initial value of items not in --initial")
    ] = None,
    per_read: Annotated[
        Path | None, typer.Option(help="write every unpredictable read to this CSV")
    ] = None,
    allow_malformed: Annotated[
        bool, typer.Option(help="BG logs: validate the good lines, list the bad ones")
    ] = False,
    allow_unfinished: Annotated[
        bool,
        typer.Option(help="skip the logs of experiments that never finished, and list them"),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Re-run validation on stored logs (bgbench's, or the original BG's)."""
    from bgbench.coordinator.execution.offline import (
        check_per_read,
        parse_size,
        validate_directory,
        write_per_read,
    )
    from bgbench.coordinator.reports.report import render_validation

    if per_read is not None:
        check_per_read(per_read)  # before the work, not after it
    report = validate_directory(
        directory,
        parse_size(memory_budget),
        workers,
        initial,
        initial_default,
        keep_reads=per_read is not None,
        allow_malformed=allow_malformed,
        allow_unfinished=allow_unfinished,
    )
    if report.workers_note:
        err().print(report.workers_note)
    if per_read is not None:
        n = write_per_read(report, per_read)
        err().print(f"wrote {n} unpredictable reads to {per_read}")
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        out().print(render_validation(report.to_dict()))


@app.command()
def stores(workload: WorkloadFlag = None) -> None:
    """List the store bindings installed: one line per workload, or one line per store of
    --workload (and the model store, which simulates any)."""
    from bgbench import extras
    from bgbench.coordinator.execution import preflight
    from bgbench.coordinator.execution.target_kinds import simulated_store_names
    from bgbench.workloads import registry

    if workload is not None:
        for name in [*preflight.store_names(workload), *simulated_store_names()]:
            out().print(name)
        return
    for name in registry.workload_names():
        out().print(f"{name}: {' '.join(preflight.store_names(name))}")
    for name in simulated_store_names():
        out().print(f"{name} (simulated, any workload)")
    lacking = [s for s in extras.STORE_EXTRA if extras.store_problem(s)]
    if lacking:  # listed, but their drivers come with extras (docs/guide/install.md)
        wanted = ",".join(sorted({extras.STORE_EXTRA[s] for s in lacking}))
        print(f"without their extra here: {' '.join(lacking)}; pip install 'bgbench[{wanted}]'")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def agent(ctx: typer.Context) -> None:
    """Run a worker agent: bgbench agent --help for its options."""
    # Listed here for --help: bgbench/__main__.py sends `bgbench agent` to the worker before
    # this module is imported; called here, the process becomes that command.
    os.execv(sys.executable, [sys.executable, "-m", "bgbench", "agent", *ctx.args])


def main() -> None:
    """The command line (the entry is bgbench/__main__.py, which handles an interrupt
    while this module is imported; here it becomes a KeyboardInterrupt, that stops what
    the command started, and on the way out the process ends at once again)."""
    on_interrupt = signal.getsignal(signal.SIGINT) or signal.SIG_DFL  # __main__.py: exit at once
    try:
        code = _run_app()
    finally:
        signal.signal(signal.SIGINT, on_interrupt)  # nothing left to stop
    if code == INTERRUPTED_EXIT:
        # Interrupted, everything stopped and recorded: end now. The interpreter's teardown
        # gives SIGINT back its default action, and a second interrupt landing there (seen
        # once in CI, sender unknown) killed the process by the signal instead of exit 130.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _run_app() -> int:
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = app(standalone_mode=False)
    except typer.Abort:
        from bgbench.coordinator.records.faults import EXIT_INTERRUPTED

        print("bgbench: aborted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # bad flag or argument
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "bgbench"
        print(f"bgbench: error: {exc.format_message()} (see {command} --help)", file=sys.stderr)
        return 2
    except (BGBenchError, KeyboardInterrupt) as exc:
        return _ended(exc)
    if not isinstance(code, int) or not code:
        return 0
    from bgbench.coordinator.records.faults import EXIT_INTERRUPTED

    # Without standalone mode, click returns a command's typer.Exit code instead of exiting;
    # typer turns an interrupt into exit 130 without a word.
    if code == EXIT_INTERRUPTED:
        return _ended(KeyboardInterrupt())
    return code


def _ended(exc: BaseException) -> int:
    from bgbench.coordinator.records.faults import ending

    status, line = ending(exc)
    print(line, file=sys.stderr)
    return status
