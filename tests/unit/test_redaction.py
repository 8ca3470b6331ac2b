"""Secrets never leave the process: what is redacted, and what a resume must be given again."""

import json
import string
import urllib.parse

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.configuration.redaction import (
    is_secret_name,
    redact_config,
    redact_options,
    redact_source,
    redact_text,
)
from bgbench.coordinator.interfaces.cli import resumed_settings
from bgbench.errors import UserError


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://bg:pw@127.0.0.1:5432/bg", "postgresql://bg:***@127.0.0.1:5432/bg"),
        ("mongodb://root:p%40ss@h1,h2/?x=1", "mongodb://root:***@h1,h2/?x=1"),
        ("host=h password=pw dbname=bg", "host=h password=*** dbname=bg"),
        ("host=h password='a b' dbname=bg", "host=h password='***' dbname=bg"),
        ("http://127.0.0.1:8098", "http://127.0.0.1:8098"),  # no userinfo: unchanged
        ("host=127.0.0.1 port=5432 user=postgres", "host=127.0.0.1 port=5432 user=postgres"),
        # libpq's sslpassword, with a quoted value holding spaces and an escaped quote
        (r"host=h sslpassword='a b\' c' dbname=x", "host=h sslpassword='***' dbname=x"),
        (r"sslpassword = a\ b sslmode=require", "sslpassword = *** sslmode=require"),
        ("host=h passphrase=p sslkey=/k.pem", "host=h passphrase=*** sslkey=***"),
        # URI query parameters, and a password holding an unencoded @ and /
        (
            "postgresql://u:p@s/s@h/d?sslpassword=q&application_name=a&api_key=k#f",
            "postgresql://u:***@h/d?sslpassword=***&application_name=a&api_key=***#f",
        ),
        (
            "mongodb://h/?authSource=admin&password=x&w=1",
            "mongodb://h/?authSource=admin&password=***&w=1",
        ),
        ("https://api.example/v1?token=t&n=1", "https://api.example/v1?token=***&n=1"),
        # what a message may echo: a dict, a JSON object
        ("{'password': 'x', 'user': 'u'}", "{'password': '***', 'user': 'u'}"),
        ('{"clientSecret": "x", "n": 1}', '{"clientSecret": "***", "n": 1}'),
        # names that only look like secrets stay
        (
            "passed=3 keyspace=ks hashed_keys=1 key_file=/f",
            "passed=3 keyspace=ks hashed_keys=1 key_file=/f",
        ),
    ],
)
def test_passwords_in_connection_strings_are_redacted(given, shown):
    assert redact_text(given) == shown


def test_secret_keys_are_redacted_at_any_depth():
    options = {"password": "pw", "auth": {"api_key": "k", "user": "u"}, "path": "/tmp/x"}
    assert redact_options(options) == {
        "password": "***",
        "auth": {"api_key": "***", "user": "u"},
        "path": "/tmp/x",
    }


def _record(**params: str) -> dict:
    settings = load_settings(None, [parse_override(f"{k}={v}") for k, v in params.items()])
    return {"id": "R1", "config_json": settings.model_dump_json()}


def test_a_recorded_rating_holds_no_secret():
    record = _record(**{"agents.token": "t" * 20, "store.options.dsn": "postgresql://u:pw@h/d"})
    assert "t" * 20 not in record["config_json"] and ":pw@" not in record["config_json"]


def test_resume_takes_redacted_secrets_again_and_nothing_else(tmp_path):
    record = _record(**{"store.name": "postgres", "store.options.dsn": "postgresql://u:pw@h/d"})
    with pytest.raises(UserError, match=r"store.options.dsn redacted.*-p store.options.dsn="):
        resumed_settings(record, [], tmp_path)
    again = [("store.options.dsn", "postgresql://u:pw@h/d")]
    settings = resumed_settings(record, again, tmp_path)
    assert settings.store.options["dsn"] == "postgresql://u:pw@h/d"
    assert settings.results_dir == tmp_path
    with pytest.raises(UserError, match="keeps its recorded settings"):
        resumed_settings(record, [*again, ("run.seed", 5)], tmp_path)


def test_resume_takes_the_token_from_the_environment(tmp_path):
    record = _record(**{"agents.token": "t" * 20})
    settings = resumed_settings(record, [], tmp_path)
    assert settings.agents.token is None  # credentials() falls back to $BGBENCH_TOKEN


def test_records_written_before_redaction_are_redacted_on_the_way_out():
    old = {"agents": {"token": "plain"}, "store": {"options": {"dsn": "postgresql://u:pw@h/d"}}}
    out = json.dumps(redact_config(old))
    assert "plain" not in out and ":pw@" not in out


def test_the_redaction_marker_is_not_a_token():
    with pytest.raises(UserError, match="redacted token"):
        load_settings(None, [("agents.token", "***")])


@pytest.mark.parametrize(
    "name", ["password", "sslpassword", "PASSWD", "passphrase", "api_key", "apiKey", "X-Api-Key",
             "access_key", "sslkey", "client_secret", "authToken", "credentials", "pwd", "pass"],
)  # fmt: skip
def test_names_that_say_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["passed", "keyspace", "keys", "hashed_keys", "key_file", "authSource", "user", "dsn"]
)
def test_names_that_do_not(name):
    assert not is_secret_name(name)


