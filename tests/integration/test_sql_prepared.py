"""BG's PostgreSQL binding on the event loop calls each statement prepared once on its
held connection (drivers/postgres.Held): the server holds one prepared statement per
statement and connection however many calls, and a connection whose backend was
terminated is replaced by the next action, which prepares its statements again."""

import psycopg
import pytest

from bgbench.sdk import LoopBridge
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import FragmentPlan
from tests.conftest import fresh_database
from tests.integration import stores

DB = BGDatabaseConfig(
    usercount=40, friendcountperuser=4, confperc=0.5, resourcecountperuser=2,
    commentcountperresource=2, insertimage=False, attrcount=3, attrlength=8,
)  # fmt: skip
CALLS = 20
PREPARED = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1"


@pytest.fixture
def bridged(postgres_server):  # type: ignore[no-untyped-def]
    dsn = fresh_database(postgres_server)
    binding, fragment = stores.loaded("postgres", {"dsn": dsn}, DB, FragmentPlan((1.0,), 0.3))
    bridge = LoopBridge(binding)
    try:
        yield bridge, fragment, dsn
    finally:
        bridge.close()
        binding.close()


def test_a_statement_is_prepared_once_per_connection_and_again_on_a_fresh_one(bridged):
    bridge, fragment, dsn = bridged
    conn, run = bridge.conn, bridge.loop.run_until_complete
    member = int(fragment.members[0])
    sql = conn.profile
    first = [run(conn.view_profile(member, m)) for m in fragment.members[:CALLS].tolist()]
    assert [p.member for p in first] == fragment.members[:CALLS].tolist()
    assert list(conn.reads.prepared) == [sql]
    assert run(conn.con.fetchval(PREPARED, sql)) == 1  # 20 calls, one statement on the server
    pid = run(conn.con.fetchval("SELECT pg_backend_pid()"))

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    failed = 0
    again = None
    for _ in range(3):  # the action that finds the loss may fail; the next takes a fresh one
        try:
            again = run(conn.view_profile(member, member))
            break
        except Exception:
            failed += 1
    assert again == run(conn.view_profile(member, member)) and again.member == member
    assert failed <= 1
    assert run(conn.con.fetchval("SELECT pg_backend_pid()")) != pid
    assert run(conn.con.fetchval(PREPARED, sql)) == 1
