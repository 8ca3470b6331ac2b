"""The `bgbench` command line."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from bgbench.coordinator import preflight
from bgbench.coordinator.agents import spawn_local_agents
from bgbench.coordinator.config import load_settings, parse_override
from bgbench.coordinator.experiment import Cluster, new_experiment_id, run_experiment, save
from bgbench.coordinator.report import LiveProgress, render
from bgbench.errors import SystemFault, UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Rate data stores for interactive social-networking actions (the BG benchmark).",
)
# Wide enough for the tables when output goes to a file or a CI log.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML or YAML settings file")
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-p",
        help="override a setting: NAME=VALUE, NAME a dotted path (run.seed) or a BG name "
        "(usercount, threadcount, ...)",
    ),
]


def _overrides(params: list[str] | None, **flags: Any) -> list[tuple[str, Any]]:
    pairs = [parse_override(p) for p in params or []]
    pairs += [(path, value) for path, value in flags.items() if value is not None]
    return pairs


@app.command()
def run(
    config: ConfigOption = None,
    store: Annotated[str | None, typer.Option(help="store binding (bgbench stores)")] = None,
    threads: Annotated[int | None, typer.Option(help="T: threads over all agents")] = None,
    duration: Annotated[float | None, typer.Option(help="seconds")] = None,
    agents: Annotated[int | None, typer.Option(help="local agents to spawn")] = None,
    processes: Annotated[int | None, typer.Option(help="load processes per agent")] = None,
    mix: Annotated[str | None, typer.Option(help="verylow, low, high or sessions")] = None,
    users: Annotated[int | None, typer.Option(help="members in the database")] = None,
    results: Annotated[Path | None, typer.Option(help="results directory")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    param: ParamOption = None,
) -> None:
    """Run one experiment at T threads and print every figure."""
    settings = load_settings(
        config,
        _overrides(
            param,
            **{
                "store.name": store,
                "run.threadcount": threads,
                "run.maxexecutiontime": duration,
                "agents.local": agents,
                "agents.processes": processes,
                "bg.workload.mix": mix,
                "bg.database.usercount": users,
                "results_dir": str(results) if results else None,
            },
        ),
    )
    preflight.check_store(settings)
    preflight.check_fit(settings, [settings.agents.processes] * settings.agents.local)
    threads_n = settings.run.threadcount
    experiment_id = new_experiment_id(threads_n)
    run_dir = settings.results_dir / experiment_id
    err.print(
        f"starting {settings.agents.local} local agents x {settings.agents.processes} load "
        f"processes; store {settings.store.name}; T={threads_n}; "
        f"{settings.run.maxexecutiontime:g} s; results in {run_dir}"
    )
    local = spawn_local_agents(
        settings.agents.local, settings.agents.processes, run_dir, settings.agents.start_timeout
    )
    cluster = None
    try:
        cluster = Cluster.connect(local.addresses, settings.agents.capacities)
        replies = cluster.prepare(settings)
        members = sum(f.members for r in replies for f in r.fragments)
        load_s = max(f.load_seconds for r in replies for f in r.fragments)
        err.print(f"loaded {members:,} members in {load_s:.1f} s on {cluster.store_description}")
        progress = LiveProgress(local.addresses, settings.run.maxexecutiontime, err)
        with progress:
            result = run_experiment(
                cluster,
                settings,
                threads_n,
                settings.run.maxexecutiontime,
                experiment_id,
                progress.update,
            )
        path = save(result, run_dir)
        if as_json:
            print(result.to_json())
        else:
            out.print(render(result, settings))
            out.print(f"recorded in {path}")
        if result.fault:
            raise typer.Exit(3)
    finally:
        if cluster:
            for c in cluster.clients:
                c.shutdown()
            cluster.close()
        local.close()


@app.command("check-config")
def check_config(
    file: Annotated[Path, typer.Argument(help="TOML or YAML settings file")],
    param: ParamOption = None,
) -> None:
    """Validate a settings file (and overrides) without generating any load."""
    settings = load_settings(file, _overrides(param))
    preflight.check_store(settings)
    preflight.check_fit(settings, [settings.agents.processes] * settings.agents.local)
    out.print(f"{file}: valid")
    out.print_json(settings.model_dump_json())


@app.command()
def stores() -> None:
    """List the store bindings installed."""
    for name in preflight.store_names():
        out.print(name)


@app.command()
def agent(
    listen: Annotated[str, typer.Option(help="host:port (port 0: any)")] = "127.0.0.1:0",
    work_dir: Annotated[Path, typer.Option(help="where logs are written")] = Path("bgbench-agent"),
    processes: Annotated[int, typer.Option(min=1, max=256, help="load processes")] = 1,
) -> None:
    """Run a worker agent (the coordinator spawns local ones by itself)."""
    from bgbench.worker.agent import main as agent_main  # the one place the CLI hosts a worker

    agent_main(listen, work_dir, processes)


def main() -> None:
    try:
        app(standalone_mode=False)
    except typer.Abort:
        print("bgbench: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # bad flag or argument
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "bgbench"
        print(f"bgbench: error: {exc.format_message()} (see {command} --help)", file=sys.stderr)
        sys.exit(2)
    except UserError as exc:
        print(f"bgbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except SystemFault as exc:
        print(f"bgbench: fault: {exc}", file=sys.stderr)
        sys.exit(3)
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        sys.exit(130)
