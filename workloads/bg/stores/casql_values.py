"""What CASQL keeps in memcached: each read action's rows as JSON arrays (bytes as base64),
zlib-compressed as a setting (the paper's Whalin client compressed).

memcached has no authentication: any process that reaches it can set any key, so what
comes back is untrusted data, never code (it was pickle, which runs what a value says).
A value is decompressed within DECODED_LIMIT and must have exactly the shape of the
action's rows (strict types, 64-bit integers, no extra or missing fields), else decode()
returns None and the caller serves the read from PostgreSQL and counts it as rejected.
"""

import zlib
from typing import Annotated, Any

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

ITEM_LIMIT = 1024 * 1024 - 1024  # memcached's default item size, less key and header room
DECODED_LIMIT = 4 * 1024 * 1024  # a value's JSON, decompressed; larger is never cached

_STRICT = ConfigDict(strict=True, ser_json_bytes="base64", val_json_bytes="base64")
Int64 = Annotated[int, Field(ge=-(2**63), lt=2**63)]

# (member, attributes, friend_count, resource_count, pending_count, image)
PROFILE: TypeAdapter[Any] = TypeAdapter(
    tuple[Int64, list[str], Int64, Int64, Int64 | None, bytes | None], config=_STRICT
)
MEMBERS: TypeAdapter[Any] = TypeAdapter(  # (member, attributes, thumbnail) per friend
    list[tuple[Int64, list[str], bytes | None]], config=_STRICT
)
RESOURCES: TypeAdapter[Any] = TypeAdapter(  # (rid, creator, wall)
    list[tuple[Int64, Int64, Int64]], config=_STRICT
)
COMMENTS: TypeAdapter[Any] = TypeAdapter(  # (rid, mid, commenter, text)
    list[tuple[Int64, Int64, Int64, str]], config=_STRICT
)


def encode(shape: TypeAdapter[Any], value: object, compress: bool) -> bytes | None:
    """The value as cached, or None when it is too large to cache."""
    raw = shape.dump_json(value)
    if len(raw) > DECODED_LIMIT:
        return None
    out = zlib.compress(raw, 1) if compress else raw
    return out if len(out) <= ITEM_LIMIT else None


def decode(shape: TypeAdapter[Any], raw: bytes, compress: bool) -> Any:
    """The value a binding cached, or None for anything else: not zlib, larger than
    DECODED_LIMIT once decompressed, trailing bytes, not JSON, or another shape."""
    if compress:
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(raw, DECODED_LIMIT)
        except zlib.error:
            return None
        if not inflate.eof or inflate.unconsumed_tail or inflate.unused_data:
            return None
    try:
        return shape.validate_json(raw)
    except ValidationError:
        return None
