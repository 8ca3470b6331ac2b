"""CASQL's cache is untrusted (issue 24, item 1): memcached has no authentication, and a
process that sets every key the binding reads to a crafted pickle during a real
`bgbench run --store casql` must never have its code run; the reads are served from
PostgreSQL instead, correctly, and counted as rejected."""

import json
import pickle
import subprocess
import sys
import zlib

import pytest

from tests.conftest import fresh_database

USERS = 200

POISONER = """
import sys
import time
from pymemcache.client.base import Client

port, payload_hex, users = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
payload = bytes.fromhex(payload_hex)
keys = [k % m for m in range(users) for k in (b"vps:%d", b"vpb:%d", b"lf:%d", b"vfr:%d")]
keys += [b"vtr:%d:5" % m for m in range(users)]
keys += [b"vcr:%d" % rid for rid in range(users * 10)]
client = Client(("127.0.0.1", port), default_noreply=False)
client.set_many(dict.fromkeys(keys, payload))
print("poisoned", flush=True)
while True:  # until killed: the run's load flushes memcached, so again and again
    time.sleep(0.02)  # pacing, not synchronisation: the CPU is the run's
    client.set_many(dict.fromkeys(keys, payload))
"""


class Payload:
    """Unpickled, this creates a file: what an attacker's value would do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return open, (self.path, "w")


@pytest.mark.parametrize("compress", [True, False])
def test_crafted_pickles_in_memcached_never_run_and_reads_stay_correct(
    tmp_path, postgres_server, memcached_server, compress
):
    marker = tmp_path / "code-ran"
    evil = pickle.dumps(Payload(str(marker)), protocol=5)
    payload = zlib.compress(evil) if compress else evil
    poisoner = subprocess.Popen(
        [sys.executable, "-c", POISONER, str(memcached_server["port"]), payload.hex(),
         str(USERS)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert poisoner.stdout is not None and poisoner.stdout.readline() == "poisoned\n"
        proc = subprocess.run(
            [sys.executable, "-m", "bgbench", "run", "--store", "casql", "--agents", "1",
             "--threads", "4", "--duration", "3", "--users", str(USERS), "--json",
             "--results", str(tmp_path / "results"), "-p", "agents.heartbeat_timeout=60",
             "-p", f"store.options.dsn={fresh_database(postgres_server)}",
             "-p", f"store.options.memcached=127.0.0.1:{memcached_server['port']}",
             "-p", f"store.options.compress={str(compress).lower()}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert poisoner.poll() is None  # it poisoned the cache all through the run
    finally:
        poisoner.kill()
        poisoner.wait()
    assert not marker.exists(), "a value from memcached ran code"
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["errors"] == 0 and result["unpredictable_reads"] == 0
    counters = [a["store_counters"] for a in result["agents"]]
    assert sum(c["rejected"] for c in counters) > 0  # the poison was read, and refused
