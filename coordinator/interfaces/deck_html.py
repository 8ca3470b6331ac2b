"""The deck's pages: server-rendered HTML, its script and style inlined (no other request)."""

from html import escape
from importlib.resources import files
from typing import Any

from bgbench.coordinator.interfaces.deck_jobs import Job

_STATIC = files("bgbench.coordinator.interfaces") / "deck_static"
SCRIPT = (_STATIC / "deck.js").read_text(encoding="utf-8")
STYLE = (_STATIC / "deck.css").read_text(encoding="utf-8")


def page(title: str, body: str, nonce: str, **data: str) -> str:
    """A deck page; `data` becomes its body's data- attributes (data-csrf: the token its
    script sends with every change, readable only by pages of the deck's own origin)."""
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in data.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} · bgbench deck</title>
<link rel="icon" href="data:,">
<style nonce="{nonce}">{STYLE}</style>
</head><body{attrs}>
<nav><strong>bgbench deck</strong><a href="/">settings and jobs</a>
<a href="/ratings">ratings</a></nav>
{body}
<script nonce="{nonce}">{SCRIPT}</script>
</body></html>"""


def editor(names: list[str], jobs: list[Job], nonce: str, csrf: str) -> str:
    options = "".join(f'<option value="{escape(n)}">{escape(n)}</option>' for n in names)
    body = f"""
<h2>Settings</h2>
<div class="row">
  <label>open <select id="settings-choose"><option value="">(a saved file)</option>
  {options}</select></label>
  <label>name <input id="settings-name" value="settings.toml" size="28"></label>
  <label>is <select id="kind"><option value="rate">a rating's settings</option>
  <option value="campaign">a campaign file (YAML)</option></select></label>
  <span class="muted">TOML or YAML, by its name; checked as
  <code>bgbench check-config</code> does</span>
</div>
<textarea id="settings-text" spellcheck="false"
  placeholder="[store]&#10;name = &quot;sqlite&quot;"></textarea>
<div class="row">validation: <span id="validation" class="muted">(type settings)</span></div>
<div class="row">
  <button id="save" type="button">save</button>
  <button id="start" type="button">start</button>
  <label>metrics port <input id="metrics-port" type="number" min="1" max="65535" size="6"></label>
  <span id="start-error" class="error"></span>
</div>
<h2>Jobs</h2>
{jobs_table(jobs)}"""
    return page("settings", body, nonce, page="editor", csrf=csrf)


def jobs_table(jobs: list[Job]) -> str:
    if not jobs:
        return '<p class="muted">none started from this deck yet</p>'
    rows = "".join(
        f'<tr><td><a href="/jobs/{escape(j.id)}">{escape(j.id)}</a></td><td>{escape(j.kind)}</td>'
        f'<td class="num">{j.pid}</td><td>{escape(j.status)}</td>'
        f"<td><code>bgbench {escape(' '.join(j.args))}</code></td></tr>"
        for j in reversed(jobs)
    )
    return (
        '<table id="jobs"><thead><tr><th>job</th><th>kind</th><th class="num">PID</th>'
        f"<th>status</th><th>command</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def job(j: Job, nonce: str, csrf: str) -> str:
    body = f"""
<h2>Job {escape(j.id)}: {escape(j.kind)} <span class="muted">(PID {j.pid})</span></h2>
<p><code>bgbench {escape(" ".join(j.args))}</code></p>
<div class="row"><span id="campaign" hidden>campaign <strong id="campaign-id">-</strong>:
  <span id="campaign-status">running</span> ·</span> rating <strong id="rating-id">-</strong>
  · status <span id="job-status">{escape(j.status)}</span>
  · now <span id="now">-</span></div>
<div class="row"><button id="stop" type="button">stop</button>
  <button id="resume" type="button">resume</button><span id="job-error" class="error"></span></div>
<p id="result"></p>
<div class="row"><span class="legend-throughput">actions/s <strong id="throughput">-</strong></span>
  <span class="legend-p95">p95 ms (interval) <strong id="p95">-</strong></span></div>
<canvas id="chart" width="760" height="260"></canvas>
<h2>Agents</h2>
<table><thead><tr><th>agent</th><th>health</th><th class="num">actions/s</th>
<th class="num">actions</th><th class="num">errors</th><th class="num">CPU %</th>
<th>host</th><th class="num">host CPU cores</th></tr></thead>
<tbody id="agents-body"></tbody></table>
<h2>Experiments</h2>
<ol id="verdicts"></ol>
<pre id="log" class="log"></pre>"""
    return page(f"job {j.id}", body, nonce, page="job", job=j.id, csrf=csrf)


def _num(v: Any, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def ratings(
    rows: list[dict[str, Any]], campaigns: list[dict[str, Any]], nonce: str, csrf: str
) -> str:
    if not rows:
        table = '<p class="muted">no rating recorded in this results store yet</p>'
    else:
        lines = []
        for r in reversed(rows):
            rid = escape(str(r["id"]))
            resumable = r["status"] != "done" and r["objective"] != "run"
            resume = (
                f'<button type="button" data-resume="{rid}">resume</button>' if resumable else ""
            )
            lines.append(
                f'<tr><td><a href="/ratings/{rid}/report">{rid}</a></td>'
                f"<td>{escape(str(r['objective']))}</td><td>{escape(str(r['store']))}</td>"
                f"<td>{escape(str(r['status']))}</td>"
                f'<td class="num">{_num(r["soar"])}</td>'
                f'<td class="num">{_num(r["socialites"], 0)}</td>'
                f'<td class="num">{r.get("runs", "")}</td><td>{resume}</td></tr>'
            )
        table = (
            '<table id="ratings"><thead><tr><th>rating</th><th>objective</th><th>store</th>'
            '<th>status</th><th class="num">SoAR</th><th class="num">Socialites</th>'
            f'<th class="num">experiments</th><th></th></tr></thead><tbody>{"".join(lines)}'
            "</tbody></table>"
        )
    body = (
        f'<h2>Ratings</h2><p id="ratings-error" class="error"></p>{table}'
        f"{campaigns_table(campaigns)}"
    )
    return page("ratings", body, nonce, page="ratings", csrf=csrf)


def campaigns_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    lines = []
    for r in reversed(rows):
        cid = escape(str(r["id"]))
        resumable = r["status"] not in ("done", "failed")
        button = f'<button type="button" data-resume-campaign="{cid}">resume</button>'
        lines.append(
            f"<tr><td>{cid}</td><td>{escape(str(r['name']))}</td>"
            f"<td>{escape(str(r['status']))}</td>"
            f'<td class="num">{r["done"]}/{r["jobs"]}</td><td>{button if resumable else ""}</td>'
            "</tr>"
        )
    return (
        '<h2>Campaigns</h2><table id="campaigns"><thead><tr><th>campaign</th><th>name</th>'
        '<th>status</th><th class="num">jobs done</th><th></th></tr></thead>'
        f"<tbody>{''.join(lines)}</tbody></table>"
    )
