"""Issue 24, item 2: no other web page can drive or read the deck. Over real HTTP against a
running `bgbench deck`: a foreign Host (DNS rebinding) is refused on every route, a change
needs the deck's own Origin and its anti-forgery token, --allow-host adds a name, and a
settings name ending in a newline is refused."""

import json
import shutil
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

from tests.e2e.live_helpers import end, free_port, wait_for
from tests.e2e.test_deck import Deck, chromium, get, small_rating
from tests.helpers import BGBENCH

REBIND = "rebind.attacker.example"


def call(url: str, method: str = "GET", body: object = None, headers: dict[str, str] | None = None):
    """(status, body text) of one request, the Host header as given (urllib keeps it)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers or {}, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def saved(deck: Deck) -> list[str]:
    status, text = call(deck.url + "/api/settings")
    assert status == 200, text
    return json.loads(text)["names"]


def jobs(deck: Deck) -> list[dict]:
    status, text = call(deck.url + "/api/jobs")
    assert status == 200, text
    return json.loads(text)["jobs"]


def save(deck: Deck, name: str, text: str, headers: dict[str, str]) -> tuple[int, str]:
    return call(deck.url + "/api/settings", "POST", {"name": name, "text": text}, headers)


def test_the_issue_s_rebinding_curl_starts_no_rating(deck, tmp_path):
    assert save(deck, "x.toml", small_rating(tmp_path), deck.own)[0] == 200
    if shutil.which("curl") is None:
        pytest.fail("curl is needed: the issue's exact command is replayed")
    curl = [
        "curl", "-sS", "-o", str(tmp_path / "reply"), "-w", "%{http_code}", "-X", "POST",
        "-H", f"Host: {REBIND}", "-H", f"Origin: http://{REBIND}",
        "-H", "Content-Type: application/json", "-d", '{"kind":"rate","name":"x.toml"}',
        f"{deck.url}/api/jobs",
    ]  # fmt: skip
    done = subprocess.run(curl, capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout == "421", (done.stdout, (tmp_path / "reply").read_text())
    assert "Host" in json.loads((tmp_path / "reply").read_text())["error"]
    assert jobs(deck) == []  # asked with the deck's own Host: nothing was started
    assert not list((tmp_path / "res" / "deck" / "jobs").glob("*.events.jsonl"))


REBINDING_SCRIPT = """
const done = arguments[arguments.length - 1];
const body = JSON.stringify({kind: "rate", name: "x.toml"});
Promise.all([
  fetch("/api/jobs", {method: "POST", headers: {"Content-Type": "application/json"}, body}),
  fetch("/api/settings"),
]).then((replies) => Promise.all(replies.map(async (r) => [r.status, await r.text()])))
  .then(done, (e) => done(String(e)));
