"""What CASQL keeps in memcached: each read action's rows in MessagePack (bytes as they are:
no base64), a tag byte first. With `compress` on, a value over COMPRESS_FROM is
zlib-compressed when that makes it smaller (the paper's Whalin client compressed values
over its 30 KB threshold); BG's images are random bytes, which never shrink, so
compressing every value cost more client CPU than anything else in a cached read.

memcached has no authentication: any process that reaches it can set any key, so what
comes back is untrusted data, never code (it was pickle, which runs what a value says).
A value is read within DECODED_LIMIT (decompressed, if it was) and must have exactly the
shape of the action's rows (strict types, 64-bit integers, no extra or missing fields),
else decode() returns None and the caller serves the read from PostgreSQL and counts it
as rejected. MessagePack's reader bounds nesting and the lengths a value claims by its
own size.
"""

import zlib
from typing import Annotated, Any

import msgpack  # type: ignore[import-untyped]
from pydantic import Field, Strict, TypeAdapter

ITEM_LIMIT = 1024 * 1024 - 1024  # memcached's default item size, less key and header room
DECODED_LIMIT = 2 * 1024 * 1024  # a value's encoding, decompressed; larger is never cached
COMPRESS_FROM = 30 * 1024  # smaller values are never compressed (Whalin's threshold)
PLAIN, ZLIB = b"\x01", b"\x02"  # the tag byte: how the rest of the value is stored

# Scalars strict (no "1" for 1, no 1.0, no True); arrays read as lists fill the tuples.
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), lt=2**63)]
Text = Annotated[str, Strict()]
Blob = Annotated[bytes, Strict()]

# (member, attributes, friend_count, resource_count, pending_count, image)
PROFILE: TypeAdapter[Any] = TypeAdapter(
    tuple[Int64, list[Text], Int64, Int64, Int64 | None, Blob | None]
)
MEMBERS: TypeAdapter[Any] = TypeAdapter(  # (member, attributes, thumbnail) per friend
    list[tuple[Int64, list[Text], Blob | None]]
)
RESOURCES: TypeAdapter[Any] = TypeAdapter(list[tuple[Int64, Int64, Int64]])  # (rid, creator, wall)
COMMENTS: TypeAdapter[Any] = TypeAdapter(  # (rid, mid, commenter, text)
    list[tuple[Int64, Int64, Int64, Text]]
)


def encode(shape: TypeAdapter[Any], value: object, compress: bool) -> bytes | None:
    """The value as cached, or None when it is too large to cache. `shape` is what
    decode() will hold it to (the encoding itself needs none)."""
    raw: bytes = msgpack.packb(value, use_bin_type=True)
    if len(raw) > DECODED_LIMIT:
        return None
    out = PLAIN + raw
    if compress and len(raw) > COMPRESS_FROM:
        packed = zlib.compress(raw, 1)
        if len(packed) < len(raw):
            out = ZLIB + packed
    return out if len(out) <= ITEM_LIMIT else None


def decode(shape: TypeAdapter[Any], raw: bytes, compress: bool) -> Any:
    """The value a binding cached, or None for anything else: no known tag, not zlib
    where it says so, larger than DECODED_LIMIT once decompressed, trailing bytes, not
    MessagePack, or another shape. Values of either form are read whatever `compress`
    says (bindings with either setting may share one memcached)."""
    tag, body = raw[:1], raw[1:]
    if tag == ZLIB:
        inflate = zlib.decompressobj()
        try:
            body = inflate.decompress(body, DECODED_LIMIT)
        except zlib.error:
            return None
        if not inflate.eof or inflate.unconsumed_tail or inflate.unused_data:
            return None
    elif tag != PLAIN or len(body) > DECODED_LIMIT:
        return None
    try:
        return shape.validate_python(msgpack.unpackb(body, raw=False, strict_map_key=True))
    except (ValueError, TypeError, msgpack.UnpackException):  # ValidationError is a ValueError
        return None
