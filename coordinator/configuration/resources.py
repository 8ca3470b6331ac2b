"""The `[resources]` section: which processes are the store's, the remote hosts to watch
(node_exporter endpoints, monitor-only agents), and the utilisation at which a resource
counts as saturated (bgbench/resources/bottleneck.py). Strict and bounded: settings are
untrusted input."""

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bgbench.resources.bottleneck import Thresholds

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
MAX_LISTED = 64  # pids, names, endpoints or monitors listed
MAX_NAME = 255  # characters of a process name, container or endpoint
PID_MAX = 1 << 22  # Linux's highest pid_max

Saturation = Annotated[float, Field(gt=0, le=1)]
_NAME = re.compile(r"^[\w.@:+-]+$")  # a process or container name: no spaces, no slashes
_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)$")


def host_port(text: str, what: str) -> str:
    """`text` if it is host:port (an IPv6 host in brackets); else a ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not _HOST.match(host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{what} {text!r} must be host:port")
    return text


def endpoint(text: str) -> str:
    """A node_exporter endpoint: host:port, or an http(s) URL of its metrics."""
    if "://" not in text:
        return host_port(text, "node_exporter endpoint")
    url = urlsplit(text)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"node_exporter endpoint {text!r} must be host:port or an http(s) URL")
    try:
        url.port  # noqa: B018 (raises on a port out of range)
    except ValueError:
        raise ValueError(f"node_exporter endpoint {text!r} has a bad port") from None
    if url.username or url.password:
        raise ValueError(f"node_exporter endpoint {text!r}: no credentials in the URL")
    return text


class ResourcesConfig(BaseModel):
    model_config = STRICT

    store_pids: list[Annotated[int, Field(gt=0, lt=PID_MAX)]] = Field(
        default_factory=list,
        max_length=MAX_LISTED,
        description="the store's processes on an agent's host, by pid (with their children)",
    )
    store_process_names: list[Annotated[str, Field(min_length=1, max_length=MAX_NAME)]] = Field(
        default_factory=list,
        max_length=MAX_LISTED,
        description="the store's processes on an agent's host, by name (e.g. postgres)",
    )
    store_container: Annotated[str, Field(max_length=MAX_NAME)] = Field(
        "", description="a container's id or name: the processes of its cgroup are the store's"
    )
    discover_store: bool = Field(
        True,
        description="also watch the local servers the load processes are connected to "
        "(and their children) as the store",
    )
    node_exporters: list[Annotated[str, Field(max_length=MAX_NAME)]] = Field(
        default_factory=list,
        max_length=MAX_LISTED,
        description="Prometheus node_exporter endpoints (host:port or http(s) URL) of remote "
        "store hosts, scraped every 0.5 s during each experiment",
    )
    monitors: list[Annotated[str, Field(max_length=MAX_NAME)]] = Field(
        default_factory=list,
        max_length=MAX_LISTED,
        description="host:port of agents started with `bgbench agent --monitor-only` on "
        "remote store hosts",
    )
    cpu_saturation: Saturation = Field(
        0.9, description="share of its cores at which the store's (or a host's) CPU is saturated"
    )
    client_saturation: Saturation = Field(
        0.9,
        description="share of their cores (or of one core, for one load process) at which "
        "the load processes are saturated: the client bound the experiment",
    )
    disk_saturation: Saturation = Field(
        0.9, description="busy share at which a store host's disk is saturated"
    )
    network_saturation: Saturation = Field(
        0.9, description="share of the links' speed at which a host's network is saturated"
    )

    @field_validator("store_process_names")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not _NAME.match(name):
                raise ValueError(f"process name {name!r}: letters, digits and ._-@:+ only")
        return names

    @field_validator("store_container")
    @classmethod
    def _container(cls, name: str) -> str:
        if name and not _NAME.match(name):
            raise ValueError(f"container {name!r}: letters, digits and ._-@:+ only")
        return name

    @field_validator("node_exporters")
    @classmethod
    def _endpoints(cls, endpoints: list[str]) -> list[str]:
        return [endpoint(e) for e in endpoints]

    @field_validator("monitors")
    @classmethod
    def _monitors(cls, addresses: list[str]) -> list[str]:
        return [host_port(a, "monitor address") for a in addresses]

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(
            cpu=self.cpu_saturation,
            client=self.client_saturation,
            disk=self.disk_saturation,
            network=self.network_saturation,
        )
