"""What the PostgreSQL and MySQL Micro bindings share: their tables, and the check of an
update's items."""

from collections.abc import Sequence

TABLES = ("micro_groups", "micro_items", "micro_messages")


def distinct(items: Sequence[int]) -> list[int]:
    """The items as a list, each once (twice would count its delta twice in the total)."""
    chosen = [int(i) for i in items]
    if not chosen or len(set(chosen)) != len(chosen):
        raise ValueError(f"update_items takes one item or more, each once: {chosen}")
    return chosen
