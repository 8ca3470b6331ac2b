"""Store specs (bgbench/sdk/stores.py): the coordinator reads a store's static facts and
validates its options without importing its binding or its driver library; only the
worker's registry.binding_class imports the binding."""

import json
import subprocess
import sys

import pytest

from bgbench.errors import UserError
from bgbench.workloads import registry

DRIVER_LIBRARIES = ("psycopg", "psycopg_pool", "asyncpg", "pymongo", "cassandra", "happybase",
                    "thriftpy2", "pymemcache", "aiomcache", "httpx", "httpcore")  # fmt: skip
WORKLOADS = ("bg", "ehr", "sensorlog")

# Run in a fresh interpreter: this test process has imported bindings already.
CHECK_EVERY_STORE = """
import json, sys
from bgbench.coordinator.configuration.config import load_settings
from bgbench.coordinator.execution import preflight, sizing
from bgbench.workloads import registry

checked = []
for workload in %r:
    for store in registry.store_names(workload):
        s = load_settings(None, [("workload.name", workload), ("store.name", store)])
        preflight.check_store(s)
        sizing.resolve_local_layout(s, 100)
        registry.make_options(workload, store, {})
        checked.append((workload, store, registry.concurrency(workload, store)))
loaded = sorted(m for m in sys.modules if m.startswith("bgbench.workloads.") or
                m.split(".")[0] in %r)
print(json.dumps({"checked": checked, "loaded": loaded}))
"""


def test_checking_settings_for_every_store_imports_no_binding_and_no_driver():
    proc = subprocess.run(
        [sys.executable, "-c", CHECK_EVERY_STORE % (WORKLOADS, DRIVER_LIBRARIES)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    stores = {(w, s) for w, s, _ in out["checked"]}
    assert {
        ("bg", "postgres"),
        ("bg", "hbase"),
        ("ehr", "riak"),
        ("sensorlog", "mongodb"),
    } <= stores
    assert len(stores) == sum(len(registry.store_names(w)) for w in WORKLOADS)
    allowed_store_modules = {f"bgbench.workloads.{w}.stores.{m}" for w in WORKLOADS
                             for m in ("options", "specs")}  # fmt: skip
    bindings = [m for m in out["loaded"] if ".stores." in m and m not in allowed_store_modules]
    assert bindings == []
    drivers = [m for m in out["loaded"] if m.split(".")[0] in DRIVER_LIBRARIES]
    assert drivers == []
    concurrency = {(w, s): c for w, s, c in out["checked"]}
    assert concurrency[("bg", "sqlite")] == "threads"
    assert concurrency[("bg", "postgres")] == "asyncio"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_each_spec_states_what_its_binding_class_declares(workload):
    for store in registry.store_names(workload):
        spec = registry.spec(workload, store)
        cls = registry.binding_class(workload, store)  # the worker's path: imports it
        assert spec.name == store == cls.name
        assert spec.options is cls.Options
        assert spec.concurrency == cls.concurrency
        assert (spec.suspends, spec.embedded) == (cls.suspends, cls.embedded)
        assert spec.file_options == tuple(getattr(cls, "file_options", ()))


def test_options_are_refused_by_the_spec_model_in_one_line_naming_the_option():
    with pytest.raises(UserError, match=r"store 'postgres': store\.options\.dsn: not a libpq"):
        registry.make_options("bg", "postgres", {"dsn": "not a dsn"})
    with pytest.raises(UserError, match=r"store\.options\.uri: not a MongoDB URI"):
        registry.make_options("sensorlog", "mongodb", {"uri": "mongodb://h:99999/"})
    with pytest.raises(UserError, match=r"store\.options\.memcached"):
        registry.make_options("bg", "casql", {"memcached": "nowhere"})
    with pytest.raises(UserError, match="unknown store 'nosuch' for workload ehr"):
        registry.spec("ehr", "nosuch")
