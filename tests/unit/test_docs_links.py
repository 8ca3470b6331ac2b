"""Every relative link in the repository's docs names a file (and heading) that exists.

Checked: README.md, CHANGELOG.md, CONTRIBUTING.md, benchmarks/README.md and every
markdown file under docs/. A link must stay inside the repository; web addresses are
not followed. Links inside fenced code blocks are not links and are skipped.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def documents() -> list[Path]:
    top = [ROOT / name for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    return [
        *(p for p in top if p.exists()),
        ROOT / "benchmarks" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


def prose_lines(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def links(text: str) -> list[str]:
    return [m.group(1) for line in prose_lines(text) for m in LINK.finditer(line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in prose_lines(path.read_text()):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            found.add(slug(heading.group(1)))
    return found


def is_external(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """What is wrong with each relative link of `path` (its text, unless given)."""
    broken = []
    for target in links(path.read_text() if text is None else text):
        if is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    return broken


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert path.exists()
    assert broken_links(path) == []


def test_the_checker_reports_each_kind_of_broken_link() -> None:
    where = ROOT / "docs" / "guide" / "probe.md"  # resolved from, never written
    text = (
        "[ok](../index.md) [gone](missing.md) [anchor](../index.md#no-such-heading)\n"
        "[up](../index.md#the-user-guide) [out](../../../outside.md) [web](https://example.org/x.md)\n"
        "```\n[code](nope.md)\n```\n"
    )
    assert broken_links(where, text) == [
        "missing.md: no such file",
        "../index.md#no-such-heading: no heading #no-such-heading in docs/index.md",
        "../../../outside.md: outside the repository",
    ]


def test_slug_follows_github() -> None:
    assert slug("Ratings with intervals") == "ratings-with-intervals"
    assert slug("The `--events` file, and C++!") == "the---events-file-and-c"
