"""What CASQL caches in memcached (issue 24, item 1): every shape of value round-trips; a value
that is not exactly one a binding cached (a pickle, a zip bomb, another shape) is refused,
never run or trusted."""

import json
import pickle
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.workloads.bg.stores.casql import MARKER, _cached
from bgbench.workloads.bg.stores.casql_values import (
    COMMENTS,
    DECODED_LIMIT,
    ITEM_LIMIT,
    MEMBERS,
    PROFILE,
    RESOURCES,
    decode,
    encode,
)

int64 = st.integers(-(2**63), 2**63 - 1)
texts = st.text(max_size=40)
blobs = st.none() | st.binary(max_size=300)
attributes = st.lists(texts, max_size=12)
profiles = st.tuples(int64, attributes, int64, int64, st.none() | int64, blobs)
members = st.lists(st.tuples(int64, attributes, blobs), max_size=8)
resources = st.lists(st.tuples(int64, int64, int64), max_size=8)
comments = st.lists(st.tuples(int64, int64, int64, texts), max_size=8)

SHAPES = {"profile": PROFILE, "members": MEMBERS, "resources": RESOURCES, "comments": COMMENTS}
EXAMPLES = {
    "profile": (7, ["a", "b"], 3, 2, None, b"\x00\xffimage"),
    "members": [(1, ["x"], b"thumb"), (2, [], None)],
    "resources": [(10, 1, 2), (11, 1, 1)],
    "comments": [(10, 0, 3, "héllo"), (10, 1, 4, "")],
}


@pytest.mark.parametrize("compress", [True, False])
@settings(max_examples=60, deadline=None)
@given(st.data())
@pytest.mark.slow
def test_every_shape_round_trips(compress, data):
    for shape, values in [
        (PROFILE, profiles),
        (MEMBERS, members),
        (RESOURCES, resources),
        (COMMENTS, comments),
    ]:
        value = data.draw(values)
        raw = encode(shape, value, compress)
        assert raw is not None
        assert decode(shape, raw, compress) == value


class Payload:
    """A value an attacker sets: unpickled, it would create a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return open, (self.path, "w")


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("compress", [True, False])
def test_a_pickle_is_refused_and_never_run(tmp_path, name, compress):
    marker = tmp_path / "ran"
    evil = pickle.dumps(Payload(str(marker)), protocol=5)
    raw = zlib.compress(evil) if compress else evil
    assert decode(SHAPES[name], raw, compress) is None
    assert not marker.exists()


def bomb() -> bytes:
    """A zlib stream of about 1 KiB that inflates past DECODED_LIMIT (valid JSON start)."""
    return zlib.compress(b"[" + b" " * (DECODED_LIMIT + 10) + b"]", 9)


def json_bytes(value: object) -> bytes:
    return json.dumps(value).encode()


WRONG = {
    "not zlib": (True, b"not zlib at all"),
    "truncated zlib": (True, zlib.compress(json_bytes([[1, 2, 3]]))[:-3]),
    "trailing bytes": (True, zlib.compress(json_bytes([[1, 2, 3]])) + b"extra"),
    "zip bomb": (True, bomb()),
    "not json": (False, b"\x80\x05K\x01."),
    "an object": (False, json_bytes({"rid": 1, "creator": 2, "wall": 3})),
    "a field missing": (False, json_bytes([[1, 2]])),
    "a field more": (False, json_bytes([[1, 2, 3, 4]])),
    "a string for an int": (False, json_bytes([["1", 2, 3]])),
    "a float for an int": (False, json_bytes([[1.0, 2, 3]])),
    "a bool for an int": (False, json_bytes([[True, 2, 3]])),
    "past int64": (False, json_bytes([[2**63, 2, 3]])),
    "a huge number": (False, b"[[" + b"9" * 100_000 + b",2,3]]"),
    "deep nesting": (False, b"[" * 100_000 + b"]" * 100_000),
    "invalid utf-8": (False, b'[[1,2,"\xff"]]'),
}


@pytest.mark.parametrize("case", WRONG)
def test_a_value_of_another_shape_is_refused(case):
    compress, raw = WRONG[case]
    shape = COMMENTS if case == "invalid utf-8" else RESOURCES
    assert decode(shape, raw, compress) is None


def test_bytes_must_be_base64_and_members_their_own_shape():
    assert decode(MEMBERS, json_bytes([[1, ["a"], "not base64!"]]), False) is None
    assert decode(MEMBERS, json_bytes([[1, "a", None]]), False) is None  # not a list
    assert decode(PROFILE, json_bytes([1, ["a"], 1, 1, None]), False) is None
    profile = encode(PROFILE, EXAMPLES["profile"], False)
    assert profile is not None and decode(MEMBERS, profile, False) is None


@pytest.mark.parametrize("compress", [True, False])
def test_a_value_too_large_to_cache_is_not_encoded(compress):
    image = bytes(range(256)) * (ITEM_LIMIT // 256)  # compresses, but its JSON is too long
    big = encode(PROFILE, (1, [], 0, 0, None, image * 4), compress)
    assert big is None
    fits = encode(PROFILE, (1, [], 0, 0, None, image[:1000]), compress)
    assert fits is not None and len(fits) <= ITEM_LIMIT


def test_a_rejected_value_is_a_counted_miss_filled_over_with_its_token():
    stats = {"hits": 0, "misses": 0, "rejected": 0}
    raw = encode(RESOURCES, EXAMPLES["resources"], True)
    assert _cached(raw, 5, RESOURCES, True, stats) == (EXAMPLES["resources"], None)
    assert _cached(None, None, RESOURCES, True, stats) == (None, None)
    assert _cached(MARKER, 6, RESOURCES, True, stats) == (None, 6)
    assert _cached(b"garbage", 7, RESOURCES, True, stats) == (None, 7)
    assert stats == {"hits": 1, "misses": 3, "rejected": 1}
