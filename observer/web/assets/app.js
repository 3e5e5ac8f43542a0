// The gpusched dashboard: state arrives as server-sent events from
// /api/stream; the controls post to /api/* (which turn into NATS requests).
"use strict";
const $ = (s) => document.querySelector(s);
// GB is the one unit of memory on screen: 2^30 bytes, as GPU makers count
// it (an A100 40GB shows 40, a job asking 38GB shows 38).
const GB = 2 ** 30;
let showFrag = false;
// help is every element's plain-English explanation (observer.HelpTexts),
// put in the hover (title) of each element that names one in data-help.
let help = {};
function applyHelp(root) {
  for (const el of (root || document).querySelectorAll("[data-help]")) {
    const t = help[el.dataset.help];
    if (t) el.title = t;
  }
}
function showTradeoff(policy) {
  $("#strategy-note").textContent = help["policy:" + policy] || "";
}
function showQueueNote(queue) {
  $("#queue-note").textContent = help["queue:" + queue] || "";
}
let lastState = null;
const colours = ["#58a6ff", "#f0883e", "#bc8cff", "#3fb950", "#d29922", "#ff7b72", "#39c5cf", "#a371f7"];

function colourOf(id) {
  let h = 2166136261;
  for (const c of id) { h ^= c.charCodeAt(0); h = Math.imul(h, 16777619) >>> 0; }
  return colours[h % colours.length];
}
function esc(s) { return String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
function gbNumber(b) { return b >= 10 * GB ? (b / GB).toFixed(0) : String(Math.round(10 * b / GB) / 10); }
function gb(b) { return gbNumber(b) + " GB"; }
// A training job's replicas each take a whole GPU, whatever its VRAM.
function jobVRAM(j) { return j.training ? j.training.replicas + "×GPU" : gb(j.vram); }
function utilClass(u) { return u >= 85 ? "hot" : u >= 50 ? "warn" : ""; }
function ago(from, to) {
  const s = Math.max(0, (new Date(to) - new Date(from)) / 1000);
  return s >= 3600 ? (s / 3600).toFixed(1) + " h" : s >= 60 ? Math.round(s / 60) + " min" : Math.round(s) + " s";
}

function renderHeadline(snap) {
  const m = snap.summary;
  // [label, value, the explanation it hovers with]
  $("#headline").innerHTML = [
    ["policy", `<span id="policy">${esc(snap.policy)}</span>`, "strategy"],
    ["simulated", new Date(snap.simtime).toISOString().replace("T", " ").slice(0, 19), "simulated"],
    ["utilisation", m.util_mean.toFixed(0) + " %", "utilisation"],
    ["allocated", (100 * m.allocation).toFixed(0) + " %", "allocation"],
    ["fragmentation", m.frag_gpus.toFixed(2) + " GPUs · VRAM " + (100 * m.vram_fragmentation).toFixed(0) + " %", "frag_gpus"],
    ["queue", m.jobs_queued, "queue"], ["running", m.jobs_running, "running"], ["completed", m.jobs_completed, "completed"],
    ["preemptions", m.preemptions, "preemption"], ["power", m.power_w.toFixed(0) + " W", "power"], ["energy", m.energy_kwh.toFixed(2) + " kWh", "energy"],
  ].map(([k, v, h]) => `<span data-help="${h}">${k} <b>${v}</b></span>`).join("");
  // A restarted scheduler re-learning the cluster: the figures are the
  // last known ones (never its partial zeros), greyed, and say so.
  $("#headline").classList.toggle("stale", !!m.settling);
  if (m.settling) {
    $("#headline").insertAdjacentHTML("afterbegin", `<span class="settling" data-help="settling">re-learning the cluster (${m.gpus_unknown || 0} GPU${m.gpus_unknown === 1 ? "" : "s"} not read yet): last known figures</span>`);
  }
  applyHelp($("#headline"));
}

// perfLine is a GPU's own pace per application class (its variability:
// the multiplier on a job's iteration time against the median GPU's) and
// its performance level for each (L0 the fastest), when the cluster has a
// variability profile; each class says what it means on hover.
function perfLine(g, counts) {
  const v = g.variability || {};
  const classes = Object.keys(v).sort();
  if (!classes.length) return "";
  const lv = g.perf_levels || {};
  const parts = classes.map((c) => {
    const short = c.replace(/^class/, "");
    const level = lv[c] ?? "?";
    const of = counts && counts[c] ? ` of ${counts[c]}` : "";
    const pct = Math.round(100 * (v[c] - 1));
    const pace = pct === 0 ? "as fast as the median GPU" : pct > 0 ? `${pct} % slower than the median GPU` : `${-pct} % faster than the median GPU`;
    const fastest = level === 0 ? ", the fastest" : "";
    return `<span class="level level-${esc(level)}" title="${esc(c)}: iterations take ${v[c].toFixed(3)}× the median GPU's time (${pace}); performance level ${esc(level)}${of}${fastest}">${esc(short)} L${esc(level)}</span>`;
  });
  return `<div class="perf" data-help="perf-level">${parts.join(" ")}</div>`;
}

function renderGPUs(snap) {
  const names = {};
  for (const j of snap.running) names[j.job_id] = j.name;
  $("#gpu-count").textContent = `${snap.gpus.length} · ${snap.summary.gpus_busy} busy`;
  // Past a few dozen GPUs the cards condense to fit a screen.
  $("#gpus").classList.toggle("many", snap.gpus.length > 32);
  $("#gpus").innerHTML = snap.gpus.map((g) => {
    const used = g.vram_used, total = g.vram_total || 1;
    const jobs = (g.allocs || []).map((a) => names[a.job_id] || a.job_id.slice(0, 8));
    let vram;
    if (showFrag) {
      vram = `<div class="layout" data-help="fragmentation">` +
        (g.allocs || []).map((a) => `<span style="left:${100 * a.offset / total}%;width:${Math.max(0.8, 100 * a.size / total)}%;background:${colourOf(a.job_id)}" title="${esc(names[a.job_id] || a.job_id)}: ${gb(a.size)}"></span>`).join("") +
        `</div><div class="dim">largest free block ${gb(g.vram_largest_free)} · fragmented ${(100 * g.vram_fragmentation).toFixed(0)} %</div>`;
    } else {
      vram = `<div class="bar vram"><i style="width:${100 * used / total}%"></i></div>`;
    }
    if (g.unknown && !g.stale) {
      return `<div class="gpu-card unknown" data-gpu="${esc(g.gpu)}" data-node="${esc(g.node)}" data-help="gpu-unknown">
      <div class="title"><span>${esc(g.gpu)} <span class="model">on ${esc(g.node)}</span></span></div>
      <div>state unknown yet</div><div class="dim">the scheduler has not read this GPU since it started</div>
    </div>`;
    }
    return `<div class="gpu-card${g.alive ? "" : " dead"}${g.stale ? " stale" : ""}" data-gpu="${esc(g.gpu)}" data-node="${esc(g.node)}" data-help="${g.stale ? "gpu-stale" : "gpu-card"}">
      <div class="title"><span>${esc(g.gpu)} <span class="model">${g.stale ? "last known" : esc(g.model)}</span></span>
        <button class="kill" data-gpu="${esc(g.gpu)}" data-help="kill">kill</button></div>
      <div data-help="utilisation">util ${g.util > 100 ? "100 % (saturated: " + g.util.toFixed(0) + " % asked)" : g.util.toFixed(0) + " %"}${g.alive ? "" : " · <b>DOWN</b>"}</div>
      <div class="bar util"><i class="${utilClass(g.util)}" style="width:${Math.min(100, g.util)}%"></i></div>
      <div data-help="vram">VRAM ${gbNumber(used)}/${gb(total)}</div>${vram}${perfLine(g, snap.perf_level_counts)}
      <div class="jobs" title="${esc(jobs.join(", "))}">${jobs.length ? esc(jobs.join(", ")) : "idle"}</div>
    </div>`;
  }).join("");
  applyHelp($("#gpus"));
}

function renderTables(snap) {
  $("#running-count").textContent = `(${snap.summary.jobs_running})`;
  $("#queue-count").textContent = `(${snap.summary.jobs_queued})`;
  $("#running tbody").innerHTML = snap.running.map((j) => {
    // A training job's progress is in its application's steps: its epoch.
    const done = j.training_state ? "epoch " + j.training_state.epoch : j.work_s > 0 ? (100 * j.progress_s / j.work_s).toFixed(0) + " %" : "";
    return `<tr data-job="${esc(j.job_id)}" data-name="${esc(j.name)}"><td>${esc(j.name)}</td><td class="prio-${j.priority}" data-help="priority">${j.priority}</td>
      <td>${jobVRAM(j)}</td><td>${j.util.toFixed(0)}</td><td>${esc(j.training ? j.training.app : j.duration)}</td><td>${done}</td><td class="gpu">${esc((j.gpu_ids || []).join(", "))}</td></tr>`;
  }).join("");
  $("#queue tbody").innerHTML = snap.queue.map((j) =>
    `<tr data-job="${esc(j.job_id)}" data-name="${esc(j.name)}"><td>${esc(j.name)}</td><td class="prio-${j.priority}" data-help="priority">${j.priority}</td>
      <td>${jobVRAM(j)}</td><td>${ago(j.submitted_at, snap.simtime)}</td><td class="reason">${esc(j.reason)}</td></tr>`).join("") ||
    `<tr class="empty"><td colspan="5" class="dim">0 waiting — add jobs with the form above</td></tr>`;
  applyHelp($(".tables"));
}

function renderEvents(st) {
  $("#events").innerHTML = (st.log || []).slice().reverse().map((l) => `<li class="${esc(l.kind)}" data-help="event-line">${esc(l.text)}</li>`).join("");
  applyHelp($("#events"));
}

function render(st) {
  lastState = st;
  const status = $("#status");
  if (!st.snapshot) {
    status.textContent = st.error || "waiting for the cluster…";
    status.className = "status down";
    return;
  }
  status.textContent = (st.connected ? "● live" : "○ reconnecting") + (st.missed ? ` · ${st.missed} events missed` : "");
  status.className = "status " + (st.connected ? "live" : "down");
  const snap = st.snapshot;
  const sel = $("#strategy");
  if (document.activeElement !== sel && sel.value !== snap.policy && [...sel.options].some((o) => o.value === snap.policy)) sel.value = snap.policy;
  showTradeoff(snap.policy);
  const qs = $("#queue-order"), q = snap.summary.queue;
  if (q && document.activeElement !== qs && qs.value !== q && [...qs.options].some((o) => o.value === q)) { qs.value = q; showQueueNote(q); }
  renderHeadline(snap);
  renderGPUs(snap);
  renderTables(snap);
  renderEvents(st);
}

async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const out = await r.json();
  if (!r.ok) throw new Error(out.error || r.statusText);
  return out;
}

