"""CASQL on real PostgreSQL and memcached: TTL caching hands out stale data the validator
catches; invalidation does not, on the same workload. Its socialites are tasks on the load
process's event loop (asyncpg and aiomcache)."""

import threading

import pytest

from bgbench.run_result import RunResult
from bgbench.worker.contracts import ValidateSummary
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.workload import WORKLOAD
from tests.integration.stores import casql_server

PLAN = FragmentPlan((1.0,), 0.27)


def run_casql(tmp_path, request, name: str, **options) -> tuple[RunResult, ValidateSummary]:
    cfg = BGConfig.model_validate(
        {"database": {"usercount": 200, "confperc": 0.6}, "workload": {"mix": "high"}}
    )
    for opts in casql_server(tmp_path, request, **options):
        engine = FragmentEngine(WORKLOAD, cfg, "casql", opts, PLAN.capacities, 0)
        engine.prepare()
        summary = engine.run(
            RunSpec(name, 4, 3.0, 0, 1, tmp_path / name), threading.Event(), lambda *_: None
        )
        result = engine.validate(tmp_path / name)
        engine.binding.close()
        return summary, result
    raise AssertionError("no server")


def test_ttl_caching_yields_unpredictable_reads_and_invalidation_none(tmp_path, request):
    ttl_summary, ttl = run_casql(tmp_path, request, "ttl", consistency="ttl", ttl_s=60)
    inv_summary, inv = run_casql(tmp_path, request, "inv", consistency="invalidation")
    assert ttl_summary.concurrency == inv_summary.concurrency == "asyncio"
    assert ttl_summary.errors == 0 and inv_summary.errors == 0
    assert ttl.writes > 100 and inv.writes > 100
    assert ttl.unpredictable_reads > 0
    assert inv.unpredictable_reads == 0
    assert ttl_summary.store_counters["hits"] > 0
    assert ttl_summary.store_counters["invalidations"] == 0
    assert inv_summary.store_counters["invalidations"] > 0


@pytest.mark.parametrize("compress", [True, False])
def test_values_over_the_item_limit_are_served_from_postgres_and_counted(
    tmp_path, request, compress
):
    cfg = BGConfig.model_validate(
        {
            "database": {"usercount": 60, "insertimage": True, "imagesize": 1100},
            "workload": {"mix": {"VP": 1}},
        }
    )
    for opts in casql_server(tmp_path, request, compress=compress):
        engine = FragmentEngine(WORKLOAD, cfg, "casql", opts, PLAN.capacities, 0)
        engine.prepare()
        summary = engine.run(
            RunSpec("big", 2, 1.0, 0, 1, tmp_path / "big"), threading.Event(), lambda *_: None
        )
        engine.binding.close()
    assert summary.errors == 0 and summary.actions > 0
    # random image bytes do not compress: every profile is over 1 MB either way
    assert summary.store_counters["oversized"] > 0
    assert summary.store_counters["hits"] == 0
