"""CASQL's value codec before and after, side by side in one run: client CPU to encode and
to decode one value of each read action's rows, as BG's generator makes them, with and
without images, compressed (the default) or not.

    .venv/bin/python benchmarks/casql_codec.py

Before is the codec of commit 966f596, kept here (pydantic JSON, bytes as base64, zlib
level 1 on every value when compressing); after is workloads/bg/stores/casql_values.py.
"""

import os
import random
import resource
import time
from collections.abc import Callable
from functools import partial
from typing import Any


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def json_codec() -> tuple[Callable[..., Any], Callable[..., Any], dict[str, Any]]:
    """The codec before (commit 966f596): pydantic JSON, bytes as base64, zlib level 1 on
    every value when compressing."""
    import zlib
    from typing import Annotated

    from pydantic import ConfigDict, Field, TypeAdapter

    strict = ConfigDict(strict=True, ser_json_bytes="base64", val_json_bytes="base64")
    i64 = Annotated[int, Field(ge=-(2**63), lt=2**63)]
    shapes = {
        "profile": TypeAdapter(tuple[i64, list[str], i64, i64, i64 | None, bytes | None],
                               config=strict),
        "members": TypeAdapter(list[tuple[i64, list[str], bytes | None]], config=strict),
        "resources": TypeAdapter(list[tuple[i64, i64, i64]], config=strict),
        "comments": TypeAdapter(list[tuple[i64, i64, i64, str]], config=strict),
    }  # fmt: skip

    def encode(shape: Any, value: object, compress: bool) -> bytes:
        raw = shape.dump_json(value)
        return zlib.compress(raw, 1) if compress else raw

    def decode(shape: Any, raw: bytes, compress: bool) -> Any:
        if compress:
            inflate = zlib.decompressobj()
            raw = inflate.decompress(raw, 4 * 1024 * 1024)
        return shape.validate_json(raw)

    return encode, decode, shapes


def bg_values(images: bool, friends: int) -> dict[str, object]:
    """One value of each action's rows, as BG's generator makes them: 10 attributes of
    100 random letters; with images, one 12 KB profile image and one 2 KB thumbnail of
    random bytes per fragment (every member of a fragment has the same)."""
    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def attrs() -> list[str]:
        return ["".join(rng.choices(letters, k=100)) for _ in range(10)]

    pic = rng.randbytes(12 * 1024) if images else None
    thumb = rng.randbytes(2 * 1024) if images else None
    return {
        "profile": (7, attrs(), friends, 10, 3, pic),
        "members": [(i, attrs(), thumb) for i in range(friends)],
        "resources": [(i, 7, 7) for i in range(5)],
        "comments": [(1, i, i + 1, "".join(rng.choices(letters, k=100))) for i in range(20)],
    }


def per_call_us(call: Callable[[], object], seconds: float = 0.3) -> float:
    n, c0 = 0, cpu_s()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        call()
        n += 1
    return (cpu_s() - c0) / n * 1e6


def main() -> None:
    from bgbench.workloads.bg.stores import casql_values as new

    old_encode, old_decode, old_shapes = json_codec()
    new_shapes = {"profile": new.PROFILE, "members": new.MEMBERS, "resources": new.RESOURCES,
                  "comments": new.COMMENTS}  # fmt: skip
    print(f"CASQL value codec, client CPU per value (us), load average {os.getloadavg()[0]:.1f}")
    print(f"{'value':>22} {'compress':>8} {'bytes before':>12} {'after':>8} "
          f"{'encode before':>13} {'after':>8} {'decode before':>13} {'after':>8}")  # fmt: skip
    for images in (False, True):
        values = bg_values(images, friends=100)
        for name, value in values.items():
            for compress in (False, True):
                old_raw = old_encode(old_shapes[name], value, compress)
                new_raw = new.encode(new_shapes[name], value, compress)
                assert new_raw is not None and new.decode(new_shapes[name], new_raw, compress)
                old, shape = old_shapes[name], new_shapes[name]
                e0 = per_call_us(partial(old_encode, old, value, compress))
                e1 = per_call_us(partial(new.encode, shape, value, compress))
                d0 = per_call_us(partial(old_decode, old, old_raw, compress))
                d1 = per_call_us(partial(new.decode, shape, new_raw, compress))
                label = f"{name}{' + images' if images else ''}"
                print(f"{label:>22} {compress!s:>8} {len(old_raw):>12,} {len(new_raw):>8,} "
                      f"{e0:>13.1f} {e1:>8.1f} {d0:>13.1f} {d1:>8.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
