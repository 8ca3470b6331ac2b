"""What `bgbench check-config` checks, for the CLI and the deck alike: the settings model,
the local layout, a scenario's steps against the nodes it names, and the checks that need
no agent."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from bgbench.coordinator.configuration.config import Settings, load_settings
from bgbench.coordinator.configuration.scenario import (
    NETWORK_ACTIONS,
    NodesConfig,
    check_scenario,
)
from bgbench.coordinator.execution.target_kinds import target_kind
from bgbench.errors import UserError
from bgbench.launchers import nodes as launcher_nodes


def check_settings_file(file: Path, overrides: list[tuple[str, Any]]) -> Settings:
    """The settings of `file` (and overrides), checked without generating any load; a
    UserError names what is wrong."""
    settings = load_settings(file, overrides)
    check_settings(settings)
    return settings


def check_settings(settings: Settings, server_kinds: Sequence[str] = ()) -> None:
    """What `rate` checks of valid settings before it starts (a campaign checks each job
    so, naming the kinds of the servers it starts for the job); it makes the local layout
    concrete (agents.processes "auto")."""
    kind = target_kind(settings)
    kind.resolve_layout(settings, None)
    kind.check_before_start(settings)
    check_scenario_before_start(settings, "rate", server_kinds)


def check_scenario_before_start(
    settings: Settings, command: Literal["rate", "run"], server_kinds: Sequence[str] = ()
) -> None:
    """A scenario's mistakes before anything starts (UserError, one line): on a simulated
    store; a step at or after the end of the experiments `command` runs; a node that none
    of nodes.servers, nodes.commands or `server_kinds` (servers not started yet) has, or
    that cannot do the step's action."""
    if not settings.scenario:
        return
    if not target_kind(settings).measures_a_store:
        raise UserError(
            f"scenario: a scenario needs a real store, not the simulated store "
            f"{settings.store.name!r} (store.name)"
        )
    names, source = scenario_nodes(settings.nodes, server_kinds)
    check_scenario(settings, names, command, source)


def scenario_nodes(
    nodes: NodesConfig, server_kinds: Sequence[str] = ()
) -> tuple[dict[str, frozenset[str]], str]:
    """Each node a scenario may name, with the actions it offers, and where they come
    from (for a message): servers of `server_kinds` (by kind: nothing started), the server
    directories of nodes.servers (their server.json) and nodes.commands. A server's node
    can be partitioned when it has endpoints (packet filtering needs only those)."""
    found: dict[str, frozenset[str]] = {}
    origin: dict[str, str] = {}

    def add(name: str, actions: frozenset[str], where: str) -> None:
        if name in found:
            raise UserError(
                f"nodes: two nodes are named {name} ({origin[name]} and {where}): a scenario "
                "names each node once"
            )
        found[name], origin[name] = actions, where

    for kind in server_kinds:
        for name, actions in launcher_nodes.node_names(kind).items():
            add(name, actions | NETWORK_ACTIONS, f"server {kind}")
    for directory in dict.fromkeys(nodes.servers):  # a campaign may add a listed one again
        try:
            infos = launcher_nodes.nodes_of(directory)
        except (launcher_nodes.NodeActionError, OSError) as exc:
            raise UserError(
                f"nodes.servers: {directory}: {exc} (start it with deploy/local/servers.py "
                "start KIND DIR)"
            ) from None
        for info in infos:
            reachable = info.client_endpoints or info.peer_endpoints
            add(info.name, info.actions | (NETWORK_ACTIONS if reachable else set()), str(directory))
    for name, commands in nodes.commands.items():
        add(name, commands.actions(), "nodes.commands")
    return found, "from " + ", ".join(dict.fromkeys(origin.values()))
