"""Which installable extra (pyproject.toml's optional dependencies) a store or a command
needs, and the one-line refusal when it is not installed here.

`pip install bgbench` brings what a SQLite rating, validation and reports need; each store's
driver comes with its extra (`pip install 'bgbench[cassandra]'`), the deck's web stack with
`deck`, everything with `all`. A store is checked by name (the same name in every workload)
before anything starts: by the coordinator for the agents it spawns itself, and by an agent
when a prepare names the store. Only the presence of the driver's modules is looked up
(importlib.util.find_spec): nothing is imported.
"""

import importlib.util

from bgbench.errors import UserError

# Each extra's top-level modules, as its packages install them (pyproject.toml lists the
# packages). An extra that includes another's packages names its modules too.
POSTGRES_MODULES = ("psycopg", "psycopg_pool", "asyncpg")
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "postgres": POSTGRES_MODULES,
    "casql": (*POSTGRES_MODULES, "pymemcache", "aiomcache", "msgpack"),
    "mongodb": ("pymongo",),
    "cassandra": ("cassandra", "acsylla"),  # acsylla: BG's default driver for its calls
    "hbase": ("happybase",),
    "riak": ("httpx", "httpcore"),
    "mysql": ("asyncmy", "pymysql"),
    "deck": ("fastapi", "uvicorn", "sse_starlette"),
}
# A store's extra, by the store's name. A store not listed (sqlite, null, a plugin's own)
# needs nothing beyond bgbench itself (a plugin's distribution brings its own driver).
STORE_EXTRA = {
    "postgres": "postgres",
    "casql": "casql",
    "mongodb": "mongodb",
    "cassandra": "cassandra",
    "hbase": "hbase",
    "riak": "riak",
    "mysql": "mysql",
}


def missing_modules(extra: str) -> list[str]:
    """The extra's modules that cannot be found here (none imported to find out)."""
    return [m for m in EXTRA_MODULES[extra] if not _installed(m)]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed package
        return False


def install_hint(extra: str) -> str:
    return f"pip install 'bgbench[{extra}]'"


def store_problem(store: str, where: str = "here") -> str:
    """Why the store cannot run here ("" when it can): the extra to install, and what of
    it is missing."""
    extra = STORE_EXTRA.get(store)
    if extra is None:
        return ""
    missing = missing_modules(extra)
    if not missing:
        return ""
    return (
        f"store {store} needs the {extra!r} extra, not installed {where} (missing: "
        f"{', '.join(missing)}): {install_hint(extra)}"
    )


def require_store(store: str) -> None:
    """Refuse, in one line naming the extra, a store whose driver is not installed here."""
    problem = store_problem(store)
    if problem:
        raise UserError(problem)


def require_extra(extra: str, what: str) -> None:
    """Refuse `what` (a command, say) when the extra it needs is not installed here."""
    missing = ", ".join(missing_modules(extra))
    if missing:
        raise UserError(
            f"{what} needs the {extra!r} extra, not installed here (missing: {missing}): "
            f"{install_hint(extra)}"
        )