async function loadStrategies() {
  try {
    const r = await (await fetch("api/strategy")).json();
    const sel = $("#strategy");
    sel.innerHTML = (r.available || []).map((p) => `<option value="${esc(p)}" title="${esc(help["policy:" + p] || "")}">${esc(p)}</option>`).join("");
    sel.value = r.policy;
    showTradeoff(r.policy);
    const qs = $("#queue-order");
    qs.innerHTML = (r.queues || []).map((q) => `<option value="${esc(q)}" title="${esc(help["queue:" + q] || "")}">${esc(q)}</option>`).join("");
    qs.value = r.queue;
    showQueueNote(r.queue);
  } catch (e) { setTimeout(loadStrategies, 1000); }
}
$("#queue-order").addEventListener("change", async (e) => {
  try {
    showQueueNote(e.target.value);
    const r = await post("api/strategy", { queue: e.target.value });
    $("#form-result").textContent = `queue order ${r.previous_queue || r.queue} → ${r.queue}`;
    $("#form-result").className = "result";
  } catch (err) { $("#form-result").textContent = err.message; $("#form-result").className = "result error"; }
});

$("#strategy").addEventListener("change", async (e) => {
  try {
    showTradeoff(e.target.value);
    const r = await post("api/strategy", { policy: e.target.value });
    $("#form-result").textContent = `strategy ${r.previous} → ${r.policy}`;
    $("#form-result").className = "result";
  } catch (err) { $("#form-result").textContent = err.message; $("#form-result").className = "result error"; }
});
$("#frag-toggle").addEventListener("change", (e) => { showFrag = e.target.checked; if (lastState) render(lastState); });
$("#add-job").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const spec = { name: f.get("name"), priority: f.get("priority"), vram: f.get("vram"), util: Number(f.get("util")), duration: f.get("duration"), gpus: Number(f.get("gpus")) };
  const res = $("#form-result");
  try {
    const r = await post("api/jobs", spec);
    res.textContent = `${spec.name}: ${r.job_id} ${r.state}${r.gpu_ids ? " on " + r.gpu_ids.join(", ") : ""}`;
    res.className = "result";
  } catch (err) { res.textContent = err.message; res.className = "result error"; }
});
$("#gpus").addEventListener("click", async (e) => {
  const b = e.target.closest("button.kill");
  if (!b) return;
  try {
    const r = await post("api/kill", { gpu: b.dataset.gpu });
    $("#form-result").textContent = `${r.gpu} killed: ${r.lost_jobs.length} job(s) lost and re-queued`;
    $("#form-result").className = "result";
  } catch (err) { $("#form-result").textContent = err.message; $("#form-result").className = "result error"; }
});
document.querySelector(".tables").addEventListener("click", async (e) => {
  const tr = e.target.closest("tr[data-job]");
  if (!tr) return;
  const r = await fetch("api/explain?job=" + encodeURIComponent(tr.dataset.job) + "&name=" + encodeURIComponent(tr.dataset.name));
  const d = await r.json();
  if (!r.ok) { $("#explain").textContent = d.error; return; }
  // The same sentences as cluster explain (observer.ExplainText).
  $("#explain").textContent = d.text;
});

function connect() {
  const es = new EventSource("api/stream");
  es.addEventListener("state", (e) => render(JSON.parse(e.data)));
  es.onerror = () => { $("#status").textContent = "○ observer unreachable, retrying…"; $("#status").className = "status down"; };
}
async function loadHelp() {
  try {
    help = await (await fetch("api/help")).json();
    applyHelp();
  } catch (e) { setTimeout(loadHelp, 1000); }
}
loadHelp().then(loadStrategies);
connect();
