"""The docs tree builds as a static site (MkDocs, mkdocs.yml) with broken links and anchors
as errors, and the built site opens in headless Chromium (Debian's, through selenium):
every page the navigation lists renders with its title and no console error, and every
link between the pages reaches an existing page and anchor."""

import functools
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser import headless_chromium, installed

ROOT = Path(__file__).resolve().parents[2]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_every_docs_page_is_in_the_site(site):
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md"))
    assert pages
    for page in pages:
        assert (site / page.with_suffix(".html")).is_file(), page


@pytest.mark.parametrize(
    ("link", "complaint"),
    [
        ("[gone](guide/no-such-page.md)", "no-such-page.md"),
        ("[gone](guide/rating.md#no-such-section)", "no-such-section"),
        ("[outside](../README.md)", "README.md"),
    ],
)
def test_a_broken_link_fails_the_build(link, complaint, tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "broken.md").write_text(f"# Broken\n\nSee {link}.\n")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "broken.md" in done.stderr and complaint in done.stderr, done.stderr


@pytest.fixture
def browser(tmp_path):
    if not installed():
        pytest.skip("Debian's chromium and chromedriver are not installed (scripts/test does)")
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on loopback, as a reader gets it (its search runs in a worker,
    which a file:// page may not start)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def internal_links(driver: webdriver.Chrome, base: str, site: Path) -> set[tuple[Path, str]]:
    """The open page's links into the site: (file, fragment)."""
    found = set()
    for anchor in driver.find_elements(By.CSS_SELECTOR, "a[href]"):
        href = anchor.get_attribute("href") or ""
        if href.startswith(base + "/"):
            parts = urlsplit(href)
            found.add((site / unquote(parts.path).lstrip("/"), unquote(parts.fragment)))
    return found


def open_page(driver: webdriver.Chrome, base: str, site: Path, page: Path) -> None:
    driver.get(f"{base}/{page.relative_to(site).as_posix()}")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"{page.name}: {errors}"
    heading = driver.find_element(By.CSS_SELECTOR, "[role=main] h1, .col-md-9 h1")
    assert heading.text.strip(), f"{page.name} has an empty title"


def test_the_site_opens_and_its_internal_links_resolve(site, served, browser):
    index = site / "index.html"
    open_page(browser, served, site, index)
    assert "bgbench" in browser.title
    linked = internal_links(browser, served, site)
    nav_pages = {path for path, _ in linked if path.suffix == ".html"} | {index}
    docs_pages = {site / p.relative_to(ROOT / "docs").with_suffix(".html")
                  for p in (ROOT / "docs").rglob("*.md")}  # fmt: skip
    assert docs_pages <= nav_pages, f"not reachable from the index: {docs_pages - nav_pages}"
    checked = 0
    for page in sorted(docs_pages):
        open_page(browser, served, site, page)
        for target, fragment in internal_links(browser, served, site):
            if target.is_dir():
                target = target / "index.html"
            assert target.is_file(), f"{page.name} links to a missing {target}"
            if fragment and target.suffix == ".html":
                ids = set(re.findall(r'\bid="([^"]+)"', target.read_text()))
                assert fragment in ids, f"{page.name} links to a missing #{fragment} of {target}"
            checked += 1
    assert checked > len(docs_pages)  # the pages do link to one another
