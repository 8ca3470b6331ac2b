// bgbench deck: the page's own script (inlined by the server; no network but the deck).
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");

function withToken(url) {
  if (!TOKEN) return url;
  const u = new URL(url, location.origin);
  u.searchParams.set("token", TOKEN);
  return u.pathname + u.search;
}

// The deck refuses a change without the anti-forgery token its page carries (data-csrf).
async function api(path, body) {
  const headers = { "Content-Type": "application/json", "X-BGBench-CSRF": document.body.dataset.csrf };
  if (TOKEN) headers.Authorization = "Bearer " + TOKEN;
  const init = body === undefined ? { headers } : { method: "POST", headers, body: JSON.stringify(body) };
  const reply = await fetch(path, init);
  const data = await reply.json();
  if (!reply.ok) throw new Error(data.error || reply.statusText);
  return data;
}

function $(id) { return document.getElementById(id); }

function keepToken() {
  for (const a of document.querySelectorAll("a[href^='/']")) a.setAttribute("href", withToken(a.getAttribute("href")));
}

function fmt(v, digits) {
  if (v === null || v === undefined) return "-";
  return Number(v).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

// ---- the settings editor -------------------------------------------------
function editorPage() {
  const text = $("settings-text"), name = $("settings-name"), shown = $("validation");
  const kind = $("kind");
  let timer = null, asked = 0;
  async function validate() {
    const n = ++asked;
    try {
      const r = await api("/api/validate", { name: name.value, text: text.value, kind: kind.value });
      if (n !== asked) return;
      shown.textContent = r.valid ? "valid" : r.message;
      shown.className = r.valid ? "valid" : "invalid";
    } catch (e) {
      shown.textContent = e.message;
      shown.className = "invalid";
    }
  }
  function soon() { clearTimeout(timer); timer = setTimeout(validate, 250); }
  text.addEventListener("input", soon);
  name.addEventListener("input", soon);
  kind.addEventListener("change", validate);
  $("settings-choose").addEventListener("change", async (e) => {
    if (!e.target.value) return;
    const r = await api("/api/settings/" + encodeURIComponent(e.target.value));
    name.value = r.name;
    text.value = r.text;
    validate();
  });
  async function save() {
    await api("/api/settings", { name: name.value, text: text.value });
  }
  async function start() {
    const problem = $("start-error");
    problem.textContent = "";
    try {
      await save();
      const port = $("metrics-port").value;
      const body = { kind: kind.value, name: name.value, metrics_port: port ? Number(port) : null };
      const job = await api("/api/jobs", body);
      location.href = withToken("/jobs/" + job.id);
    } catch (e) {
      problem.textContent = e.message;
    }
  }
  $("save").addEventListener("click", async () => {
    try { await save(); $("start-error").textContent = "saved " + name.value; }
    catch (e) { $("start-error").textContent = e.message; }
  });
  $("start").addEventListener("click", start);
  if (text.value) validate();
}

// ---- a job, live -----------------------------------------------------------
class Chart {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = [];  // [seconds since start, actions/s, p95 ms]
    this.draw();
  }
  add(t, throughput, p95) { this.points.push([t, throughput, p95]); this.draw(); }
  draw() {
    const c = this.canvas, g = c.getContext("2d"), w = c.width, h = c.height, pad = 44;
    g.clearRect(0, 0, w, h);
    g.strokeStyle = "#d5dae3";
    g.strokeRect(pad, 10, w - 2 * pad, h - 40);
    g.fillStyle = "#5b6474";
    g.font = "11px sans-serif";
    if (!this.points.length) { g.fillText("waiting for progress", pad + 8, 30); return; }
    const tmax = Math.max(1, ...this.points.map((p) => p[0]));
    const ymax = Math.max(1, ...this.points.map((p) => p[1]));
    const zmax = Math.max(0.001, ...this.points.map((p) => p[2]));
    const x = (t) => pad + (t / tmax) * (w - 2 * pad);
    const series = (k, max, colour) => {
      g.strokeStyle = colour;
      g.beginPath();
      this.points.forEach((p, i) => {
        const y = 10 + (h - 40) * (1 - p[k] / max);
        if (i) g.lineTo(x(p[0]), y); else g.moveTo(x(p[0]), y);
      });
      g.stroke();
    };
    series(1, ymax, "#2356b8");
    series(2, zmax, "#c05a00");
    g.fillStyle = "#2356b8";
    g.fillText(fmt(ymax, 0), 2, 20);
    g.fillText("0", 2, h - 30);
    g.fillStyle = "#c05a00";
    g.fillText(fmt(zmax, 2) + " ms", w - pad + 2, 20);
    g.fillStyle = "#5b6474";
    g.fillText(fmt(tmax, 0) + " s", w - pad - 20, h - 16);
  }
}

// An agent's host as it last sampled it: busy cores of its cores, and the store's share.
function hostCpu(h) {
  if (!h) return "-";
  const store = h.store_cpu_cores === null ? "" : `, store ${fmt(h.store_cpu_cores, 2)}`;
  return `${fmt(h.cpu_cores, 2)} of ${h.cores}${store}`;
}