"""


def test_a_rebinding_page_in_a_browser_can_neither_start_nor_read(deck, tmp_path):
    """Chromium resolves the attacker's name to 127.0.0.1, as DNS rebinding makes it: a
    page of that origin calls the deck same-origin, Origin header and all."""
    assert save(deck, "x.toml", small_rating(tmp_path), deck.own)[0] == 200
    rule = f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"
    with chromium(tmp_path, rule) as browser:
        browser.set_script_timeout(120)
        browser.get(f"http://{REBIND}:{deck.port}/")
        page = browser.page_source
        replies = browser.execute_async_script(REBINDING_SCRIPT)
    assert [status for status, _ in replies] == [421, 421], replies
    assert "data-csrf" not in page and "Settings" not in page
    assert "x.toml" not in replies[1][1]
    assert jobs(deck) == []


def test_a_foreign_host_reads_nothing(deck, tmp_path):
    assert save(deck, "x.toml", "secret-looking settings", deck.own)[0] == 200
    paths = ("/", "/ratings", "/api/jobs", "/api/settings", "/api/settings/x.toml", "/jobs/J1",
             "/api/jobs/J1/stream", "/nope")  # fmt: skip
    hosts = (f"{REBIND}:{deck.port}", REBIND, f"127.0.0.1:{free_port()}", "127.0.0.1")
    for path in paths:
        for host in hosts:
            status, text = call(deck.url + path, headers={"Host": host})
            assert status == 421, (path, host, status, text)
            assert "secret-looking" not in text and "x.toml" not in text
            assert len(text) < 200  # a short refusal, nothing of the deck's
    assert call(deck.url + "/api/settings/x.toml")[0] == 200  # its own Host is answered
    assert call(f"http://localhost:{deck.port}/api/settings")[0] == 200


def test_a_change_needs_the_deck_s_own_origin(deck, tmp_path):
    token = {"X-BGBench-CSRF": deck.own["X-BGBench-CSRF"]}
    foreign = (f"http://{REBIND}", f"http://{REBIND}:{deck.port}", "null",
               f"http://127.0.0.1:{free_port()}", f"https://127.0.0.1:{deck.port}")  # fmt: skip
    for origin in (None, *foreign):
        headers = token if origin is None else {**token, "Origin": origin}
        status, text = save(deck, "o.toml", "", headers)
        assert status == 403 and "Origin" in json.loads(text)["error"], (origin, status, text)
        status, _ = call(deck.url + "/api/jobs/J1/stop", "POST", {}, headers)
        assert status == 403, origin
    assert saved(deck) == []
    assert save(deck, "o.toml", "", {**token, "Origin": f"http://localhost:{deck.port}"})[0] == 200
    assert saved(deck) == ["o.toml"]


def test_a_change_needs_the_anti_forgery_token(deck, tmp_path):
    origin = {"Origin": deck.url}
    right = deck.own["X-BGBench-CSRF"]
    assert len(right) >= 32
    for given in (None, "", "wrong", right[:-1], right + "x", right.upper()):
        headers = origin if given is None else {**origin, "X-BGBench-CSRF": given}
        status, text = save(deck, "t.toml", small_rating(tmp_path), headers)
        assert status == 403 and "X-BGBench-CSRF" in json.loads(text)["error"], (given, text)
        status, _ = call(
            deck.url + "/api/validate", "POST", {"name": "t.toml", "text": ""}, headers
        )
        assert status == 403
    assert saved(deck) == []
    assert save(deck, "t.toml", small_rating(tmp_path), deck.own)[0] == 200
    assert saved(deck) == ["t.toml"]


def test_a_settings_name_ending_in_a_newline_is_refused(deck, tmp_path):
    for name in ("nl.toml\n", "nl.toml\nx", "\nnl.toml"):
        status, text = save(deck, name, '[store]\nname = "sqlite"\n', deck.own)
        assert status == 400, (name, status, text)
        error = json.loads(text)["error"]
        assert "\n" not in error and error.startswith(f"settings name {name!r}")
    assert call(deck.url + "/api/settings/nl.toml%0A")[0] == 400
    assert saved(deck) == []
    settings = tmp_path / "res" / "deck" / "settings"
    assert not settings.exists() or list(settings.iterdir()) == []


def test_allow_host_adds_a_name_and_only_that_name(tmp_path):
    d = Deck(tmp_path, "--allow-host", "deck.example.org", "--allow-host", "lab.test:1")
    try:
        d.started()
        port = d.port
        page = call(d.url + "/", headers={"Host": f"deck.example.org:{port}"})
        assert page[0] == 200 and "data-csrf=" in page[1]
        proxied = {"Host": "deck.example.org", "Origin": "https://deck.example.org",
                   "X-BGBench-CSRF": d.own["X-BGBench-CSRF"]}  # fmt: skip
        assert save(d, "p.toml", "", proxied)[0] == 200  # behind a TLS proxy
        assert call(d.url + "/", headers={"Host": f"lab.test:{port}"})[0] == 421  # not its port
        assert call(d.url + "/", headers={"Host": "lab.test:1"})[0] == 200
        assert call(d.url + "/", headers={"Host": f"other.example.org:{port}"})[0] == 421
        assert call(d.url + "/", headers={"Host": f"{REBIND}:{port}"})[0] == 421
    finally:
        end(d.proc, signal.SIGTERM)


@pytest.mark.parametrize("value", ["http://deck.example.org", "deck example", "x.org:0"])
def test_a_bad_allow_host_is_one_line(tmp_path, value):
    proc = subprocess.run(
        [*BGBENCH, "deck", "--port", str(free_port()), "--allow-host", value],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "--allow-host" in line and repr(value) in line


def test_with_its_token_a_script_needs_no_origin_but_a_foreign_host_is_still_refused(tmp_path):
    secret = "s3cret-deck-token"
    d = Deck(tmp_path, "--token", secret, "--host", "0.0.0.0")  # every address: token needed
    try:
        wait_for(lambda: get(d.url + "/")[0] == 401 or d.proc.poll() is not None, "the deck")
        assert d.proc.poll() is None, d.log.read_text()
        bearer = {"Authorization": f"Bearer {secret}"}
        assert save(d, "b.toml", "", bearer)[0] == 200  # curl with the token: no Origin needed
        foreign = {**bearer, "Origin": f"http://{REBIND}"}
        assert save(d, "c.toml", "", foreign)[0] == 403
        assert call(d.url + "/", headers={**bearer, "Host": REBIND})[0] == 421
        ok = call(d.url + "/api/settings", headers=bearer)
        assert json.loads(ok[1])["names"] == ["b.toml"]
    finally:
        end(d.proc, signal.SIGTERM)
