"""EHR and sensor-log on MySQL (the session's MariaDB), beyond the contract suites both
run on every binding (tests/integration/test_ehr_stores.py, test_sensorlog_stores.py):
a smaller EHR database drops a larger one's patients (global result keys), and each
binding's isolation setting reaches the connections socialites hold."""

import asyncio
import time
from typing import Any

import pytest

from bgbench.sdk import blocking_connection
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.generator import FragmentData, new_result
from bgbench.workloads.registry import make_binding
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from tests.conftest import fresh_mysql_database

DB = EHRDatabaseConfig(patients=200, seed=15)


def held_isolation(binding: Any) -> str:
    """The isolation level of a socialite's connection, asked on it."""

    async def ask() -> str:
        conn = await binding.connect_async()
        try:
            async with (await conn.held.live()).cursor() as cursor:
                await cursor.execute("SELECT @@tx_isolation")
                (level,) = await cursor.fetchone()
            return str(level)
        finally:
            await conn.close()
            await binding.aclose()

    return asyncio.run(ask())


def test_a_smaller_ehr_database_drops_the_larger_ones_patients(mysql_server):
    binding = make_binding("ehr", "mysql", fresh_mysql_database(mysql_server))
    try:
        binding.create_schema(DB)
        fragments = [FragmentData(DB, 0.27, (1.0, 1.0), k, False) for k in (0, 1)]
        for f in fragments:
            binding.load_fragment(f, lambda: None)
        gone = next(
            int(f.patients[(f.patients >= 100) & (f.initial_counts > 0)][0]) for f in fragments
        )
        assert binding.read_back(next(f for f in fragments if gone in f.patients), lambda: None)
        binding.create_schema(EHRDatabaseConfig(patients=100, seed=DB.seed))
        conn = blocking_connection(binding)
        try:
            assert conn.recent_results(gone, 5) == ([], 0)
            # a smaller database's new keys may be those the dropped patient's results held
            taken = next(r for f in fragments for b in f.result_batches() for r in b
                         if r.patient == gone)  # fmt: skip
            conn.insert_result(new_result(taken.id, 3, 0.5, int(time.time() * 1000)))
            assert conn.recent_results(3, 5)[0][0].id == taken.id
        finally:
            conn.close()
    finally:
        binding.close()


@pytest.mark.parametrize("isolation", ["read committed", "serializable"])
def test_ehr_sessions_run_at_the_isolation_level_set(mysql_server, isolation):
    options = {**fresh_mysql_database(mysql_server), "isolation": isolation}
    binding = make_binding("ehr", "mysql", options)
    try:
        binding.create_schema(DB)
        assert held_isolation(binding) == isolation.upper().replace(" ", "-")
        assert binding.describe().endswith(f"({isolation})")
    finally:
        binding.close()


@pytest.mark.parametrize(
    ("settings", "level"),
    [
        ({"consistency": "strong"}, "SERIALIZABLE"),
        ({"consistency": "weak"}, "READ-UNCOMMITTED"),
        ({"consistency": "weak", "isolation": "repeatable read"}, "REPEATABLE-READ"),
    ],
)
def test_sensorlog_consistency_sets_the_sessions_isolation(mysql_server, settings, level):
    binding = make_binding("sensorlog", "mysql", {**fresh_mysql_database(mysql_server),
                                                 **settings})  # fmt: skip
    try:
        binding.create_schema(SensorLogDatabaseConfig())
        assert held_isolation(binding) == level
        described = binding.describe()
        assert described.startswith("MariaDB 10.") and settings["consistency"] in described
        assert "innodb_flush_log_at_trx_commit=2" in described  # the local server's
    finally:
        binding.close()
