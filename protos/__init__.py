"""The worker service contract. Regenerate the modules with `python -m bgbench.protos.generate`."""

PROTOCOL_VERSION = 5

# What an agent prints, followed by host:port, once it serves.
AGENT_READY_LINE = "BGBENCH-AGENT LISTENING "

# Every call carries the shared token as "authorization: Bearer <token>".
AUTH_METADATA_KEY = "authorization"


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return ((AUTH_METADATA_KEY, f"Bearer {token}"),)
