"""The contract every EHR store binding passes against its real server: loading, the READ
(the newest results and the count of the same read), the WRITE, reloading, read-back, and
a run through the load engine that validates clean. Parametrised over every binding
registered in `bgbench.ehr_stores`; servers come from tests/integration/stores.py."""

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cassandra import Unavailable
from cassandra.cluster import NoHostAvailable

from bgbench.errors import StoreError
from bgbench.sdk import LoopBridge, blocking_connection
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads import registry
from bgbench.workloads.ehr.config import EHRConfig, EHRDatabaseConfig
from bgbench.workloads.ehr.generator import FragmentData, new_result
from bgbench.workloads.ehr.store import LabResult
from bgbench.workloads.ehr.workload import RESULT_COUNT, WORKLOAD
from tests.conftest import fresh_database
from tests.integration.stores import SERVERS

# Seed 15 gives each of the two fragments patients with 0, 1, 7 and 20 results.
DB = EHRDatabaseConfig(patients=200, seed=15)
CAPACITIES = (1.0, 1.0)
THETA = 0.27
COUNTS = (0, 1, 7, 20)
K = 5
NOBODY = 10**9
# Stores whose result keys are global (a primary key), so a smaller database must drop a
# larger one's patients; Cassandra and Riak key a result within its patient only.
GLOBAL_KEYS = ("sqlite", "postgres", "mongodb")
LONG = 300.0  # runs end on their operation count; this only bounds a hung store


def store_names() -> list[str]:
    return registry.store_names("ehr")


def make_binding(name: str, options: dict) -> Any:
    return registry.make_binding("ehr", name, options)


def server_options(name: str, tmp: Path, request: pytest.FixtureRequest) -> Iterator[dict]:
    assert name in SERVERS, (
        f"no test server for store {name!r}: add it to tests/integration/stores.py"
    )
    yield from SERVERS[name](tmp, request)


def fragments(db: EHRDatabaseConfig = DB, hashed: bool = False) -> list[FragmentData]:
    return [FragmentData(db, THETA, CAPACITIES, k, hashed) for k in range(len(CAPACITIES))]


def generated(f: FragmentData) -> dict[int, list[LabResult]]:
    """Each patient's generated results, newest first."""
    rows: dict[int, list[LabResult]] = {int(p): [] for p in f.patients.tolist()}
    for batch in f.result_batches():
        for r in batch:
            rows[r.patient].append(r)
    for results in rows.values():
        results.sort(key=lambda r: (r.effective_ms, r.id), reverse=True)
    return rows


def nonzero(ids: np.ndarray, counts: np.ndarray) -> dict[int, int]:
    """Patient -> count, leaving out patients without results (as read_back may)."""
    return {p: n for p, n in zip(ids.tolist(), counts.tolist(), strict=True) if n}


def with_count(f: FragmentData, n: int) -> int:
    found = f.patients[f.initial_counts == n]
    assert len(found), f"fragment {f.index} has no patient with {n} results: change DB's seed"
    return int(found[0])


class Loaded:
    """Both fragments loaded, each by a binding of its own (two load processes)."""

    def __init__(self, name: str, options: dict) -> None:
        self.name = name
        self.fragments = fragments()
        self.bindings: list[Any] = []
        self.beats = 0
        for k, f in enumerate(self.fragments):
            binding = make_binding(name, options)
            self.bindings.append(binding)
            if k == 0:
                binding.create_schema(DB)
            else:
                binding.use_schema(DB)
            binding.load_fragment(f, self.beat)
        self.binding = self.bindings[0]

    def beat(self) -> None:
        self.beats += 1

    def close(self) -> None:
        for b in self.bindings:
            b.close()


@pytest.fixture(params=store_names())
def loaded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Loaded]:
    for options in server_options(request.param, tmp_path, request):
        store = Loaded(request.param, options)
        try:
            yield store
        finally:
            store.close()


@pytest.fixture
def conn(loaded: Loaded) -> Iterator[Any]:
    c = blocking_connection(loaded.binding)
    try:
        yield c
    finally:
        c.close()


def test_loading_beats_at_least_once_per_batch(loaded: Loaded) -> None:
    batches = sum(
        sum(1 for _ in f.patient_batches()) + sum(1 for _ in f.result_batches())
        for f in loaded.fragments
    )
    assert loaded.beats >= batches >= 4


def test_a_read_returns_the_newest_results_and_their_count(loaded: Loaded, conn: Any) -> None:
    seen_counts = set()
    for f in loaded.fragments:
        expected = generated(f)
        for p, n in zip(f.patients.tolist(), f.initial_counts.tolist(), strict=True):
            rows, count = conn.recent_results(p, K)
            assert count == n, (loaded.name, p)
            assert rows == expected[p][:K], (loaded.name, p)
            seen_counts.add(count)
        for n in COUNTS:  # the cases this test is about are there, in both fragments
            rows, count = conn.recent_results(with_count(f, n), K)
            assert count == n and len(rows) == min(n, K)
    assert set(COUNTS) <= seen_counts
    assert conn.recent_results(NOBODY, K) == ([], 0)


