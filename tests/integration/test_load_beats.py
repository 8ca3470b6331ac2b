"""A load beats while its store takes the rows, not only while they are generated.

A load process's agent takes no progress for agents.heartbeat_timeout as a hung load. The
generator beats as a binding reads rows from it (`Fragment.attributes`, `comments`); a
binding that builds every row first and then sends them in bulk must beat per batch as it
sends, or a long legitimate insert looks hung. Checked against each binding's real server.
"""

from collections.abc import Iterator

import pytest

from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.registry import make_binding, store_names
from tests.integration.stores import SERVERS

# Several batches of every kind of row: 1500 members, 3000 friendships, 3000 resources,
# 3000 comments.
DB = BGDatabaseConfig(
    usercount=1500, friendcountperuser=4, resourcecountperuser=2, commentcountperresource=1
)
PLAN = FragmentPlan((1.0,), 0.27)
STORED = [n for n in store_names("bg") if n != "null"]  # the null store sends nothing


class Beats:
    """Counts a fragment's beats, telling those made while its rows are generated from the
    binding's own (as it sends them)."""

    def __init__(self, fragment: Fragment) -> None:
        self.generating = self.storing = 0
        self.inside = False
        attributes, comments = fragment.attributes, fragment.comments

        def beat() -> None:
            if self.inside:
                self.generating += 1
            else:
                self.storing += 1

        def generated_attributes(member: int) -> list[str]:
            self.inside = True
            try:
                return attributes(member)
            finally:
                self.inside = False

        def generated_comments() -> Iterator[tuple[int, int, int, str]]:
            rows = comments()
            while True:
                self.inside = True
                try:
                    row = next(rows)
                except StopIteration:
                    return
                finally:
                    self.inside = False
                yield row

        fragment.progress = beat
        fragment.attributes = generated_attributes  # type: ignore[method-assign]
        fragment.comments = generated_comments  # type: ignore[method-assign]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", STORED)
def test_a_load_beats_while_the_store_takes_its_rows(name, tmp_path, request):
    for options in SERVERS[name](tmp_path, request):
        binding = make_binding("bg", name, options)
        try:
            binding.create_schema(DB)
            fragment = Fragment(DB, PLAN, 0)
            beats = Beats(fragment)
            binding.load_fragment(fragment)
        finally:
            binding.close()
    assert beats.generating >= DB.usercount  # every member's attributes were generated
    # Beats of the binding's own while it sent rows: at least one per batch of each kind
    # it sends in bulk (here, several batches each).
    assert beats.storing >= 3, (beats.generating, beats.storing)
