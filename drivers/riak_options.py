"""Riak KV's options: its HTTP API's address, bucket naming, and the quorum settings of
reads and writes, without the HTTP client library.

The `consistency` preset follows the Klein et al. settings: "quorum" (r, w, pr, pw at
quorum; notfound_ok false) or "noquorum" (r, w at 1, pr, pw at 0; notfound_ok true);
each quorum option may be set on its own.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

QUORUM_WORDS = ("one", "quorum", "all", "default")


def _quorum(value: object) -> int | str:
    """A Riak quorum value: a replica count or one of its words."""
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text)
    if text in QUORUM_WORDS:
        return text
    raise ValueError(f"{value!r} is not a quorum value: use a count or one, quorum, all, default")


Quorum = Annotated[int | str, BeforeValidator(_quorum)]
PRESETS: dict[str, dict[str, Any]] = {
    "quorum": {"r": "quorum", "w": "quorum", "pr": "quorum", "pw": "quorum",
               "notfound_ok": False},
    "noquorum": {"r": 1, "w": 1, "pr": 0, "pw": 0, "notfound_ok": True},
}  # fmt: skip


class RiakOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = "http://127.0.0.1:8098"
    bucket_type: str = Field("default", pattern=r"^[A-Za-z0-9_-]+$")
    bucket_prefix: str = Field("bg_", pattern=r"^[A-Za-z0-9_-]{0,40}$")
    server_name: str = Field("Riak KV", description="what the server is")
    n_val: Annotated[int, Field(ge=1)] = 3
    consistency: Literal["quorum", "noquorum"] = "quorum"
    r: Quorum | None = None
    w: Quorum | None = None
    pr: Quorum | None = None
    pw: Quorum | None = None
    dw: Quorum | None = None
    notfound_ok: bool | None = None
    basic_quorum: bool | None = None
    pool_max: Annotated[int, Field(ge=1)] = 256
    timeout_s: Annotated[float, Field(gt=0)] = 10.0

    def read_params(self) -> dict[str, str]:
        return self._params(("r", "pr", "notfound_ok", "basic_quorum"))

    def write_params(self) -> dict[str, str]:
        return self._params(("w", "dw", "pw"))

    def _params(self, names: tuple[str, ...]) -> dict[str, str]:
        preset = PRESETS[self.consistency]
        out: dict[str, str] = {}
        for name in names:
            value = getattr(self, name)
            value = preset.get(name) if value is None else value
            if value is not None:
                out[name] = str(value).lower()
        return out

    def describe(self) -> str:
        """`<server> at <url> (n_val N, <preset>: r=..., ...)`."""
        settings = ", ".join(
            f"{k}={v}" for k, v in {**self.read_params(), **self.write_params()}.items()
        )
        return (
            f"{self.server_name} at {self.url} (n_val {self.n_val}, {self.consistency}: {settings})"
        )
