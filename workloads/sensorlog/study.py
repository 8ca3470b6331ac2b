"""The sensor-log paper's measurements as studies (sdk.Study), run by
`bgbench study load|queries --workload sensorlog --store NAME`.

- `load` (sections 2.3, 2.6.3, 2.7.1; Figures 3 and 4): for each consistency setting of
  the store (the paper's Table 1), each size and each index timing, `runs` bulk loads into
  an empty store: indexes defined before (incremental loading, the paper's main case) or
  built after (load and index build timed apart, then summed). Rows/s and seconds: mean
  and sample standard deviation of the runs.
- `queries` (sections 2.4, 2.7.2-2.7.4; Figures 2, 5-9, Table 2): the store loaded once
  with its indexes (the weak setting, as the paper used from then on), the thresholds of
  mv for each selectivity computed exactly from the generated data (Figure 2's mapping),
  then Q1 (key lookups), Q2 (rows with mv > x, fetched) and Q3 (count of them) `runs`
  times each, each with the store's plan, so one sees where a store turns from index scan
  to full scan. Every Q2 and Q3 answer is checked against the exact count.

Rows are generated before the clock starts (the paper loaded CSV files it had): the time
is the store's bulk path, including the driver's conversion of the rows it is given.
"""

import random
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bgbench.errors import StoreError
from bgbench.sdk import Bindings, Record, Say, Study, StudyTable
from bgbench.workloads.sensorlog.config import SensorLogConfig
from bgbench.workloads.sensorlog.generator import (
    Rows,
    all_values,
    readings_for,
    rows_of,
    series_times,
    thresholds,
)
from bgbench.workloads.sensorlog.store import Query, SensorLogBinding, Unsupported


def _beat() -> None:
    pass


def _binding(bindings: Bindings[SensorLogBinding], consistency: str) -> SensorLogBinding:
    return bindings({"consistency": consistency})


