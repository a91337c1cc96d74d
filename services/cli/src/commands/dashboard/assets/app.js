// vernier dashboard: the page script. Hand-written SVG charts (no library, no build step):
// the plots are scatter, line, bar and lane charts whose few hundred lines cost less than
// vendoring and learning a charting library, and SVG marks carry the trial they stand for,
// so hover and click work the same on every plot. The server bounds every payload
// (downsampled curves, compact trials), and plots with thousands of marks cap what they draw.
"use strict";

const STATE_COLORS = {
  Succeeded: "#2f6fde", EarlyStopped: "#7a5af8", Failed: "#d92d20",
  MetricsUnavailable: "#f79009", Killed: "#667085", Running: "#12b76a", Created: "#98a2b3",
};
const STATE_WORDS = {
  Succeeded: "succeeded", EarlyStopped: "early stopped", Failed: "failed",
  MetricsUnavailable: "metrics unavailable", Killed: "killed", Running: "running", Created: "pending",
};
const SVGNS = "http://www.w3.org/2000/svg";
const MAX_TRACES = 1000;   // parallel-coordinate lines drawn (best-ranked)
const PAGE_ROWS = 100;     // trial-table rows per page

// ---------- small helpers ----------
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined) el.append(kid);
  return el;
}
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, v);
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined) el.append(kid);
  return el;
}
// Four significant digits, exponent for very large or small magnitudes; "—" for none.
function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (typeof v !== "number") return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(3).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(4)));
}
// A label cut to n characters, with an ellipsis when cut (the full text goes in a <title>).
function cut(v, n) {
  const t = Array.from(String(v));   // by character, so an emoji is never split
  return t.length > n ? t.slice(0, n - 1).join("") + "…" : t.join("");
}
function ago(us) {
  if (!us) return "—";
  const s = Math.max(0, (Date.now() - us / 1000) / 1000);
  return dur(s) + " ago";
}
function dur(sec) {
  if (sec === null || sec === undefined) return "—";
  if (sec < 9.95) return sec.toFixed(1) + " s";
  // Rounded once to the unit shown last, so 179.6 s reads "3 min 0 s", not "2 min 60 s".
  const s = Math.round(sec);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  const m = Math.round(sec / 60);
  if (m < 2880) return Math.floor(m / 60) + " h " + (m % 60) + " min";
  const hrs = Math.floor(sec / 3600);
  return Math.floor(hrs / 24) + " days " + (hrs % 24) + " h";
}
function trialDuration(t) {
  if (!t.startedUs) return null;
  const end = t.completedUs || (t.state === "Running" ? Date.now() * 1000 : null);
  return end ? (end - t.startedUs) / 1e6 : null;
}
function stateBadge(state) {
  return h("span", { class: "state", style: `background:${STATE_COLORS[state] || "#999"}` }, STATE_WORDS[state] || state);
}
async function getJSON(url) {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}
const enc = encodeURIComponent;
const trialHref = (exp, t) => `/experiments/${enc(exp)}/trials/${enc(t)}`;
// The server's errors are lines ("...\nhint: ..."): a paragraph each.
function showError(e) {
  const lines = String(e.message || e).split("\n").map((l) => h("p", {}, l));
  document.getElementById("app").replaceChildren(h("div", { class: "panel failure", id: "error" }, h("h2", {}, "Cannot load"), lines));
}

