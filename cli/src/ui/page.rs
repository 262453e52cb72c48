//! `GET /`: a minimal page over the API: the counts by queue and state, the workers, and the
//! jobs, paged, with a revive button for dead ones (unless read-only). Text is set with `textContent` only.

/// The page; `read_only` leaves the revive buttons out.
pub(crate) fn index(read_only: bool) -> String {
    PAGE.replace("__READ_ONLY__", if read_only { "true" } else { "false" })
}

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>leasefence</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}#error{color:#b00}</style></head>
<body><h1>leasefence</h1><p id="error" role="alert"></p>
<h2>Jobs by queue and state</h2><p id="asof"></p><table id="stats"></table>
<h2>Last minutes</h2><svg id="chart" width="640" height="140" role="img"
aria-label="queued, leased and dead jobs over the last minutes"></svg><p id="legend"></p>
<h2>Workers</h2><table id="workers"><thead><tr><th>owner</th><th>host</th><th>pid</th>
<th>status</th><th>last seen</th><th>holds</th><th>claimed</th><th>completed</th><th>failed</th>
<th>leases lost</th><th>stale writes refused</th></tr></thead><tbody></tbody></table>
<h2>Jobs</h2><label>State <select id="state"><option value="">any</option>
<option>queued</option><option>scheduled</option><option>leased</option><option>done</option>
<option>dead</option></select></label> <button id="more" hidden>More</button>
<table id="jobs"><thead><tr><th>id</th><th>state</th><th>queue</th><th>fence</th>
<th>failures</th><th>owner</th><th>time left</th><th></th></tr></thead><tbody></tbody></table>
<section id="job" hidden><h2>Job <span id="job-id"></span></h2><dl id="job-fields"></dl>
<h3>Attempts that failed</h3><table id="job-failures"><thead><tr><th>fence</th><th>at</th>
<th>error</th></tr></thead><tbody></tbody></table></section>
<script>
const READ_ONLY = __READ_ONLY__;
const el = (tag, text) => { const e = document.createElement(tag); e.textContent = text ?? ""; return e; };
const show = (msg) => { document.getElementById("error").textContent = msg; };
async function api(path, init) {
  const r = await fetch(path, init);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error ? body.error.message : r.statusText);
  return body;
}
const SERIES = [["queued", "#1565c0"], ["leased", "#2e7d32"], ["dead", "#b00020"]];
async function chart() {
  const { samples } = await api("/api/history");
  const svg = document.getElementById("chart"); svg.replaceChildren();
  const legend = document.getElementById("legend"); legend.replaceChildren();
  if (samples.length < 2) return;
  const [w, h] = [640, 140];
  const t0 = samples[0].at, t1 = samples[samples.length - 1].at;
  const top = Math.max(1, ...samples.flatMap((s) => SERIES.map(([k]) => s[k])));
  for (const [key, color] of SERIES) {
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("fill", "none"); line.setAttribute("stroke", color); line.setAttribute("stroke-width", "2");
    line.setAttribute("points", samples.map((s) =>
      `${((s.at - t0) / Math.max(1e-9, t1 - t0) * (w - 4) + 2).toFixed(1)},${(h - 2 - s[key] / top * (h - 4)).toFixed(1)}`).join(" "));
    svg.append(line);
    const item = el("span", `${key} ${samples[samples.length - 1][key]}  `); item.style.color = color;
    legend.append(item);
  }
  legend.append(el("span", `(${Math.round(t1 - t0)} s; highest ${top})`));
}
async function stats() {
  const s = await api("/api/stats");
  document.getElementById("asof").textContent = "as of " + new Date(s.now * 1000).toLocaleTimeString();
  const t = document.getElementById("stats"); t.replaceChildren();
  const states = ["queued", "scheduled", "leased", "done", "dead"];
  const head = el("tr"); head.append(el("th", "queue"), ...states.map((x) => el("th", x)));
  t.append(head);
  for (const [q, c] of [...Object.entries(s.queues), ["all", s.all]]) {
    const row = el("tr"); row.append(el("td", q), ...states.map((x) => el("td", String(c[x]))));
    t.append(row);
  }
}
// The worker registry (GET /api/workers): alive or gone, what each holds (job, fence, time left).
async function workers() {
  const r = await api("/api/workers");
  const body = document.querySelector("#workers tbody"); body.replaceChildren();
  for (const w of r.workers) {
    const row = el("tr"); row.dataset.owner = w.owner;
    const status = w.alive ? "alive" : w.stopped !== null ? "stopped" : "gone";
    const holds = w.holding.map((l) => `${l.job} (fence ${l.fence}, ${(l.until - r.now).toFixed(1)} s)`).join(", ");
    const c = w.counters;
    row.append(el("td", w.owner), el("td", w.host), el("td", String(w.pid)), el("td", status),
      el("td", `${(r.now - w.last_seen).toFixed(1)} s ago`), el("td", holds),
      ...[c.claimed, c.completed, c.failed, c.leases_lost, c.stale_writes_refused].map((n) => el("td", String(n))));
    body.append(row);
  }
}
let next = null;
async function jobs(more) {
  const params = new URLSearchParams({ limit: "50" });
  const state = document.getElementById("state").value;
  if (state) params.set("state", state);
  if (more && next) params.set("after", next);
  const page = await api("/api/jobs?" + params);
  const body = document.querySelector("#jobs tbody");
  if (!more) body.replaceChildren();
  for (const j of page.jobs) {
    const row = el("tr");
    // A lease's or a delay's time left, from the server's clock (the answer's `now`).
    const left = j.state === "leased" || j.state === "scheduled" ? `${(j.until - page.now).toFixed(1)} s` : "";
    const id = el("td");
    const open = el("a", j.id); open.href = "#"; open.onclick = (e) => { e.preventDefault(); report(j.id).catch((x) => show(x.message)); };
    id.append(open);
    row.append(id, el("td", j.state), el("td", j.queue), el("td", String(j.fence)),
               el("td", String(j.failures)), el("td", j.owner ?? ""), el("td", left));
    const cell = el("td");
    if (j.state === "dead" && !READ_ONLY) {
      const b = el("button", "revive");
      b.onclick = () => api("/api/revive", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ job: j.id }) }).then(refresh, (e) => show(e.message));
      cell.append(b);
    }
    row.append(cell); body.append(row);
  }
  next = page.next;
  document.getElementById("more").hidden = !next;
  // Which filter the rows drawn belong to (a reader, or a test, can tell a stale table apart).
  document.getElementById("jobs").dataset.shown = state || "any";
}
// A job's page: its row, payload, result, current lease and every failed attempt (GET /api/job/ID).
async function report(id) {
  const r = await api("/api/job/" + encodeURIComponent(id));
  const s = r.job.state;
  const lease = s.owner && s.until > r.now && !s.done ? `${s.owner}, fence ${s.fence}, ${(s.until - r.now).toFixed(1)} s left` : "none";
  const fields = [["state", r.state], ["queue", r.job.queue], ["priority", String(r.job.priority)],
    ["attempts (fence)", String(r.job.attempts)], ["lease", lease], ["payload", r.job.payload ?? "(none)"],
    ["result", s.result ?? "(none)"]];
  const dl = document.getElementById("job-fields"); dl.replaceChildren();
  for (const [k, v] of fields) dl.append(el("dt", k), el("dd", v));
  const body = document.querySelector("#job-failures tbody"); body.replaceChildren();
  for (const f of r.job.failures) {
    const row = el("tr");
    row.append(el("td", String(f.fence)), el("td", new Date(f.at * 1000).toLocaleTimeString()), el("td", f.error ?? ""));
    body.append(row);
  }
  document.getElementById("job-id").textContent = id;
  const section = document.getElementById("job"); section.hidden = false; section.dataset.job = id;
}
function refresh() { show(""); stats().then(() => jobs(false)).then(chart).then(workers).catch((e) => show(e.message)); }
// Live: the counts, the chart and the workers every 2 s (the list stays where it was paged to).
setInterval(() => stats().then(chart).then(workers).catch((e) => show(e.message)), 2000);
document.getElementById("state").onchange = refresh;
document.getElementById("more").onclick = () => jobs(true).catch((e) => show(e.message));
refresh();
</script></body></html>
"##;
