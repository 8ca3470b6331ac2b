"""CASQL's MessagePack values: only large values that shrink are compressed, and hostile
MessagePack (another shape, lengths it does not have, deep nesting, extension types, an
unknown tag, a zlib bomb) is refused."""

import random
import zlib

import msgpack
import pytest

from bgbench.workloads.bg.stores.casql_values import (
    COMMENTS,
    DECODED_LIMIT,
    MEMBERS,
    PROFILE,
    RESOURCES,
    decode,
    encode,
)

PLAIN, ZLIB = b"\x01", b"\x02"


def test_small_values_and_random_images_stay_plain_large_text_is_compressed():
    image = random.Random(1).randbytes(64 * 1024)  # BG's images are random bytes
    profile = (1, ["a"], 0, 0, None, image)
    raw = encode(PROFILE, profile, True)
    assert raw is not None and raw[:1] == PLAIN  # compressing would not shrink it
    assert decode(PROFILE, raw, True) == profile
    small = [(1, 2, 3)]
    assert encode(RESOURCES, small, True) == PLAIN + msgpack.packb(small)
    comments = [(1, m, m, "the same words again " * 20) for m in range(200)]
    packed = encode(COMMENTS, comments, True)
    plain = encode(COMMENTS, comments, False)
    assert packed is not None and plain is not None
    assert packed[:1] == ZLIB and plain[:1] == PLAIN and len(packed) < len(plain) // 4
    assert decode(COMMENTS, packed, False) == decode(COMMENTS, plain, True) == comments


def value(body: object) -> bytes:
    return PLAIN + msgpack.packb(body, use_bin_type=True)


HOSTILE = {
    "a map for rows": value({"rid": 1}),
    "text for a blob": value([[1, ["a"], "thumb"]]),
    "a blob for text": value([[1, [b"a"], None]]),
    "an extension type": PLAIN + msgpack.packb([[1, ["a"], msgpack.ExtType(5, b"x")]]),
    "a float for an int": value([[1.0, ["a"], None]]),
    "past int64": value([[2**63, ["a"], None]]),
    "a bool for an int": value([[True, ["a"], None]]),
    "an array claiming 4 G items": PLAIN + b"\xdd\xff\xff\xff\xff" + b"\x01",
    "deep nesting": PLAIN + b"\x91" * 100_000 + b"\x01",
    "trailing bytes": value([[1, ["a"], None]]) + b"\x00",
    "truncated": value([[1, ["a"], b"thumb"]])[:-2],
    "invalid utf-8": PLAIN + b"\x91\x93\x01\x91\xa1\xff\xc0",
    "an unknown tag": b"\x03" + msgpack.packb([[1, ["a"], None]]),
    "no tag at all": b"",
    "a zlib bomb": ZLIB + zlib.compress(b"\x90" + b"\x00" * (DECODED_LIMIT + 10), 9),
    "zlib with trailing bytes": ZLIB + zlib.compress(msgpack.packb([])) + b"x",
    "plain past the limit": PLAIN + b"\xc6" + (DECODED_LIMIT + 1).to_bytes(4, "big")
    + bytes(DECODED_LIMIT + 1),
}  # fmt: skip


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_messagepack_is_refused(case):
    assert decode(MEMBERS, HOSTILE[case], True) is None


def test_the_same_bytes_of_the_right_shape_are_read():
    assert decode(MEMBERS, value([[1, ["a"], b"thumb"]]), False) == [(1, ["a"], b"thumb")]
    assert decode(MEMBERS, value([]), True) == []
