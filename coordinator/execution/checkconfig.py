"""What `bgbench check-config` checks, for the CLI and the deck alike: the settings model,
the local layout and the checks that need no agent."""

from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.config import Settings, load_settings
from bgbench.coordinator.execution.target_kinds import target_kind


def check_settings_file(file: Path, overrides: list[tuple[str, Any]]) -> Settings:
    """The settings of `file` (and overrides), checked without generating any load; a
    UserError names what is wrong."""
    settings = load_settings(file, overrides)
    check_settings(settings)
    return settings


def check_settings(settings: Settings) -> None:
    """What `rate` checks of valid settings before it starts (a campaign checks each job
    so); it makes the local layout concrete (agents.processes "auto")."""
    kind = target_kind(settings)
    kind.resolve_layout(settings, None)
    kind.check_before_start(settings)