def test_an_insert_is_read_back_newest_first_and_counted(loaded: Loaded, conn: Any) -> None:
    f = loaded.fragments[0]
    expected = generated(f)
    now = int(time.time() * 1000)
    inserted = 0
    for j, n in enumerate(COUNTS):
        p = with_count(f, n)
        first = new_result(f.keys.inserted(f.index, inserted), p, 0.1 * j, now + j)
        second = new_result(f.keys.inserted(f.index, inserted + 1), p, 0.1 * j + 0.05, now + j + 1)
        inserted += 2
        conn.insert_result(first)
        rows, count = conn.recent_results(p, K)
        assert count == n + 1
        assert rows == [first, *expected[p][: K - 1]]
        conn.insert_result(second)
        rows, count = conn.recent_results(p, K)
        assert count == n + 2
        assert rows == [second, first, *expected[p][: K - 2]]
        if loaded.name != "cassandra":  # an upsert there: it cannot refuse a key (its notes)
            with pytest.raises(Exception):  # noqa: B017 - each driver's own error
                conn.insert_result(second)
        assert conn.recent_results(p, K) == (rows, n + 2)  # never a second copy
    if loaded.binding.can_read_back:
        held = loaded.binding.read_back(f, loaded.beat)
        want = nonzero(f.patients, f.initial_counts)
        for n in COUNTS:
            p = with_count(f, n)
            want[p] = n + 2
        assert held == want

    # a reload replaces every result of the fragment's patients, those runs inserted too
    loaded.binding.load_fragment(f, loaded.beat)
    for n in COUNTS:
        p = with_count(f, n)
        assert conn.recent_results(p, K) == (expected[p][:K], n)
    if loaded.binding.can_read_back:
        for g in loaded.fragments:
            held = loaded.binding.read_back(g, loaded.beat)
            assert held == nonzero(g.patients, g.initial_counts)


