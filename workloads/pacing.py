"""The inter-arrival time setting, as BG's client means it, for workloads that take one."""

from typing import Annotated

from pydantic import Field

DAY_MS = 86_400_000

InterArrivalMs = Annotated[
    float,
    Field(
        ge=0,
        le=DAY_MS,
        description="ms a loop sleeps between the end of one operation and the start of "
        "the next (as BG's interarrivaltime); closed loop only",
    ),
]
