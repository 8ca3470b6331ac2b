"""The campaigns and campaign_jobs frames of bgbench.results.load (columns: frames.py),
secrets redacted on the way out (records written before redaction held them)."""

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bgbench.coordinator.configuration.redaction import (
    redact_options,
    redact_source,
    redact_strings,
)
from bgbench.coordinator.storage.store_file import json_object

CAMPAIGN_COLUMNS = (
    "id", "name", "created", "updated", "status", "file", "file_text", "version", "cwd",
    "message",
)  # fmt: skip
JOB_COLUMNS = (
    "campaign_id", "seq", "label", "vars", "settings", "servers", "study", "rating_id",
    "status", "message",
)  # fmt: skip
VAR_PREFIX = "var."


def _json(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


def campaign_row(r: Mapping[str, Any]) -> dict[str, Any]:
    row = {c: r.get(c) for c in CAMPAIGN_COLUMNS}
    row["file_text"] = redact_source(row["file_text"] or "")
    row["message"] = redact_strings(row["message"] or "")
    return row


def jobs_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    out = []
    for j in rows:
        variables = redact_options(json_object(_json(j.get("vars_json"), {})))
        out.append({
            "campaign_id": j["campaign_id"],
            "seq": j["seq"],
            "label": redact_strings(j.get("label") or ""),
            "vars": variables,
            "settings": redact_options(json_object(_json(j.get("settings_json"), {}))),
            "servers": redact_strings(_json(j.get("servers_json"), [])),
            "study": j.get("study") or "",
            "rating_id": j.get("rating_id"),
            "status": j["status"],
            "message": redact_strings(j.get("message") or ""),
            **{VAR_PREFIX + str(k): v for k, v in variables.items()},
        })  # fmt: skip
    columns = list(dict.fromkeys([*JOB_COLUMNS, *(k for j in out for k in j)]))
    return pd.DataFrame(out, columns=columns)
