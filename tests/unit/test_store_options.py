"""The settings of the Cassandra and Riak bindings: what reaches the server, and the
one-line errors a bad value gets."""

from functools import partial

import pytest

from bgbench.errors import UserError
from bgbench.workloads import registry

make_options = partial(registry.make_options, "bg")


def test_riak_presets_follow_klein_and_each_quorum_option_overrides_alone():
    quorum = make_options("riak", {})
    assert quorum.read_params() == {"r": "quorum", "pr": "quorum", "notfound_ok": "false"}
    assert quorum.write_params() == {"w": "quorum", "pw": "quorum"}
    noquorum = make_options("riak", {"consistency": "noquorum", "r": "2", "dw": "all"})
    assert noquorum.read_params() == {"r": "2", "pr": "0", "notfound_ok": "true"}
    assert noquorum.write_params() == {"w": "1", "dw": "all", "pw": "0"}


def test_riak_rejects_a_quorum_word_it_does_not_know():
    with pytest.raises(UserError, match=r"options\.r: 'most' is not a quorum value: use a count"):
        make_options("riak", {"r": "most"})


def test_cassandra_levels_hosts_and_keyspace():
    o = make_options("cassandra", {"hosts": "127.0.0.1, 127.0.0.2", "keyspace": "BG_Audit"})
    assert o.hosts == ["127.0.0.1", "127.0.0.2"]
    assert o.keyspace == "bg_audit"  # CQL folds unquoted names
    with pytest.raises(UserError, match="EACH_QUORUM is for writes only"):
        make_options("cassandra", {"read_consistency": "EACH_QUORUM"})
    assert make_options("cassandra", {"write_consistency": "EACH_QUORUM"})
    with pytest.raises(UserError, match=r"options\.write_consistency"):
        make_options("cassandra", {"write_consistency": "MOST"})
    with pytest.raises(UserError, match=r"options\.replication_factor"):
        make_options("cassandra", {"replication_factor": 0})
