"""Hand-built resource figures (bgbench.resources.model) for the tests of the frames,
reports, compare and campaigns, and a way to record them with a real rating's
experiments in its results store (as an experiment's result JSON keeps them)."""

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bgbench.coordinator.storage.results import DB_NAME
from bgbench.resources.model import (
    Bottleneck,
    GroupSample,
    HostFigures,
    HostSample,
    ResourceFigures,
)

HOSTILE = "db<script>alert(1)</script>"  # a host name as the network may give it


def server_bound(threads: int, host: str = "db1") -> ResourceFigures:
    """Two hosts: the store's (2 cores, PostgreSQL's processes found by port) whose CPU
    grows with T, and the client's; the server's CPU named."""
    share = min(1.0, 0.2 + 0.1 * threads)
    store = HostFigures(
        host_id="boot-db", host=host, source="agent", samples=8, cores=2,
        cpu_cores=2 * share, cpu_per_core=[share, share], memory_used_bytes=2 << 30,
        memory_total_bytes=8 << 30, disk_read_bytes_per_s=1e6, disk_write_bytes_per_s=3e6,
        disk_busy=0.25, busiest_disk="sda", net_rx_bytes_per_s=2e6, net_tx_bytes_per_s=5e6,
        net_capacity_bytes_per_s=125e6, store_cpu_cores=1.9 * share, store_cores_allowed=2,
        store_runqueue_cores=0.05 * share, store_busiest_cores=0.4, store_rss_bytes=1 << 30,
        store_processes=23, store_found_by="port 5432",
    )  # fmt: skip
    client = HostFigures(
        host_id="boot-client", host="client1", source="agent", samples=8, cores=4,
        cpu_cores=0.8, cpu_per_core=[0.2] * 4, memory_total_bytes=4 << 30,
        load_cpu_cores=0.7, load_cores_allowed=4, load_busiest_cores=0.4, load_processes=2,
    )  # fmt: skip
    used = store.store_cpu_cores + store.store_runqueue_cores
    saturated = used / 2 >= 0.9
    bottleneck = Bottleneck(
        kind="server_cpu" if saturated else "none", resource="server CPU", host=host,
        used=used, capacity=2, utilisation=used / 2,
        text=f"server CPU {used:.2f} of 2 cores (23 processes, port 5432)" if saturated
        else f"no resource saturated: the store's latency or locking set the limit "
        f"(busiest: server CPU {used:.2f} of 2 cores)",
    )  # fmt: skip
    return ResourceFigures(
        hosts=[store, client],
        bottleneck=bottleneck,
        series={"agent 127.0.0.1:50051": series(host, "boot-db", store=True),
                "agent 127.0.0.1:50052": series("client1", "boot-client", store=False)},
        window_s=(1.0, 4.0),
        notes=["node_exporter 127.0.0.1:1 did not answer: no figures of it"],
    )  # fmt: skip


def client_bound(threads: int) -> ResourceFigures:
    """One host (an embedded store): the load processes at 97% of their 2 cores."""
    host = HostFigures(
        host_id="boot-one", host="laptop", source="agent", samples=8, cores=2,
        cpu_cores=1.95, cpu_per_core=[0.97, 0.98], load_cpu_cores=1.9,
        load_runqueue_cores=0.04, load_cores_allowed=2, load_busiest_cores=0.99,
        load_processes=2,
    )  # fmt: skip
    bottleneck = Bottleneck(
        kind="client", resource="load processes' CPU", host="laptop", used=1.94, capacity=2,
        utilisation=0.97, client_bound=True,
        text="load processes at 97% of their 2 cores (the store runs inside them)",
    )  # fmt: skip
    return ResourceFigures(
        hosts=[host], bottleneck=bottleneck,
        series={"agent 127.0.0.1:50051": series("laptop", "boot-one", store=False)},
        window_s=(1.0, 4.0),
    )  # fmt: skip


def series(host: str, host_id: str, store: bool, n: int = 10) -> list[HostSample]:
    out = []
    for i in range(n):
        group = GroupSample(cpu_cores=0.1 * i, cores_allowed=2, processes=3, runqueue_cores=0.01)
        out.append(HostSample(
            host_id=host_id, host=host, source="agent", elapsed_s=0.5 * (i + 1),
            interval_s=0.5, cpu_per_core=[0.05 * i, 0.05 * i], memory_used_bytes=1 << 30,
            memory_total_bytes=8 << 30, disk_write_bytes_per_s=1e5 * i, disk_busy=0.02 * i,
            busiest_disk="sda", net_rx_bytes_per_s=1e5 * i, net_tx_bytes_per_s=2e5 * i,
            store=group if store else None, load=None if store else group,
        ))  # fmt: skip
    return out


Make = Callable[[dict[str, Any]], ResourceFigures | None]


def record_resources(results: Path, rating_id: str, make: Make) -> None:
    """Put `make(experiment row)`'s figures in each recorded experiment of the rating, as
    an experiment's result keeps them (its result_json's key "resources")."""
    db = sqlite3.connect(results / DB_NAME)
    db.row_factory = sqlite3.Row
    with db:
        rows = db.execute("SELECT * FROM experiments WHERE rating_id = ?", (rating_id,))
        for row in [dict(r) for r in rows]:
            result = json.loads(row["result_json"])
            figures = make(row)
            result["resources"] = None if figures is None else figures.to_record()
            db.execute(
                "UPDATE experiments SET result_json = ? WHERE rating_id = ? AND seq = ?",
                (json.dumps(result), rating_id, row["seq"]),
            )
    db.close()
