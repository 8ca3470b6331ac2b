"""Secrets never leave the process: what is redacted, and what a resume must be given again."""

import json

import pytest

from bgbench.coordinator.cli import resumed_settings
from bgbench.coordinator.config import load_settings, parse_override
from bgbench.coordinator.redaction import redact_config, redact_options, redact_text
from bgbench.errors import UserError


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://bg:pw@127.0.0.1:5432/bg", "postgresql://bg:***@127.0.0.1:5432/bg"),
        ("mongodb://root:p%40ss@h1,h2/?x=1", "mongodb://root:***@h1,h2/?x=1"),
        ("host=h password=pw dbname=bg", "host=h password=*** dbname=bg"),
        ("host=h password='a b' dbname=bg", "host=h password=*** dbname=bg"),
        ("http://127.0.0.1:8098", "http://127.0.0.1:8098"),  # no userinfo: unchanged
        ("host=127.0.0.1 port=5432 user=postgres", "host=127.0.0.1 port=5432 user=postgres"),
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