CAMPAIGN = """campaign: c  # old dsn postgresql://u:COMMENTPW@h/d
pw_anchor: &pw ALIASED
templates:
  base:
    store:
      name: postgres
      options:
        dsn: "host=h sslpassword='SSL PW\\\\' x' dbname=x"  # password=TRAILPW
        password: *pw
        api_key: |
          BLOCKSECRET
          second line
        url: http://u:URIPW@h/?token=QTOKEN&x=1
        creds: {user: u, pass: FLOWPW}
        list_token: [LIST1, LIST2]
        note: 'a # b'
jobs:
  - extends: base
    foreach: {passphrase: [PP1, PP2]}
"""


def test_a_campaign_files_text_keeps_its_shape_and_loses_its_secrets():
    shown = redact_source(CAMPAIGN)
    for secret in ("COMMENTPW", "ALIASED", "SSL PW", "TRAILPW", "BLOCKSECRET", "second line",
                   "URIPW", "QTOKEN", "FLOWPW", "LIST1", "LIST2", "PP1", "PP2"):  # fmt: skip
        assert secret not in shown, secret
    data = yaml.safe_load(shown)  # still YAML, everything else as written
    options = data["templates"]["base"]["store"]["options"]
    assert options["dsn"] == "host=h sslpassword='***' dbname=x"
    assert options["password"] == options["api_key"] == "***"
    assert options["url"] == "http://u:***@h/?token=***&x=1"
    assert options["note"] == "a # b" and data["campaign"] == "c"


def test_text_that_is_not_yaml_is_redacted_by_the_text_rule():
    toml = '[store.options]\npassword = "TOMLPW"\ndsn = "host=h password=INNER x=1" # token=T\n= ['
    shown = redact_source(toml)
    assert "TOMLPW" not in shown and "INNER" not in shown and "token=T" not in shown
    assert 'dsn = "host=h password=*** x=1"' in shown


# A secret never appears in what the redactor leaves: values hypothesis draws, written
# as a libpq keyword/value string (quoted and escaped as libpq reads them) or a URI.
MARK = "QX"  # every secret holds it; nothing else generated does
plain = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=8)
secret_values = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
).map(lambda s: MARK + s)
secret_names = st.sampled_from(
    ["password", "sslpassword", "PASSWORD", "passphrase", "api_key", "apikey", "token",
     "auth_token", "client_secret", "credentials", "sslkey", "accessKey"]
)  # fmt: skip


def _libpq(value: str) -> str:
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(plain, plain), max_size=3),
    st.lists(st.tuples(secret_names, secret_values), min_size=1, max_size=3),
    st.randoms(use_true_random=False),
    st.sampled_from(["=", " = ", "= ", "\t=\t"]),
)
@pytest.mark.slow
def test_no_secret_survives_in_a_libpq_string(others, secrets, rnd, eq):
    pairs = [(k, v) for k, v in others if not is_secret_name(k)] + secrets
    rnd.shuffle(pairs)
    dsn = " ".join(f"{k}{eq}{_libpq(v)}" for k, v in pairs)
    assert MARK not in redact_text(dsn), dsn


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["postgresql", "postgres", "mongodb", "mongodb+srv", "http", "https"]),
    plain,
    secret_values,
    st.lists(st.tuples(plain, plain), max_size=3),
    st.lists(st.tuples(secret_names, secret_values), max_size=3),
    st.booleans(),
)
def test_no_secret_survives_in_a_uri(scheme, user, password, others, secrets, encode):
    quote = (
        (lambda v: urllib.parse.quote(v, safe=""))
        if encode
        else (lambda v: "".join("%20" if c.isspace() else c for c in v))
    )
    params = [(k, v) for k, v in others if not is_secret_name(k)] + secrets
    query = "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in params)
    uri = f"{scheme}://{user}:{quote(password)}@h1,h2:5432/db" + (f"?{query}" if query else "")
    assert MARK not in redact_text(uri), uri
    assert MARK not in redact_text(f"dsn: {uri} (in a message)"), uri


def test_a_recorded_result_without_secrets_is_stored_as_it_was(tmp_path):
    # Redaction of what is recorded only touches secrets: no field of a result (names,
    # counts, encoded histograms, the store's description) looks like one.
    from bgbench.coordinator.configuration.redaction import redact_strings
    from bgbench.coordinator.storage.results import ResultsStore
    from tests.unit.report_ratings import model_rating

    model_rating(tmp_path, "R1", "model.peak=1e4")
    rows = ResultsStore(tmp_path).experiments("R1")
    assert rows
    for row in rows:
        result = json.loads(row["result_json"])
        assert redact_strings(result) == result


@pytest.mark.parametrize("tail", ["Pw==", "pw==", "token=abc", "PASSWORD=x"])
def test_an_encoded_histogram_is_kept_whatever_its_text_looks_like(tail):
    # An HDR histogram is base64: one ending "...Pw==" once read as "pw = =" and was
    # stored damaged (its agents' histograms were redacted a second time without `keep`).
    from bgbench.coordinator.configuration.redaction import REDACTED, redact_strings

    histogram = "HISTFAAAA2J4nD1TPWwUVxD2zJvd27/uo1k" + tail
    result = {
        "agents": [{"response_hist": histogram, "reasons": ["dsn password=hunter2"]}],
        "lag_hist": histogram,
        "password": "hunter2",
        "nested": {"secret": ["x"], "note": "token=abc"},
    }
    out = redact_strings(result)
    assert out["agents"][0]["response_hist"] == histogram and out["lag_hist"] == histogram
    assert out["agents"][0]["reasons"] == ["dsn password=***"]
    assert out["password"] == REDACTED and out["nested"]["secret"] == REDACTED
    assert out["nested"]["note"] == "token=***"
