"""The deck's app in process (no job started): settings checked and saved, names refused,
the token guard, pages with their script inlined and nothing fetched from elsewhere."""

import re

import pytest
from fastapi.testclient import TestClient

from bgbench.coordinator.interfaces.cli_deck import check_binding, is_loopback
from bgbench.coordinator.interfaces.deck_app import SETTINGS_LIMIT, DeckConfig, create_app
from bgbench.coordinator.interfaces.deck_guard import CSRF_HEADER, HostRule, check_allow_host
from bgbench.errors import UserError

YAML = "store:\n  name: sqlite\nrating:\n  objective: soar\n  max_threads: 8\nagents:\n  local: 1\n"


BASE = "http://127.0.0.1:8765"
HOSTS = HostRule.for_binding("127.0.0.1", "127.0.0.1", 8765)


def deck_client(app) -> TestClient:
    """A client as the deck's own page is: its address, its Origin, its anti-forgery token."""
    headers = {"Origin": BASE, CSRF_HEADER: app.state.csrf}
    return TestClient(app, base_url=BASE, headers=headers)


@pytest.fixture
def client(tmp_path):
    with deck_client(create_app(DeckConfig(tmp_path / "res", tmp_path / "settings", HOSTS))) as c:
        yield c


def test_settings_are_checked_as_check_config_does_and_saved(client, tmp_path):
    ok = client.post("/api/validate", json={"name": "a.yaml", "text": YAML}).json()
    assert ok == {"valid": True, "message": "valid"}
    bad = client.post("/api/validate", json={"name": "a.yaml", "text": "rating:\n  t0: -3\n"})
    assert bad.json()["valid"] is False and "rating.t0" in bad.json()["message"]
    assert "\n" not in bad.json()["message"]
    broken = client.post("/api/validate", json={"name": "a.toml", "text": "[store\n"}).json()
    assert broken["valid"] is False and broken["message"]
    assert str(tmp_path) not in broken["message"]  # the temporary file is not shown
    assert client.post("/api/settings", json={"name": "a.yaml", "text": YAML}).status_code == 200
    assert client.get("/api/settings").json() == {"names": ["a.yaml"]}
    assert client.get("/api/settings/a.yaml").json()["text"] == YAML
    assert (tmp_path / "settings" / "a.yaml").read_text() == YAML


@pytest.mark.parametrize(
    "name", ["../x.toml", "x.txt", ".hidden.toml", "a/b.yaml", "nl.toml\n", "x.toml\nmore"]
)
def test_a_bad_settings_name_is_one_line(client, name, tmp_path):
    reply = client.post("/api/settings", json={"name": name, "text": ""})
    assert reply.status_code in (400, 404)
    if reply.status_code == 400:
        assert "settings name" in reply.json()["error"]
        assert "\n" not in reply.json()["error"]
    assert not (tmp_path / "settings").exists() or not any((tmp_path / "settings").iterdir())


def test_pages_inline_their_script_and_fetch_nothing_elsewhere(client):
    for path in ("/", "/ratings"):
        reply = client.get(path)
        assert reply.status_code == 200
        html = reply.text
        assert "<script nonce=" in html and "EventSource" in html
        assert not re.search(r"""(src|href)=["']https?:""", html)
        policy = reply.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'nonce-" in policy
    assert client.get("/jobs/J9").status_code == 400


def test_the_token_guard(tmp_path):
    app = create_app(DeckConfig(tmp_path / "res", tmp_path / "settings", HOSTS, token="t0ken"))
    with TestClient(app, base_url=BASE) as c:
        assert c.get("/").status_code == 401
        assert c.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.get("/", headers={"Authorization": "Bearer t0ken"}).status_code == 200
        assert c.get("/ratings?token=t0ken").status_code == 200
        assert "t0ken" not in c.get("/?token=t0ken").text  # the page keeps it, not the server


def test_beyond_loopback_only_with_a_token():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    check_binding("127.0.0.1", None)
    check_binding("0.0.0.0", "t")
    with pytest.raises(UserError, match="--token"):
        check_binding("0.0.0.0", None)


def test_the_host_rule_answers_only_the_deck_s_own_names():
    loopback = HostRule.for_binding("127.0.0.1", "127.0.0.1", 8765)
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765"):
        assert loopback.accepts(host), host
    for host in (
        "rebind.attacker.example:8765", "127.0.0.1:8766", "127.0.0.1", "localhost.:8765",
        "127.0.0.1:8765 ", "127.0.0.1:8765\n", "a@127.0.0.1:8765", "", "[::1]:99999",
    ):  # fmt: skip
        assert not loopback.accepts(host), host
    assert loopback.accepts_origin("http://localhost:8765")
    for origin in ("null", "http://evil:8765", "https://127.0.0.1:8765", "http://127.0.0.1:8765/x",
                   "http://u@127.0.0.1:8765", "ftp://127.0.0.1:8765"):  # fmt: skip
        assert not loopback.accepts_origin(origin), origin
    named = HostRule.for_binding("127.0.0.1", "127.0.0.1", 8765, ["deck.example.org", "a.b:99"])
    assert named.accepts("deck.example.org") and named.accepts("Deck.Example.org:8443")
    assert named.accepts_origin("https://deck.example.org")
    assert named.accepts("a.b:99") and not named.accepts("a.b:98")


@pytest.mark.parametrize("value", ["", "a b", "http://x", "x/y", "-x.org", "x:0", "x.org\n"])
def test_a_bad_allow_host_is_one_line(value):
    with pytest.raises(UserError, match="--allow-host") as raised:
        check_allow_host(value)
    assert "\n" not in str(raised.value)


def test_an_oversized_or_malformed_body_is_one_line_and_saves_nothing(client, tmp_path):
    big = client.post(
        "/api/settings", json={"name": "big.toml", "text": "x" * (SETTINGS_LIMIT + 1)}
    )
    assert big.status_code == 400 and big.json()["error"].startswith("text: ")
    broken = client.post(
        "/api/settings", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 400 and "\n" not in broken.json()["error"]
    assert not (tmp_path / "settings").exists()
