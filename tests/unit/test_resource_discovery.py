"""Finding the store's processes: /proc/net/tcp's addresses, the sockets of a process, a
socket's owner, a process's descendants (bgbench/resources/discovery.py), on this
process's own sockets and children and on hand-made and hostile tables."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
from ipaddress import ip_address

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.resources import discovery

TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 111 1 0
   1: 0100007F:D431 0100007F:1538 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0
   2: 0100007F:1538 0100007F:D431 01 00000000:00000000 00:00000000 00000000   101        0 333 1 0
   3: garbage
"""


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("0100007F:1538", ("127.0.0.1", 5432)),
        ("00000000:0000", ("0.0.0.0", 0)),
        ("00000000000000000000000001000000:1F90", ("::1", 8080)),
        ("0000000000000000FFFF00000100007F:0050", (str(ip_address("::ffff:127.0.0.1")), 80)),
        ("0100007F", None),
        ("0100007:1538", None),
        ("zz00007F:1538", None),
        ("0100007F:FFFFF", None),
    ],
)
def test_proc_net_tcp_addresses_parse(text, address):
    assert discovery.parse_address(text) == address


def test_a_tcp_table_parses_and_filters_by_inode():
    every = discovery.parse_tcp_table(TABLE)
    assert [s.inode for s in every] == [111, 222, 333]
    assert every[1].remote == ("127.0.0.1", 5432) and every[1].state == discovery.ESTABLISHED
    # the listening ones and those asked for; the others' addresses are not even parsed
    assert [s.inode for s in discovery.parse_tcp_table(TABLE, {222})] == [111, 222]


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_any_address_or_table_text_parses_or_is_left_out(text):
    address = discovery.parse_address(text)
    assert address is None or 0 <= address[1] < 65536
    for s in discovery.parse_tcp_table("header\n" + text):
        assert s.inode >= 0


@pytest.mark.parametrize(
    ("ip", "local"),
    [
        ("127.0.0.1", True),
        ("127.5.5.5", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("10.1.2.3", True),  # one of this host's addresses (given below)
        ("::ffff:10.1.2.3", True),
        ("10.9.9.9", False),
        ("not an ip", False),
    ],
)
def test_local_addresses_are_loopback_or_this_hosts(ip, local):
    assert discovery.is_local(ip, {"10.1.2.3"}) is local


def test_a_connection_to_a_local_listener_names_its_port_and_owner():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            with accepted:
                mine = discovery.socket_inodes(os.getpid())
                assert os.fstat(client.fileno()).st_ino in mine
                found = discovery.servers_of({os.fstat(client.fileno()).st_ino}, set())
                assert found == {port: os.fstat(server.fileno()).st_ino}
                assert discovery.owner_of(found[port]) == os.getpid()
    assert discovery.servers_of(set(), set()) == {}


def test_descendants_are_found_both_ways():
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'],"
            " stdin=subprocess.PIPE)\n"
            "print(child.pid, flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    grandchild = 0
    try:
        grandchild = int(parent.stdout.readline())
        tree = discovery.descendants([parent.pid])
        assert tree[0] == parent.pid and grandchild in tree
        assert set(discovery._descendants_by_parent([parent.pid])) == set(tree)
        assert discovery.descendants([]) == []
    finally:
        if grandchild:
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)
        parent.kill()
        parent.wait(10)