@pytest.mark.parametrize("name", GLOBAL_KEYS)
def test_a_smaller_database_drops_the_larger_ones_patients(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    for options in server_options(name, tmp_path, request):
        store = Loaded(name, options)
        try:
            small = EHRDatabaseConfig(patients=100, seed=DB.seed)
            store.binding.create_schema(small)
            gone = next(
                f.patients[(f.patients >= 100) & (f.initial_counts > 0)][0] for f in store.fragments
            )
            c = blocking_connection(store.binding)
            try:
                assert c.recent_results(int(gone), K) == ([], 0)
                # the smaller database's keys start at 100 * 20, where patient 100's were
                taken = generated(next(f for f in store.fragments if gone in f.patients))
                key = taken[int(gone)][0].id
                c.insert_result(new_result(key, 3, 0.5, int(time.time() * 1000)))
                assert c.recent_results(3, K)[0][0].id == key
            finally:
                c.close()
        finally:
            store.close()


@pytest.mark.parametrize("name", store_names())
def test_a_run_through_the_engine_validates_clean(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cfg = EHRConfig.model_validate(
        {"database": {"patients": 300}, "workload": {"mix": {"READ": 3, "WRITE": 1},
                                                      "hashed_keys": True}}
    )  # fmt: skip
    for options in server_options(name, tmp_path, request):
        engine = FragmentEngine(WORKLOAD, cfg, name, options, (1.0,), 0)
        try:
            engine.prepare()
            for i, start in enumerate(("carry", "readback")):
                spec = RunSpec(f"r{i}", 8, LONG, 1200, 7 + i, tmp_path / f"r{i}", start_state=start)
                summary = engine.run(spec, threading.Event(), lambda *_: None)
                assert summary.errors == 0 and not summary.aborted, summary.error_counts
                assert summary.actions >= 1200 and summary.start_state == start
                writes = summary.per_action["WRITE"].count
                result = engine.validate(tmp_path / f"r{i}")
                assert result.reads == summary.per_action["READ"].count > 0
                assert result.writes == writes > 0
                assert result.unpredictable_reads == 0, result.examples[:2]
            # the workload's picture is what the store holds
            ids, counts = engine.fragment.initial_values().by_kind[RESULT_COUNT]
            held = engine.binding.read_back(engine.fragment.data, lambda: None)
            assert nonzero(ids, counts) == held
            loaded = int(engine.fragment.data.initial_counts.sum())
            assert int(np.sum(counts)) > loaded
        finally:
            engine.close()


# -- each binding's consistency settings reach its server ------------------------------------


def one_fragment_loaded(binding: Any, db: EHRDatabaseConfig = DB) -> FragmentData:
    binding.create_schema(db)
    f = fragments(db)[0]
    binding.load_fragment(f, lambda: None)
    return f


def read_and_write(binding: Any, f: FragmentData) -> None:
    """One READ and one WRITE through the binding's own connection, checked."""
    p = with_count(f, 7)
    row = new_result(f.keys.inserted(f.index, 0), p, 0.5, int(time.time() * 1000))
    c = blocking_connection(binding)
    try:
        assert c.recent_results(p, K)[1] == 7
        c.insert_result(row)
        rows, count = c.recent_results(p, K)
        assert count == 8 and rows[0] == row
    finally:
        c.close()


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read", "serializable"])
def test_postgres_statements_run_at_the_isolation_level_set(
    postgres_server: dict, isolation: str
) -> None:
    binding = make_binding("postgres", {"dsn": fresh_database(postgres_server),
                                        "isolation": isolation})  # fmt: skip
    try:
        f = one_fragment_loaded(binding)
        read_and_write(binding, f)
        bridge = LoopBridge(binding)
        try:
            shown = bridge.loop.run_until_complete(
                bridge.conn.con.fetchval("SHOW transaction_isolation")
            )
        finally:
            bridge.close()
        assert shown == isolation
        assert binding.describe().endswith(f"({isolation})")
    finally:
        binding.close()


@pytest.mark.parametrize(
    ("options", "w", "j", "read"),
    [
        ({}, 1, None, "primaryPreferred"),  # the paper's Table 1
        ({"consistency": "majority"}, "majority", True, "primary"),
        ({"consistency": "eventual"}, 1, None, "nearest"),
        ({"consistency": "eventual", "write_concern": "majority"}, "majority", None, "nearest"),
    ],
)
def test_mongodb_presets_set_write_concern_and_read_preference(
    mongo_wire_server: dict, options: dict, w: Any, j: Any, read: str
) -> None:
    binding = make_binding("mongodb", {
        "uri": f"mongodb://127.0.0.1:{mongo_wire_server['port']}",
        "database": f"ehrc_{time.time_ns()}", "server_name": mongo_wire_server["name"],
        **options,
    })  # fmt: skip
    try:
        f = one_fragment_loaded(binding)
        read_and_write(binding, f)
        bridge = LoopBridge(binding)
        try:
            results = bridge.conn.results
            assert results.write_concern.document == {"w": w, **({"j": j} if j else {})}
            assert results.read_preference.mongos_mode == read
        finally:
            bridge.close()
        described = binding.describe()
        assert described.startswith(mongo_wire_server["name"])
        assert f"w={w}" in described and f"reads {read}" in described
    finally:
        binding.close()


@pytest.mark.parametrize("consistency", ["quorum", "noquorum"])
def test_riak_presets_send_their_quorums(riak_url: str, consistency: str) -> None:
    binding = make_binding("riak", {
        "url": riak_url, "bucket_prefix": f"ehrc_{time.time_ns()}_",
        "server_name": "Riak KV emulator (tests/riak_emulator.py)", "consistency": consistency,
    })  # fmt: skip
    try:
        f = one_fragment_loaded(binding)
        read_and_write(binding, f)  # the emulator refuses a malformed quorum parameter
        want = "r=quorum" if consistency == "quorum" else "r=1"
        assert want in binding.describe() and consistency in binding.describe()
    finally:
        binding.close()


UNAVAILABLE = (Unavailable, NoHostAvailable)


def cassandra_binding(server: dict, keyspace: str, **options: Any) -> Any:
    return make_binding("cassandra", {"hosts": server["hosts"], "port": server["port"],
                                      "keyspace": keyspace, **options})  # fmt: skip


def test_cassandra_levels_reach_the_server(cassandra_server: dict) -> None:
    """Two replicas wanted on one node: ONE is served, a quorum (2 of 2) is unavailable."""
    keyspace = f"ehrc_{time.time_ns()}"
    eventual = cassandra_binding(
        cassandra_server, keyspace, replication_factor=2, consistency="eventual"
    )
    strong = cassandra_binding(cassandra_server, keyspace, replication_factor=2)
    try:
        f = one_fragment_loaded(eventual)
        read_and_write(eventual, f)
        strong.use_schema(DB)
        assert "reads LOCAL_QUORUM, writes EACH_QUORUM" in strong.describe()
        p = with_count(f, 7)
        row = new_result(f.keys.inserted(f.index, 1), p, 0.5, int(time.time() * 1000))
        c = blocking_connection(strong)
        try:
            # the driver tries the next host on Unavailable: with none left, NoHostAvailable
            with pytest.raises(UNAVAILABLE, match="consistency level EACH_QUORUM"):
                c.insert_result(row)
            with pytest.raises(UNAVAILABLE, match="consistency level LOCAL_QUORUM"):
                c.recent_results(p, K)
        finally:
            c.close()
    finally:
        eventual.close()
        strong.close()


def test_cassandra_data_centres_make_each_quorum_count_per_data_centre(
    cassandra_server: dict,
) -> None:
    keyspace = f"ehrc_{time.time_ns()}"
    # SimpleSnitch puts every node in datacenter1
    binding = cassandra_binding(cassandra_server, keyspace, datacenters={"datacenter1": 1})
    other = cassandra_binding(cassandra_server, keyspace, replication_factor=1)
    try:
        f = one_fragment_loaded(binding)
        read_and_write(binding, f)
        assert "RF datacenter1 1, reads LOCAL_QUORUM, writes EACH_QUORUM" in binding.describe()
        with pytest.raises(StoreError, match="replication"):
            other.create_schema(DB)  # the keyspace exists with another strategy
    finally:
        binding.close()
        other.close()
