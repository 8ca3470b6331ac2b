"""A recorded rating's settings made ready to resume: its redacted secrets given again, and
relative file paths resolved against the directory where it started."""

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bgbench.coordinator.configuration.config import Settings, describe_validation_error, set_path
from bgbench.coordinator.configuration.redaction import REDACTED, redact_config, redacted_paths
from bgbench.coordinator.records.events import Say
from bgbench.errors import UserError
from bgbench.workloads import registry


def resumed_settings(
    record: dict[str, Any], overrides: list[tuple[str, Any]], results_dir: Path
) -> Settings:
    """A recorded rating's settings. Its secrets were redacted when it was recorded: the
    token comes from $BGBENCH_TOKEN or -p agents.token, redacted store options from -p;
    nothing else may change on resume."""
    data = json.loads(record["config_json"])
    data = redact_config(data)  # records written before redaction existed hold secrets
    lost = redacted_paths(data["store"]["options"])
    if data["agents"].get("token") == REDACTED:
        data["agents"]["token"] = None  # credentials() falls back to $BGBENCH_TOKEN
        lost.append("agents.token")
    allowed = set(lost)
    for path, value in overrides:
        if path not in allowed:
            raise UserError(
                f"-p {path}: a resumed rating keeps its recorded settings; only its redacted "
                f"secrets may be given again ({', '.join(sorted(allowed)) or 'it has none'})"
            )
        set_path(data, path, value)
    missing = [p for p in lost if p != "agents.token" and p not in dict(overrides)]
    if missing:
        raise UserError(
            f"rating {record['id']} was recorded with {missing[0]} redacted (a secret is never "
            f"stored): give it again with -p {missing[0]}=VALUE"
        )
    data["results_dir"] = str(results_dir)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(describe_validation_error(exc)) from None


def resolve_at_origin(settings: Settings, record: dict[str, Any], say: Say) -> None:
    """Resume as where the rating started: relative paths in its settings (a SQLite file,
    TLS files) are made absolute against that directory, so they name the same files they
    named then (the process never changes directory)."""
    origin = record.get("cwd")
    if not origin or Path(origin) == Path.cwd():
        return
    if not Path(origin).is_dir():
        say(
            f"the rating started in {origin}, which is gone: relative paths in its "
            f"settings now resolve in {Path.cwd()}"
        )
        return
    resolve_paths(settings, Path(origin))
    say(f"resuming in {origin}, where the rating started")


def resolve_paths(settings: Settings, base_dir: Path) -> None:
    """Relative file paths of `settings` made absolute against `base_dir`: the agents' TLS
    files and, for local agents, the store's file options (their defaults included); a
    listed agent keeps those in its own work dir."""
    tls = settings.agents.tls
    if tls is not None:
        tls.ca_file = base_dir / tls.ca_file
        tls.cert_file = base_dir / tls.cert_file if tls.cert_file else None
        tls.key_file = base_dir / tls.key_file if tls.key_file else None
    if settings.agents.addresses:
        return
    try:
        spec = registry.spec(settings.workload.name, settings.store.name)
    except UserError:  # not a binding (the model store): no file option
        return
    options = settings.store.options
    for name in spec.file_options:
        field = spec.options.model_fields.get(name)
        value = options.get(name, field.default if field is not None else None)
        if isinstance(value, str) and _is_relative_file(value):
            options[name] = str(base_dir / value)


def _is_relative_file(value: str) -> bool:
    """A relative path, not ":memory:" or a URI."""
    return (
        bool(value)
        and not value.startswith(":")
        and "://" not in value
        and not (Path(value).is_absolute())
    )
