"""The worker service contract. Regenerate the modules with `python -m bgbench.protos.generate`."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

PROTOCOL_VERSION = 14

# Latency histograms cross the wire HDR-encoded; both sides build them alike so merges
# are exact: microseconds from 1 to one hour, 3 significant digits.
HIST_LOWEST_US = 1
HIST_HIGHEST_US = 3_600_000_000
HIST_DIGITS = 3


def new_histogram() -> "HdrHistogram":
    from hdrh.histogram import HdrHistogram

    return HdrHistogram(HIST_LOWEST_US, HIST_HIGHEST_US, HIST_DIGITS)


# What an agent prints, followed by host:port, once it serves.
AGENT_READY_LINE = "BGBENCH-AGENT LISTENING "

# Every call carries the shared token as "authorization: Bearer <token>".
AUTH_METADATA_KEY = "authorization"


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return ((AUTH_METADATA_KEY, f"Bearer {token}"),)


# A RunRequest's start_state when a PREPARE_READY already made every fragment's state
# exact: the run starts from it as it is.
START_READIED = "ready"