function agentsTable(agents) {
  const body = $("agents-body");
  body.replaceChildren();
  for (const a of agents) {
    const tr = document.createElement("tr");
    for (const [v, cls] of [[a.address, ""], [a.state, a.state], [fmt(a.actions_per_s, 0), "num"],
      [fmt(a.actions, 0), "num"], [fmt(a.errors, 0), "num"], [fmt(a.cpu_percent, 0), "num"],
      [a.host ? a.host.host : "-", ""], [hostCpu(a.host), "num"]]) {
      const td = document.createElement("td");
      td.textContent = v;
      if (cls) td.className = cls;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function jobPage() {
  const jobId = document.body.dataset.job;
  const chart = new Chart($("chart"));
  let t0 = null;
  const on = {
    campaign_start(e) {
      $("campaign").hidden = false;
      $("campaign-id").textContent = e.campaign_id;
    },
    campaign_end(e) {
      $("campaign-status").textContent = e.status + (e.message ? `: ${e.message}` : "");
      $("campaign-status").dataset.status = e.status;
    },
    rating_start(e) {
      $("rating-id").textContent = e.rating_id;
      $("rating-id").dataset.id = e.rating_id;
      if (t0 === null) t0 = e.time;
    },
    experiment_start(e) {
      $("now").textContent = `${e.phase} T=${e.threads} for ${e.duration_s} s`;
    },
    progress(e) {
      if (t0 === null) t0 = e.time;
      // An experiment's first tick has no interval yet: plotted, it would read as a stall.
      if (e.actions_per_s > 0 && e.latency_count > 0) chart.add(e.time - t0, e.actions_per_s, e.p95_ms);
      $("throughput").textContent = fmt(e.actions_per_s, 0);
      $("p95").textContent = e.latency_count ? fmt(e.p95_ms, 2) : "-";
      agentsTable(e.agents);
    },
    verdict(e) {
      const li = document.createElement("li");
      li.className = e.verdict;
      const why = e.reasons.length ? ` (${e.reasons.join("; ")})` : "";
      li.textContent = `${e.phase} T=${e.threads}: ${fmt(e.actions_per_s, 1)} actions/s, ` +
        `${fmt(e.within_percent, 2)}% within β, ${e.unpredictable_reads} unpredictable reads: ${e.verdict}${why}` +
        (e.bottleneck ? (e.client_bound ? `; CLIENT-BOUND: ${e.bottleneck}` : `; bottleneck: ${e.bottleneck}`) : "");
      $("verdicts").appendChild(li);
    },
    rating_end(e) {
      const result = $("result");
      if (e.status === "done" && e.soar !== null) {
        result.textContent = `SoAR ${fmt(e.soar, 1)} actions/s at T=${e.soar_threads}` +
          (e.socialites !== null ? `; Socialites ${e.socialites}` : "");
      } else if (e.status === "done") {
        result.textContent = `done` + (e.socialites !== null ? `: Socialites ${e.socialites}` : "");
      } else {
        result.textContent = `${e.status}: ${e.message}`;
      }
      result.dataset.status = e.status;
    },
  };
  const source = new EventSource(withToken(`/api/jobs/${jobId}/stream`));
  source.onmessage = (m) => {
    const e = JSON.parse(m.data);
    if (on[e.kind]) on[e.kind](e);
  };
  source.addEventListener("end", (m) => {
    source.close();
    const e = JSON.parse(m.data);
    $("job-status").textContent = `exited ${e.returncode}`;
    $("job-status").dataset.returncode = e.returncode;
    if (e.returncode !== 0) $("log").textContent = e.log_tail;
  });
  $("stop").addEventListener("click", async () => {
    try { await api(`/api/jobs/${jobId}/stop`, {}); $("job-status").textContent = "stopping"; }
    catch (e) { $("job-error").textContent = e.message; }
  });
  $("resume").addEventListener("click", async () => {
    try {
      const job = await api(`/api/jobs/${jobId}/resume`, {});
      location.href = withToken("/jobs/" + job.id);
    } catch (e) { $("job-error").textContent = e.message; }
  });
}

// ---- past ratings ------------------------------------------------------------
function ratingsPage() {
  for (const b of document.querySelectorAll("button[data-resume], button[data-resume-campaign]")) {
    b.addEventListener("click", async () => {
      const path = b.dataset.resume ? `/api/ratings/${b.dataset.resume}/resume`
        : `/api/campaigns/${b.dataset.resumeCampaign}/resume`;
      try {
        const job = await api(path, {});
        location.href = withToken("/jobs/" + job.id);
      } catch (e) { $("ratings-error").textContent = e.message; }
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  keepToken();
  const page = document.body.dataset.page;
  if (page === "editor") editorPage();
  else if (page === "job") jobPage();
  else if (page === "ratings") ratingsPage();
});