// ---------- scales and axes ----------
function linScale(lo, hi, a, b, log) {
  if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = 0; hi = 1; }
  if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
  // Halved spans: values of opposite sign near ±Number.MAX_VALUE span more than a double holds.
  const half = hi / 2 - lo / 2;
  const f = (v) => a + ((log ? Math.log10(v) : v) / 2 - lo / 2) / half * (b - a);
  f.ticks = (n) => {
    if (log) {
      // Powers of ten; within about a decade also 2 and 5 times them, then every digit.
      for (const mantissas of [[1], [1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
        const out = [];
        for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) {
          for (const m of mantissas) {
            const v = m * 10 ** e, lv = Math.log10(v);
            if (lv >= lo - 1e-9 && lv <= hi + 1e-9) out.push(Number(v.toPrecision(12)));
          }
        }
        if (out.length >= 2) return out;
      }
      return [10 ** lo, 10 ** hi];
    }
    const step0 = half / n * 2, mag = 10 ** Math.floor(Math.log10(step0));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((st) => st >= step0) || step0;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  };
  return f;
}
function extent(vals, log) {
  const v = vals.filter((x) => typeof x === "number" && Number.isFinite(x) && (!log || x > 0));
  if (!v.length) return log ? [1, 10] : [0, 1];
  let lo = Math.min(...v), hi = Math.max(...v);
  if (!log) {
    const pad = (hi * 0.08 - lo * 0.08) || Math.abs(hi) * 0.08 || 0.5;
    lo = Math.max(lo - pad, -Number.MAX_VALUE); hi = Math.min(hi + pad, Number.MAX_VALUE);
  }
  return [lo, hi];
}
// A plot frame: title above the frame, axes with ticks, labels outside the data area.
function frame({ id, w = 560, ht = 300, title, xs, ys, xlabel, ylabel, xcats, yticks = true }) {
  const m = { l: 62, r: 16, t: 28, b: 40 };
  const svg = s("svg", { class: "plot", id, viewBox: `0 0 ${w} ${ht}`, role: "img", "aria-label": title });
  svg.append(s("text", { class: "title", x: m.l, y: 16 }, title));
  const X = xs(m.l, w - m.r), Y = ys(ht - m.b, m.t);
  const axis = s("g", { class: "axis" });
  for (const v of yticks ? Y.ticks(5) : []) {
    const y = Y(v);
    axis.append(s("line", { class: "gridline", x1: m.l, x2: w - m.r, y1: y, y2: y }), s("text", { x: m.l - 6, y: y + 4, "text-anchor": "end" }, fmt(v)));
  }
  if (xcats) xcats.forEach((c, i) => axis.append(s("text", { x: X(i), y: ht - m.b + 15, "text-anchor": "middle" }, cut(c, 14), s("title", {}, String(c)))));
  else for (const v of X.ticks(6)) axis.append(s("text", { x: X(v), y: ht - m.b + 15, "text-anchor": "middle" }, fmt(v)));
  axis.append(s("path", { d: `M${m.l},${m.t}V${ht - m.b}H${w - m.r}`, fill: "none" }));
  axis.append(s("text", { x: (m.l + w - m.r) / 2, y: ht - 6, "text-anchor": "middle" }, xlabel));
  axis.append(s("text", { x: 12, y: (m.t + ht - m.b) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(m.t + ht - m.b) / 2})` }, ylabel));
  svg.append(axis);
  return { svg, X, Y, m, w, ht };
}

// ---------- tooltips and clicks on marks ----------
let tipTrials = [], tipExp = "", tipParams = [], tipMetric = "";
function tipFor(i) {
  const t = tipTrials[i];
  if (!t) return "";
  const lines = [`<b>${esc(t.name)}</b> (#${i + 1}) · ${esc(STATE_WORDS[t.state] || t.state)} · rank ${t.rank}`,
    `${esc(tipMetric)} = ${fmt(t.objective)}`];
  tipParams.forEach((p, k) => lines.push(`${esc(p)} = ${esc(t.params[k] ?? "—")}`));
  const d = trialDuration(t);
  if (d !== null) lines.push(`duration ${dur(d)}`);
  return lines.join("<br>");
}
function esc(x) { return String(x).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
document.addEventListener("mousemove", (ev) => {
  const tip = document.getElementById("tip");
  const mark = ev.target.closest && ev.target.closest("[data-t]");
  if (!mark) { tip.hidden = true; return; }
  tip.innerHTML = tipFor(Number(mark.dataset.t));
  tip.hidden = false;
  tip.style.left = Math.min(ev.clientX + 14, innerWidth - 370) + "px";
  tip.style.top = ev.clientY + 14 + "px";
});
document.addEventListener("click", (ev) => {
  const mark = ev.target.closest && ev.target.closest("[data-t]");
  if (mark && tipTrials[mark.dataset.t]) location.href = trialHref(tipExp, tipTrials[mark.dataset.t].name);
});

// ---------- experiments list ----------
async function listPage() {
  document.title = "Experiments · vernier";
  const app = document.getElementById("app");
  const data = await getJSON("/api/experiments");
  const phases = [...new Set(data.map((e) => e.phase).filter(Boolean))].sort();
  const q = h("input", { type: "search", placeholder: "filter by name", id: "filter-name" });
  const st = h("select", { id: "filter-status" }, h("option", { value: "" }, "every status"), phases.map((p) => h("option", { value: p }, p)));
  const body = h("tbody");
  const draw = () => {
    const rows = data.filter((e) => e.name.includes(q.value) && (!st.value || e.phase === st.value));
    body.replaceChildren(...rows.map(experimentRow));
  };
  q.addEventListener("input", draw);
  st.addEventListener("change", draw);
  draw();
  app.replaceChildren(
    h("h1", {}, "Experiments"),
    h("div", { class: "tools" }, q, st, h("span", { class: "note" }, `${data.length} experiment${data.length === 1 ? "" : "s"}`)),
    h("div", { class: "panel" }, h("table", { id: "experiments" },
      h("thead", {}, h("tr", {}, ["name", "status", "progress", "running", "best", "algorithm", "objective", "started"].map((c) => h("th", {}, c)))),
      body)),
  );
  markRendered();
}
function experimentRow(e) {
  if (e.error) return h("tr", { class: "experiment" }, h("td", {}, e.name), h("td", { colspan: 7 }, e.error));
  const max = e.maxTrials || e.trials;
  const pct = max ? Math.min(100, (100 * e.done) / max) : 0;
  return h("tr", { class: "experiment" },
    h("td", {}, h("a", { href: `/experiments/${enc(e.name)}` }, e.name)),
    h("td", {}, e.phase, e.reason ? h("span", { class: "note" }, ` (${e.reason})`) : null,
      e.unattended ? h("span", { class: "note", title: e.unattended }, " (no driver)") : null),
    h("td", {}, h("div", { class: "bar", title: `${e.done} of ${max} trials done` }, h("span", { style: `width:${pct}%` })), h("span", { class: "note" }, `${e.done}/${max}`)),
    h("td", { class: "num" }, String(e.counts.Running)),
    h("td", { class: "num" }, e.best ? (e.best.value !== null ? fmt(e.best.value) : e.best.text) : "—"),
    h("td", {}, e.algorithm || "—"),
    h("td", {}, `${e.objective.direction} ${e.objective.metric}`),
    h("td", { title: e.startedUs ? new Date(e.startedUs / 1000).toISOString() : "" }, ago(e.startedUs || e.createdUs)),
  );
}

// ---------- experiment page ----------
const view = { log: false, sort: "rank", desc: false, filter: "", state: "", page: 0 };
async function experimentPage(name) {
  let inflight = false, again = false, updates = 0, first = null, summary = null, ended = false;
  let es = null, retrying = false;
  const live = document.getElementById("live");
  // Said after each refresh: a driver may die (or a resume start) while the page is open.
  const liveWord = () => { live.textContent = summary && summary.unattended ? "no driver" : "● live"; };
  const refresh = async () => {
    if (inflight) { again = true; return; }
    inflight = true;
    let ok = false;
    try {
      const d = await getJSON(`/api/experiments/${enc(name)}`);
      if (first === null) { first = d.trials.length; document.body.dataset.firstTrials = String(first); }
      summary = d.summary;
      renderExperiment(name, d);
      // "finished" only once the table shows the end, not while the last fetch is under way.
      if (ended && d.summary.final) live.textContent = "finished";
      markRendered();
      document.body.dataset.liveUpdates = String(updates);
      ok = true;
    } catch (e) { showError(e); }
    inflight = false;
    if (again) { again = false; refresh(); } else if (!ok) retryLater();
  };
  // A read that failed (the database moved away, for a moment or for good; the server reads
  // the file put at its path next) is tried again every 5 s, and the page listens again once
  // it succeeds.
  const retryLater = () => {
    if (retrying) return;
    retrying = true;
    setTimeout(async () => {
      retrying = false;
      await refresh();
      if (!es && summary && !summary.final) { liveWord(); listen(); }
    }, 5000);
  };
  const listen = () => {
    es = new EventSource(`/api/experiments/${enc(name)}/events`);
    es.addEventListener("update", async () => { updates++; await refresh(); liveWord(); });
    es.addEventListener("end", () => { updates++; ended = true; es.close(); refresh(); });
    es.addEventListener("gone", (ev) => { es.close(); es = null; live.textContent = ""; showError(ev.data); retryLater(); });
  };
  await refresh();
  if (!summary || summary.final) return;
  liveWord();
  listen();
}

function renderExperiment(name, d) {
  const S = d.summary, trials = d.trials, metric = S.objective.metric;
  tipTrials = trials; tipExp = name; tipParams = d.parameters.map((p) => p.name); tipMetric = metric;
  document.title = `${name} · ${trials.length} trials · vernier`;
  document.getElementById("crumbs").replaceChildren("/ ", h("a", { href: `/experiments/${enc(name)}` }, name));
  const bestT = d.best !== null ? trials[d.best] : null;
  const started = S.startedUs || S.createdUs;
  const end = S.completedUs || (S.final ? null : Date.now() * 1000);
  const cards = h("div", { class: "cards" },
    card("status", S.phase + (S.reason ? ` (${S.reason})` : "")),
    card("progress", `${S.done}/${S.maxTrials || S.trials} done, ${S.counts.Running} running`),
    card(`best ${metric}`, bestT ? h("a", { href: trialHref(name, bestT.name) }, fmt(bestT.objective)) : "—"),
    card("algorithm", S.algorithm || "—"),
    card("objective", `${S.objective.direction} ${metric}`),
    card("started", ago(started)),
    card("elapsed", end && started ? dur((end - started) / 1e6) : "—"),
  );
  const counts = h("p", { class: "note", id: "counts" }, `${S.trials} trials: ` +
    Object.entries(S.counts).map(([k, v]) => `${v} ${STATE_WORDS[k]}`).join(", "));
  const parts = [h("h1", {}, `Experiment ${name}`), cards, counts];
  if (S.phase === "Failed") {
    parts.push(h("div", { class: "panel failure", id: "failure" }, h("h2", {}, `Failed: ${S.reason || "no reason recorded"}`), h("p", {}, S.message || "no message recorded")));
  }
  if (S.unattended) parts.push(h("div", { class: "panel failure", id: "unattended" }, h("h2", {}, `${S.phase}, but no driver`), h("p", {}, S.unattended)));
  if (bestT) parts.push(bestPanel(name, d, bestT));
  const grid = h("div", { class: "grid" });
  grid.append(panel(historyPlot(d), historyTools(name, d)));
  if (d.objectives.length > 1) grid.append(panel(paretoPlot(d), null));
  grid.append(panel(importancePlot(d), h("p", { class: "note" }, "Share of the objective's variance each parameter explains on its own: the correlation ratio over equal-count bins (categories for categorical parameters), corrected for the number of bins (ε², about 0 for a parameter that does not matter), divided by the sum so the shares add up to 1. Blind to interactions; rough under 50 trials (a parameter without effect can take a third).")));
  if (d.curves.trials.length) grid.append(panel(curvesPlot(d), h("p", { class: "note" }, curvesNote(d))));
  else grid.append(panel(h("p", { class: "note", id: "no-curves" }, d.curves.recorded ? `No trial logged ${d.curves.metric} more than once yet, so there are no learning curves.` : curvesNote(d)), null));
  grid.append(panel(timelinePlot(d), h("p", { class: "note" }, "One lane per concurrent slot; bar length is the trial's wall time, colour its outcome.")));
  parts.push(grid);
  parts.push(panel(parallelPlot(d), h("p", { class: "note" }, parallelNote(d))));
  parts.push(h("div", { class: "grid" }, d.parameters.map((p, k) => panel(slicePlot(d, p, k), null))));
  parts.push(trialTable(name, d));
  parts.push(legend());
  document.getElementById("app").replaceChildren(...parts);
}
function card(k, v) { return h("div", { class: "card" }, h("div", { class: "k" }, k), h("div", { class: "v" }, v)); }
function panel(plot, extra) { return h("div", { class: "panel" }, plot, extra); }
function legend() {
  return h("div", { class: "legend" }, Object.entries(STATE_COLORS).map(([k, c]) => h("span", {}, h("i", { style: `background:${c}` }), STATE_WORDS[k])),
    h("span", {}, h("i", { style: "background:var(--best)" }), "best"));
}
function bestPanel(name, d, t) {
  return h("div", { class: "panel", id: "best" }, h("h2", {}, "Best trial ", h("a", { href: trialHref(name, t.name) }, t.name)),
    h("table", {}, h("tbody", {},
      d.parameters.map((p, k) => h("tr", {}, h("th", {}, p.name), h("td", {}, t.params[k] ?? "—"))),
      Object.entries(t.values).map(([m, v]) => h("tr", {}, h("th", {}, m), h("td", { class: "num" }, fmt(v)))))));
}
function historyTools(name, d) {
  const positive = d.trials.every((t) => t.objective === null || t.objective > 0);
  const box = h("input", { type: "checkbox", id: "log-scale", checked: view.log && positive, disabled: !positive });
  box.addEventListener("change", () => { view.log = box.checked; renderExperiment(name, d); });
  return h("label", { class: "note" }, box, positive ? " log scale" : " log scale (needs positive values)");
}
function historyPlot(d) {
  const log = view.log && d.trials.every((t) => t.objective === null || t.objective > 0);
  const pts = d.trials.map((t, i) => [i, t]).filter(([, t]) => typeof t.objective === "number");
  const ys = extent(pts.map(([, t]) => t.objective), log);
  // x is the trial number (#1 first, as in `vernier report`), padded so no mark sits on the frame.
  const f = frame({ id: "plot-history", title: "Optimisation history", xlabel: "trial # (creation order)", ylabel: d.summary.objective.metric,
    xs: (a, b) => linScale(0.5, d.trials.length + 0.5, a, b), ys: (a, b) => linScale(ys[0], ys[1], a, b, log) });
  const g = s("g");
  for (const [i, t] of pts) {
    g.append(s("circle", { class: "point", "data-t": i, cx: f.X(i + 1), cy: f.Y(t.objective), r: i === d.best ? 5 : 3,
      fill: i === d.best ? "var(--best)" : STATE_COLORS[t.state], "fill-opacity": t.usable ? 0.85 : 0.35 }));
  }
  let path = "";
  d.bestSoFar.forEach((v, i) => { if (v !== null) path += `${path ? "L" : "M"}${f.X(i + 1)},${f.Y(v)}` + (i + 1 < d.bestSoFar.length ? `H${f.X(i + 2)}` : ""); });
  if (path) f.svg.append(s("path", { class: "best-so-far", d: path }));
  f.svg.append(g);
  return f.svg;
}
function importancePlot(d) {
  const items = d.importance.filter((x) => x.share !== null);
  const w = 560, row = 22, ht = 40 + Math.max(1, d.importance.length) * row;
  // What the bars divide: when the strongest parameter explains little on its own, a 100 %
  // bar means little (a sum would pass 100 % for parameters that move together).
  const known = d.importance.filter((x) => x.eta2 !== null), strongest = Math.max(0, ...known.map((x) => x.eta2));
  const title = "Parameter importance (share of explained variance)" + (items.length ? `; the strongest alone explains ${(100 * strongest).toFixed(1)}%` : "");
  const svg = s("svg", { class: "plot", id: "plot-importance", viewBox: `0 0 ${w} ${ht}` }, s("text", { class: "title", x: 10, y: 16 }, title));
  if (!items.length) {
    const why = known.length ? "no parameter explains any of the objective's variance on its own (ε² is 0 for each)"
      : "needs at least 4 finished trials, more than one a bin, whose objective varies";
    svg.append(s("text", { x: 10, y: 40 }, why));
    return svg;
  }
  const lw = 140, X = linScale(0, 1, lw, w - 60);
  d.importance.forEach((x, k) => {
    const y = 30 + k * row;
    svg.append(s("text", { x: lw - 6, y: y + 13, "text-anchor": "end" }, x.name));
    if (x.share === null) return;
    svg.append(s("rect", { class: "bar", x: lw, y: y + 2, width: Math.max(1, X(x.share) - lw), height: row - 6, fill: "var(--accent)" }),
      s("text", { x: X(x.share) + 4, y: y + 13 }, (100 * x.share).toFixed(1) + "%"));
  });
  return svg;
}
function curvesNote(d) {
  if (!d.curves.recorded) return "This source keeps only reduced metrics (a cluster's Trial objects), so there are no learning curves.";
  return `The ${d.curves.trials.length} best-ranked of ${d.curves.withCurves} trials that logged ${d.curves.metric} more than once; each curve thinned to at most 200 points (extremes kept).`;
}
function curvesPlot(d) {
  const byName = new Map(d.trials.map((t, i) => [t.name, i]));
  const all = d.curves.trials.flatMap((c) => c.points);
  const xs = extent(all.map((p) => p[0])), ys = extent(all.map((p) => p[1]));
  const f = frame({ id: "plot-curves", title: `Learning curves (${d.curves.metric})`, xlabel: "step (value logged)", ylabel: d.curves.metric,
    xs: (a, b) => linScale(Math.max(1, xs[0]), xs[1], a, b), ys: (a, b) => linScale(ys[0], ys[1], a, b) });
  for (const c of d.curves.trials) {
    const i = byName.get(c.trial);
    const dpath = c.points.map((p, k) => `${k ? "L" : "M"}${f.X(p[0]).toFixed(1)},${f.Y(p[1]).toFixed(1)}`).join("");
    f.svg.append(s("path", { class: "curve", "data-t": i, d: dpath, stroke: i === d.best ? "var(--best)" : STATE_COLORS[d.trials[i].state] }));
  }
  return f.svg;
}
// Interval partitioning: each trial takes the first lane free at its start, so the number
// of lanes is the peak parallelism and a long bar is a straggler.
function lanes(trials) {
  const order = trials.map((t, i) => i).filter((i) => trials[i].startedUs).sort((a, b) => trials[a].startedUs - trials[b].startedUs);
  const free = [], lane = new Map();
  const now = Date.now() * 1000;
  for (const i of order) {
    const t = trials[i], end = t.completedUs || now;
    let k = free.findIndex((e) => e <= t.startedUs);
    if (k < 0) { k = free.length; free.push(end); } else free[k] = end;
    lane.set(i, k);
  }
  return { lane, count: free.length };
}
function timelinePlot(d) {
  const { lane, count } = lanes(d.trials);
  const t0 = Math.min(...d.trials.filter((t) => t.startedUs).map((t) => t.startedUs), Date.now() * 1000);
  const now = Date.now() * 1000;
  const tEnd = Math.max(...d.trials.map((t) => t.completedUs || (t.state === "Running" ? now : t.startedUs || t0)), t0 + 1e6);
  const ht = Math.min(420, Math.max(200, 80 + count * 14));
  const f = frame({ id: "plot-timeline", ht, title: `Timeline (${count} concurrent lane${count === 1 ? "" : "s"})`, xlabel: "seconds since the first trial started", ylabel: "concurrent trials", yticks: false,
    xs: (a, b) => linScale(0, (tEnd - t0) / 1e6, a, b), ys: (a, b) => linScale(-0.5, Math.max(count, 1) - 0.5, a, b) });
  const bh = Math.max(1, Math.min(12, (ht - 68) / Math.max(count, 1) - 2));
  for (const [i, k] of lane) {
    const t = d.trials[i];
    const x0 = f.X((t.startedUs - t0) / 1e6), x1 = f.X(((t.completedUs || now) - t0) / 1e6);
    f.svg.append(s("rect", { class: "span", "data-t": i, x: x0, y: f.Y(k) - bh / 2, width: Math.max(1, x1 - x0), height: bh, fill: i === d.best ? "var(--best)" : STATE_COLORS[t.state] }));
  }
  return f.svg;
}
// A categorical parameter's axis lists its choices in spec order (values such as "007" stay
// labels); other parameters are numeric when every value reads as a number.
function numericAxis(d, k) {
  const vals = d.trials.map((t) => t.params[k]);
  const choices = d.parameters[k].choices;
  const nums = vals.map((v) => (v === null ? null : Number(v)));
  if (!choices && nums.every((v) => v === null || Number.isFinite(v))) return { numeric: true, vals: nums };
  const cats = choices ? [...choices] : [...new Set(vals.filter((v) => v !== null))].sort();
  for (const v of vals) if (v !== null && !cats.includes(v)) cats.push(v);
  return { numeric: false, cats, vals: vals.map((v) => (v === null ? null : cats.indexOf(v))) };
}
function parallelNote(d) {
  const usable = d.trials.filter((t) => t.usable).length;
  return usable > MAX_TRACES ? `The ${MAX_TRACES} best of ${usable} finished trials; colour: objective (dark = best).` : "Every finished trial; colour: objective (dark = best).";
}
function parallelPlot(d) {
  const params = d.parameters, metric = d.summary.objective.metric;
  const w = Math.max(1100, 150 * (params.length + 1)), ht = 340, m = { l: 60, r: 60, t: 34, b: 30 };
  const svg = s("svg", { class: "plot", id: "plot-parallel", viewBox: `0 0 ${w} ${ht}` }, s("text", { class: "title", x: 10, y: 16 }, "Parallel coordinates"));
  const idx = d.trials.map((t, i) => i).filter((i) => d.trials[i].usable).sort((a, b) => d.trials[a].rank - d.trials[b].rank).slice(0, MAX_TRACES);
  const axes = params.map((p, k) => ({ name: p.name, log: p.log, ...numericAxis(d, k) }));
  axes.push({ name: metric, numeric: true, vals: d.trials.map((t) => t.objective) });
  const step = (w - m.l - m.r) / Math.max(1, axes.length - 1);
  const Ys = axes.map((a) => {
    if (!a.numeric) return linScale(-0.5, a.cats.length - 0.5, ht - m.b, m.t);
    const log = a.log && a.vals.every((v) => v === null || v > 0);
    const e = extent(a.vals, log);
    const f = linScale(e[0], e[1], ht - m.b, m.t, log);
    f.log = log;
    return f;
  });
  const worst = idx.length ? d.trials[idx[idx.length - 1]].rank : 1;
  const g = s("g");
  for (const i of idx.slice().reverse()) {
    const t = d.trials[i];
    const pts = axes.map((a, k) => { const v = a.vals[i]; return v === null || (Ys[k].log && v <= 0) ? null : [m.l + k * step, Ys[k](v)]; });
    if (pts.some((p) => p === null)) continue;
    const shade = worst > 1 ? (t.rank - 1) / (worst - 1) : 0;
    g.append(s("path", { class: "trace", "data-t": i, d: pts.map((p, k) => `${k ? "L" : "M"}${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(""),
      stroke: i === d.best ? "var(--best)" : `hsl(${220 - 170 * shade},70%,${30 + 35 * shade}%)`, "stroke-width": i === d.best ? 2.5 : 1 }));
  }
  svg.append(g);
  axes.forEach((a, k) => {
    const x = m.l + k * step, ax = s("g", { class: "axis" });
    ax.append(s("line", { x1: x, x2: x, y1: m.t, y2: ht - m.b }), s("text", { x, y: ht - 10, "text-anchor": "middle" }, a.name));
    const ticks = a.numeric ? Ys[k].ticks(4) : a.cats.map((c, j) => j);
    for (const v of ticks) ax.append(s("text", { x: x + 4, y: Ys[k](v) + 4 }, a.numeric ? fmt(v) : cut(a.cats[v], 12), a.numeric ? null : s("title", {}, String(a.cats[v]))));
    svg.append(ax);
  });
  return svg;
}
function slicePlot(d, p, k) {
  const a = numericAxis(d, k), metric = d.summary.objective.metric;
  const log = p.log && a.numeric && a.vals.every((v) => v === null || v > 0);
  const pts = d.trials.map((t, i) => [i, a.vals[i], t.objective]).filter(([, x, y]) => x !== null && typeof y === "number");
  const ys = extent(pts.map((q) => q[2]));
  const xs = a.numeric ? extent(pts.map((q) => q[1]), log) : [-0.5, a.cats.length - 0.5];
  const f = frame({ id: `plot-slice-${p.name}`, ht: 260, title: `Slice: ${p.name}`, xlabel: p.name + (log ? " (log)" : ""), ylabel: metric,
    xs: (lo, hi) => linScale(xs[0], xs[1], lo, hi, log), ys: (lo, hi) => linScale(ys[0], ys[1], lo, hi), xcats: a.numeric ? null : a.cats });
  for (const [i, x, y] of pts) {
    const t = d.trials[i];
    f.svg.append(s("circle", { class: "point", "data-t": i, cx: f.X(x), cy: f.Y(y), r: i === d.best ? 5 : 3, fill: i === d.best ? "var(--best)" : STATE_COLORS[t.state], "fill-opacity": t.usable ? 0.8 : 0.3 }));
  }
  return f.svg;
}
function paretoPlot(d) {
  const [o1, o2] = d.objectives;
  const pts = d.trials.map((t, i) => [i, t.values[o1.metric], t.values[o2.metric]]).filter(([, x, y]) => typeof x === "number" && typeof y === "number");
  const xs = extent(pts.map((q) => q[1])), ys = extent(pts.map((q) => q[2]));
  const f = frame({ id: "plot-pareto", title: `Pareto front (${o1.direction} ${o1.metric}, ${o2.direction} ${o2.metric})`, xlabel: o1.metric, ylabel: o2.metric,
    xs: (a, b) => linScale(xs[0], xs[1], a, b), ys: (a, b) => linScale(ys[0], ys[1], a, b) });
  const front = new Set(d.front);
  const line = pts.filter(([i]) => front.has(i)).sort((p, q) => p[1] - q[1]);
  if (line.length > 1) f.svg.append(s("path", { class: "front-line", fill: "none", stroke: "var(--bad)", d: line.map((p, k) => `${k ? "L" : "M"}${f.X(p[1])},${f.Y(p[2])}`).join("") }));
  for (const [i, x, y] of pts) {
    const t = d.trials[i], on = front.has(i);
    f.svg.append(s("circle", { class: on ? "front" : t.feasible ? "point" : "infeasible", "data-t": i, cx: f.X(x), cy: f.Y(y), r: on ? 5 : 3,
      fill: t.feasible ? (on ? "var(--bad)" : STATE_COLORS[t.state]) : "none", stroke: t.feasible ? "none" : "#667085" }));
  }
  return f.svg;
}

// ---------- trial table ----------
function trialTable(name, d) {
  const metrics = d.metrics;
  const cols = [
    { key: "rank", label: "rank", get: (t) => t.rank, num: true, title: "position when trials are ordered best first" },
    { key: "seq", label: "#", get: (t) => t.seq + 1, num: true, title: "trial number (creation order), as on the history plot" },
    { key: "name", label: "trial", get: (t) => t.name },
    { key: "state", label: "status", get: (t) => t.state },
    ...metrics.map((mn) => ({ key: "m:" + mn, label: mn, get: (t) => (mn === d.summary.objective.metric ? t.objective : t.values[mn] ?? null), num: true })),
    ...d.parameters.map((p, k) => ({ key: "p:" + p.name, label: p.name, get: (t) => { const v = t.params[k]; const n = Number(v); return !p.choices && v !== null && Number.isFinite(n) ? n : v; }, num: !p.choices })),
    { key: "duration", label: "duration", get: (t) => trialDuration(t), num: true },
  ];
  const states = [...new Set(d.trials.map((t) => t.state))];
  const q = h("input", { type: "search", placeholder: "filter: name, status, value", id: "trial-filter", value: view.filter });
  const st = h("select", { id: "trial-state" }, h("option", { value: "" }, "every status"), states.map((x) => h("option", { value: x, selected: view.state === x }, STATE_WORDS[x])));
  const wrap = h("div", { class: "panel", id: "trials" });
  const draw = () => {
    const needle = view.filter.toLowerCase();
    let rows = d.trials.map((t, i) => i).filter((i) => {
      const t = d.trials[i];
      if (view.state && t.state !== view.state) return false;
      return !needle || [t.name, t.state, ...t.params.map(String)].some((x) => x.toLowerCase().includes(needle));
    });
    const col = cols.find((c) => c.key === view.sort) || cols[0];
    rows.sort((a, b) => {
      const x = col.get(d.trials[a]), y = col.get(d.trials[b]);
      if (x === y) return a - b;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * (view.desc ? -1 : 1);
    });
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
    view.page = Math.min(view.page, pages - 1);
    const shown = rows.slice(view.page * PAGE_ROWS, (view.page + 1) * PAGE_ROWS);
    const head = h("tr", {}, cols.map((c) => h("th", { class: "sortable", title: c.title || "sort", onclick: () => { view.desc = view.sort === c.key ? !view.desc : false; view.sort = c.key; view.page = 0; draw(); } },
      c.label + (view.sort === c.key ? (view.desc ? " ▼" : " ▲") : ""))));
    const body = shown.map((i) => {
      const t = d.trials[i];
      return h("tr", { class: "trial" + (i === d.best ? " best" : ""), "data-t": i },
        cols.map((c) => {
          if (c.key === "name") return h("td", {}, h("a", { href: trialHref(name, t.name) }, t.name));
          if (c.key === "state") return h("td", { title: t.message || t.reason }, stateBadge(t.state));
          if (c.key === "duration") return h("td", { class: "num" }, dur(c.get(t)));
          const v = c.get(t);
          return h("td", { class: c.num ? "num" : "" }, typeof v === "number" ? fmt(v) : v ?? "—");
        }));
    });
    const pager = h("div", { class: "tools" },
      h("button", { disabled: view.page === 0, onclick: () => { view.page--; draw(); } }, "‹ previous"),
      h("span", { class: "note" }, `${rows.length} of ${d.trials.length} trials · page ${view.page + 1} of ${pages}`),
      h("button", { disabled: view.page + 1 >= pages, onclick: () => { view.page++; draw(); } }, "next ›"));
    wrap.replaceChildren(h("h2", {}, "Trials"), h("div", { class: "tools" }, q, st), h("table", {}, h("thead", {}, head), h("tbody", {}, body)), pager);
  };
  q.addEventListener("input", () => { view.filter = q.value; view.page = 0; draw(); q.focus(); });
  st.addEventListener("change", () => { view.state = st.value; view.page = 0; draw(); });
  draw();
  return wrap;
}

// ---------- trial page ----------
async function trialPage(name, trial) {
  const d = await getJSON(`/api/experiments/${enc(name)}/trials/${enc(trial)}`);
  const t = d.trial;
  document.title = `${trial} · ${name} · vernier`;
  document.getElementById("crumbs").replaceChildren("/ ", h("a", { href: `/experiments/${enc(name)}` }, name), " / ", trial);
  const parts = [h("h1", {}, `Trial ${trial}`, d.best ? h("span", { class: "note" }, "  (best trial)") : null),
    h("div", { class: "cards" }, card("status", stateBadge(t.state)), card(d.experiment.objective.metric, fmt(t.objective)), card("rank", String(t.rank)),
      card("duration", dur(trialDuration(t))), card("attempt", String(d.attempt)))];
  if (t.state !== "Succeeded" && t.state !== "Running" && t.state !== "Created") {
    // Stopped by its rule is the search working, not a failure: said plainly, with the rule.
    const stopped = t.state === "EarlyStopped";
    parts.push(h("div", { class: stopped ? "panel stopped" : "panel failure", id: "reason" }, h("h2", {}, `${STATE_WORDS[t.state]}: ${t.reason || "no reason recorded"}`),
      h("pre", { class: "log" }, t.message || "no message recorded"), t.rule ? h("p", { id: "rule" }, `Its rule: ${t.rule}.`) : null));
  }
  parts.push(h("div", { class: "grid" },
    h("div", { class: "panel" }, h("h2", {}, "Parameters"), h("table", {}, h("tbody", {}, d.parameters.map((p, k) => h("tr", {}, h("th", {}, p), h("td", {}, t.params[k] ?? "—")))))),
    h("div", { class: "panel" }, h("h2", {}, "Metrics"), h("table", {}, h("thead", {}, h("tr", {}, ["metric", "min", "max", "latest"].map((c) => h("th", {}, c)))),
      h("tbody", {}, d.metrics.map((m) => h("tr", {}, h("td", {}, m.name), ["min", "max", "latest"].map((k) => h("td", { class: "num" }, fmtText(m[k]))))))))));
  if (d.curves.length) parts.push(h("div", { class: "grid" }, d.curves.map((c) => panel(metricCurve(c), h("p", { class: "note" }, `${c.logged} values logged` + (c.logged > c.points.length ? `, ${c.points.length} drawn (extremes kept)` : ""))))));
  parts.push(h("div", { class: "panel" }, h("h2", {}, "Conditions"), h("table", {}, h("thead", {}, h("tr", {}, ["type", "status", "reason", "message", "time"].map((c) => h("th", {}, c)))),
    h("tbody", {}, d.conditions.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason), h("td", { style: "white-space:normal" }, c.message), h("td", {}, c.lastTransitionTime)))))));
  parts.push(logPanel(d.log));
  document.getElementById("app").replaceChildren(...parts);
  const pre = document.querySelector("#log pre");
  if (pre) pre.scrollTop = pre.scrollHeight;
  markRendered();
}
// Milliseconds from navigation to the first complete render, for bench/dashboard_load.py.
function markRendered() {
  if (!document.body.dataset.renderedMs) document.body.dataset.renderedMs = performance.now().toFixed(0);
}
function fmtText(x) { const n = Number(x); return x !== "" && x !== null && Number.isFinite(n) ? fmt(n) : x || "—"; }
function metricCurve(c) {
  const xs = extent(c.points.map((p) => p[0])), ys = extent(c.points.map((p) => p[1]));
  const f = frame({ id: `plot-metric-${c.metric}`, ht: 240, title: c.metric, xlabel: "step (value logged)", ylabel: c.metric,
    xs: (a, b) => linScale(Math.max(1, xs[0]), xs[1], a, b), ys: (a, b) => linScale(ys[0], ys[1], a, b) });
  f.svg.append(s("path", { class: "curve", stroke: "var(--accent)", d: c.points.map((p, k) => `${k ? "L" : "M"}${f.X(p[0]).toFixed(1)},${f.Y(p[1]).toFixed(1)}`).join("") }));
  if (c.points.length < 40) for (const p of c.points) f.svg.append(s("circle", { cx: f.X(p[0]), cy: f.Y(p[1]), r: 2.5, fill: "var(--accent)" }, s("title", {}, `step ${p[0]}: ${fmt(p[1])}`)));
  return f.svg;
}
function logPanel(log) {
  const head = h("h2", {}, "Log");
  if (log.error) return h("div", { class: "panel", id: "log" }, head, log.path ? h("p", { class: "note" }, log.path) : null, h("p", {}, log.error));
  return h("div", { class: "panel", id: "log" }, head, h("p", { class: "note" }, log.path + (log.truncated ? ` (last ${log.lines.length} lines)` : "")),
    h("pre", { class: "log" }, log.lines.length ? log.lines.join("\n") : "(empty)"));
}

// ---------- routing ----------
function route() {
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "experiments" && parts.length === 2) return experimentPage(parts[1]);
  if (parts[0] === "experiments" && parts[2] === "trials" && parts.length === 4) return trialPage(parts[1], parts[3]);
  return listPage();
}
route().catch(showError);
