"""What every workload's loaders share: the liveness beat while rows go to a store."""

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

# Rows buffered client-side (a COPY, an executemany, a store's own batch): one beat per
# this many, about one per round trip.
ROWS_PER_BEAT = 1000


def beating(items: Iterable[T], progress: Callable[[], None], every: int = 1) -> Iterator[T]:
    """The items, calling `progress` (the fragment's liveness beat, `Fragment.progress`)
    before the first and then before every `every`-th: a load that sends rows it built
    beforehand keeps beating while the store takes them, and stops when a store call
    never returns."""
    countdown = 1
    for item in items:
        countdown -= 1
        if not countdown:
            progress()
            countdown = every
        yield item
