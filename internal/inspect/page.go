package inspect

// pageHTML is the inspector's page: the newest sessions rendered by the
// server (a screenful, so that the first paint shows them at once
// whatever the number of sessions), the whole list rendered by the script
// right after and refreshed every second, and the messages of the
// selected session (#session=ID).
// Data reaches the DOM through textContent only.
const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>bidi inspector</title>
<style>
body{font:13px system-ui,sans-serif;margin:0;display:flex;height:100vh}
#left{flex:0 0 55%;overflow:auto;border-right:1px solid #ccc}
#right{flex:1;overflow:auto;padding:0 8px}
table{border-collapse:collapse;width:100%}
#sessions{table-layout:fixed}
td{overflow:hidden;text-overflow:ellipsis}
th,td{padding:2px 6px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{position:sticky;top:0;background:#f6f6f6}
tr.session{cursor:pointer;content-visibility:auto;contain-intrinsic-size:auto 20px}
tr.session:hover,tr.selected{background:#eef4ff}
.open{color:#07a}.err{color:#b00}.num{text-align:right}
td.preview{font-family:monospace;max-width:28em;overflow:hidden;text-overflow:ellipsis}
h1{font-size:15px;margin:8px}
</style></head>
<body data-sessions="{{.Total}}">
<div id="left"><h1>Sessions <span id="count">{{.Total}}</span></h1>
<table id="sessions"><colgroup><col style="width:3em"><col style="width:7.5em"><col style="width:9em"><col style="width:4.5em"><col style="width:3.5em"><col style="width:6em"><col style="width:4em"><col style="width:3em"><col style="width:3em"><col style="width:6.5em"><col style="width:5.5em"><col></colgroup><thead><tr><th>#</th><th>started</th><th>endpoint</th><th>state</th><th>status</th><th>variant</th><th>ms</th><th>sent</th><th>recv</th><th>end</th><th>close</th><th>errors</th></tr></thead>
<tbody>{{range .Rows}}<tr class="session" data-id="{{.ID}}"><td>{{.ID}}<td>{{.Started}}<td>{{.Endpoint}}<td class="{{.State}}">{{.State}}<td>{{if .Status}}{{.Status}}{{end}}<td>{{.Variant}}<td>{{printf "%.1f" .DurationMS}}<td>{{.Sent}}<td>{{.Received}}<td>{{.EndReason}}<td title="{{.CloseReason}}">{{if .CloseCode}}{{.CloseCode}}{{end}}{{if .CloseReason}} {{.CloseReason}}{{end}}<td class="err">{{range .Errors}}{{.}} {{end}}
{{end}}</tbody></table></div>
<div id="right"><h1 id="title">Select a session</h1><p><a id="download" hidden>download the cassette</a></p>
<table id="messages"><thead><tr><th class="num">ms</th><th>dir</th><th>kind</th><th>type</th><th class="num">size</th><th class="num">frag</th><th>state</th><th class="num">pad</th><th class="num">bucket</th><th>preview</th></tr></thead><tbody></tbody></table></div>
<script>
"use strict";
let selected = 0;
const maxRows = 10000; // messages shown per session
function cell(tr, text, cls) { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td); return td; }
// closeText is a session's WebSocket close: its code and reason, where known.
function closeText(s) { return [s.close_code || "", s.close_reason || ""].filter((x) => x !== "").join(" "); }
function renderSessions(list) {
  const body = document.querySelector("#sessions tbody");
  const rows = [];
  for (const s of list) {
    const tr = document.createElement("tr");
    tr.className = "session" + (s.id === selected ? " selected" : "");
    tr.dataset.id = s.id;
    cell(tr, s.id); cell(tr, s.started); cell(tr, s.endpoint); cell(tr, s.state, s.state);
    cell(tr, s.status || ""); cell(tr, s.variant || ""); cell(tr, s.duration_ms.toFixed(1));
    cell(tr, s.sent); cell(tr, s.received); cell(tr, s.end_reason || "");
    cell(tr, closeText(s)).title = s.close_reason || ""; cell(tr, (s.errors || []).join(" "), "err");
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  document.getElementById("count").textContent = list.length;
  document.body.dataset.sessions = list.length;
}
async function loadSession(id) {
  selected = id;
  const out = [];
  let from = 0, info = null;
  for (;;) {
    const r = await fetch("api/sessions/" + id + "?from=" + from);
    if (!r.ok) return;
    const page = await r.json();
    info = page.session;
    for (const m of page.messages) {
      const tr = document.createElement("tr");
      tr.className = "message " + m.kind + (m.kind === "exception" || m.kind === "error" ? " err" : "");
      cell(tr, m.t_ms.toFixed(3), "num"); cell(tr, m.dir); cell(tr, m.kind); cell(tr, m.type || "");
      cell(tr, m.size, "num"); cell(tr, m.fragment, "num");
      cell(tr, m.kind === "send" || m.kind === "recv" ? (m.complete ? "COMPLETE" : "PARTIAL") : "");
      cell(tr, m.padding >= 0 ? m.padding : "", "num"); cell(tr, m.bucket || "", "num");
      cell(tr, m.redacted ? "(redacted)" : (m.preview || ""), "preview");
      out.push(tr);
    }
    if (page.messages.length === 0 || page.next >= info.messages || out.length >= maxRows) break;
    from = page.next;
  }
  document.getElementById("title").textContent = "Session " + id + " · " + info.endpoint + " · " + info.state +
    (info.end_reason ? " (" + [info.end_reason, closeText(info)].filter((x) => x !== "").join(" ") + ")" : "") +
    (info.messages > out.length ? " · first " + out.length + " of " + info.messages + " messages (download the cassette for all)" : "");
  document.querySelector("#messages tbody").replaceChildren(...out);
  const a = document.getElementById("download");
  a.href = "sessions/" + id + "/cassette"; a.hidden = false;
  a.textContent = info.cassette === "redacted" ? "download the cassette (redacted: sizes and timings, no payloads)" : "download the cassette";
  a.dataset.cassette = info.cassette;
  document.body.dataset.messages = out.length;
}
async function refresh() {
  try {
    const r = await fetch("api/sessions");
    if (r.ok) renderSessions(await r.json());
    if (selected) await loadSession(selected);
  } catch (e) {}
}
document.getElementById("sessions").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr.session");
  if (tr) { location.hash = "session=" + tr.dataset.id; }
});
function fromHash() { const m = /session=(\d+)/.exec(location.hash); if (m) loadSession(Number(m[1])); }
window.addEventListener("hashchange", fromHash);
// The session list is parsed (this script follows it); the first frame
// that shows it is the page's first paint.
document.body.dataset.parsedMs = performance.now().toFixed(1);
requestAnimationFrame(() => { document.body.dataset.firstPaintMs = performance.now().toFixed(1); });
window.addEventListener("load", () => {
  document.body.dataset.loadMs = performance.now().toFixed(1);
  refresh();
  const nav = performance.getEntriesByType("navigation")[0];
  if (nav) document.body.dataset.nav = [nav.requestStart, nav.responseStart, nav.responseEnd, nav.domInteractive].map((x) => x.toFixed(1)).join(" ");
  fromHash();
  setInterval(refresh, 1000);
});
</script></body></html>
`