def _stats(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def _rows(config: SensorLogConfig, readings: int) -> list[Rows]:
    db = config.database
    return list(rows_of(db, range(db.machines), readings))


def consistency_table(store: str, settings: Mapping[str, str], levels: Iterable[str]) -> StudyTable:
    return StudyTable(
        "consistency",
        f"Consistency settings of {store} (the paper's Table 1)",
        ["setting", "what it sets"],
        [{"setting": c, "what it sets": settings[c]} for c in levels],
    )


class LoadStudy:
    name = "load"
    description = "bulk-load time by size, index timing and consistency (Figures 3 and 4)"

    def run(
        self,
        config: SensorLogConfig,
        bindings: Bindings[SensorLogBinding],
        record: Record,
        say: Say,
    ) -> list[StudyTable]:
        cfg = config
        st, db = cfg.study, cfg.database
        raw: list[dict[str, Any]] = []
        store = ""  # the binding's name and its Table 1, from the bindings made
        settings: Mapping[str, str] = {}
        for consistency in st.consistency:
            binding = _binding(bindings, consistency)
            store, settings = binding.name, binding.consistency_settings
            try:
                described = binding.describe()
                for size in st.sizes:
                    readings = readings_for(db, size)
                    batches = _rows(cfg, readings)
                    rows = sum(len(b) for b in batches)
                    for timing in st.indexes:
                        for run in range(1, st.runs + 1):
                            timed = self._one(binding, batches, rows, timing == "before")
                            row = {"consistency": consistency, "indexes": timing, "rows": rows,
                                   "run": run, **timed, "store": described}  # fmt: skip
                            record("load", row)
                            raw.append(row)
                            say(
                                f"load {consistency:>6} indexes {timing:>6} {rows:>10,} rows "
                                f"run {run}: {row['total_s']:.2f} s, "
                                f"{row['rows_per_s']:,.0f} rows/s"
                            )
            finally:
                binding.close()
        return [self._summary(store, raw), consistency_table(store, settings, st.consistency)]

    @staticmethod
    def _one(
        binding: SensorLogBinding, batches: list[Rows], rows: int, before: bool
    ) -> dict[str, float]:
        binding.reset(indexes=before)
        t0 = time.perf_counter()
        loaded = binding.bulk_load(batches, _beat)
        load_s = time.perf_counter() - t0
        index_s = 0.0
        if not before:
            t1 = time.perf_counter()
            binding.build_indexes()
            index_s = time.perf_counter() - t1
        if loaded != rows:
            raise StoreError(f"bulk load took {loaded:,} of {rows:,} rows")
        total = load_s + index_s
        return {
            "load_s": load_s,
            "index_s": index_s,
            "total_s": total,
            "rows_per_s": rows / total if total > 0 else 0.0,
        }

    @staticmethod
    def _summary(store: str, raw: list[dict[str, Any]]) -> StudyTable:
        groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        for r in raw:
            groups.setdefault((r["consistency"], r["indexes"], r["rows"]), []).append(r)
        out = []
        for (consistency, timing, rows), runs in groups.items():
            total, total_sd = _stats([r["total_s"] for r in runs])
            rate, rate_sd = _stats([r["rows_per_s"] for r in runs])
            out.append({
                "consistency": consistency, "indexes": timing, "rows": rows, "runs": len(runs),
                "load s": statistics.fmean(r["load_s"] for r in runs),
                "index s": statistics.fmean(r["index_s"] for r in runs),
                "total s": total, "total s sd": total_sd, "rows/s": rate, "rows/s sd": rate_sd,
            })  # fmt: skip
        return StudyTable(
            "load",
            f"Bulk loading into {store}: mean of the runs, each from an empty store",
            [
                "consistency",
                "indexes",
                "rows",
                "runs",
                "load s",
                "index s",
                "total s",
                "total s sd",
                "rows/s",
                "rows/s sd",
            ],
            out,
        )


class QueryStudy:
    name = "queries"
    description = "Q1 key lookup, Q2 range and Q3 aggregate by selectivity, with plans"

    def run(
        self,
        config: SensorLogConfig,
        bindings: Bindings[SensorLogBinding],
        record: Record,
        say: Say,
    ) -> list[StudyTable]:
        cfg = config
        st, db = cfg.study, cfg.database
        consistency = "weak" if "weak" in st.consistency else st.consistency[0]
        readings = readings_for(db, st.query_rows or db.rows)
        batches = _rows(cfg, readings)
        total = sum(len(b) for b in batches)
        binding = _binding(bindings, consistency)
        store = binding.name
        try:
            binding.reset(indexes=True)
            t0 = time.perf_counter()
            binding.bulk_load(batches, _beat)
            say(f"loaded {total:,} rows with indexes ({consistency}) in "
                f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
            mapping = thresholds(all_values(db, readings), st.selectivities)
            figure2 = []
            for th in mapping:
                row = {"selectivity %": th.percent, "mv >": th.x, "rows": th.rows,
                       "of": th.total}  # fmt: skip
                record("thresholds", row)
                figure2.append(row)
            results = self._q1(binding, cfg, readings, record, say)
            for th in mapping:
                queries: tuple[Query, ...] = ("Q2", "Q3")
                for query in queries:
                    results.append(self._range(binding, query, th, st.runs, record, say))
        finally:
            binding.close()
        return [
            StudyTable(
                "queries",
                f"Queries on {store}, {total:,} rows ({consistency}): mean of {st.runs} runs",
                ["query", "selectivity %", "rows", "mean ms", "sd ms", "plan"],
                results,
                [r["notes"] for r in results if r.get("notes")],
            ),
            StudyTable(
                "thresholds",
                "Threshold of mv per selectivity, exact for the generated data (Figure 2)",
                ["selectivity %", "mv >", "rows", "of"],
                figure2,
            ),
        ]

    @staticmethod
    def _q1(
        binding: SensorLogBinding,
        cfg: SensorLogConfig,
        readings: int,
        record: Record,
        say: Say,
    ) -> list[dict[str, Any]]:
        db, st = cfg.database, cfg.study
        rng = random.Random(db.seed)
        keys = []
        for _ in range(st.keys):
            m, s, k = rng.randrange(db.machines), rng.randrange(db.sensors), rng.randrange(readings)
            keys.append((m, s, int(series_times(db, m, s, readings)[k])))
        times = []
        for run in range(1, st.runs + 1):
            t0 = time.perf_counter()
            found = sum(binding.q1(*key) is not None for key in keys)
            seconds = (time.perf_counter() - t0) / len(keys)
            if found != len(keys):
                raise StoreError(f"Q1 found {found} of {len(keys)} loaded readings")
            record("queries", {"query": "Q1", "run": run, "seconds": seconds, "rows": 1})
            times.append(seconds)
        mean, sd = _stats(times)
        say(f"Q1: {mean * 1000:.3f} ms per lookup")
        return [{"query": "Q1", "selectivity %": None, "rows": 1, "mean ms": mean * 1000,
                 "sd ms": sd * 1000,
                 "plan": binding.plan("Q1", key=keys[0])}]  # fmt: skip

    @staticmethod
    def _range(
        binding: SensorLogBinding, query: Query, th: Any, runs: int, record: Record, say: Say
    ) -> dict[str, Any]:
        call: Callable[[float], int] = binding.q2 if query == "Q2" else binding.q3
        out: dict[str, Any] = {"query": query, "selectivity %": th.percent, "rows": th.rows}
        try:
            plan = binding.plan(query, x=th.x)
            times = []
            for run in range(1, runs + 1):
                t0 = time.perf_counter()
                n = call(th.x)
                seconds = time.perf_counter() - t0
                if n != th.rows:
                    raise StoreError(
                        f"{query} at mv > {th.x:.6g} answered {n:,} rows; the data has {th.rows:,}"
                    )
                record("queries", {"query": query, "selectivity %": th.percent, "run": run,
                                   "seconds": seconds, "rows": n})  # fmt: skip
                times.append(seconds)
        except Unsupported as exc:
            record(
                "queries", {"query": query, "selectivity %": th.percent, "unsupported": str(exc)}
            )
            say(f"{query} {th.percent:g}%: not supported: {exc}")
            return {**out, "plan": "not supported", "notes": f"{query}: {exc}"}
        mean, sd = _stats(times)
        say(f"{query} {th.percent:g}% ({th.rows:,} rows): {mean * 1000:.2f} ms  [{plan}]")
        return {**out, "mean ms": mean * 1000, "sd ms": sd * 1000, "plan": plan}


STUDIES: dict[str, Study[SensorLogConfig, SensorLogBinding]] = {
    "load": LoadStudy(),
    "queries": QueryStudy(),
}
