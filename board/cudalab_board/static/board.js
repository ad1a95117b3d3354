/* The class leaderboard page's behaviour: reads the board service's api/ routes (relative to the
   page, so it works under any hub prefix), draws each board's table and its chart as inline SVG,
   the failed submissions, the instructor's class view, and follows api/events (server-sent events)
   to re-fetch what changed without a reload.

   Everything a student wrote (kernel names, findings) is hostile text: it only ever reaches the
   page through textContent, never as markup. Part of cudalab, BSD-3-Clause. */
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const CHART_WIDTH = 640;          // px of the board's chart and the class view's histogram
const CHART_ROW = 22;             // px per entry in the board's chart
const CHART_MARGIN = { top: 34, right: 16, bottom: 34, left: 150 };
const HISTOGRAM_BINS = 12;
const HISTOGRAM_HEIGHT = 200;

const state = {
  problems: [],        // [{problem, title, exercise}] from api/problems
  instructor: false,
  view: "board",       // "board" or "class"
  problem: null,
  exercise: null,
  fetching: {},        // what → true while a fetch of it runs; .again when an event came meanwhile
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/* The hub's XSRF token, which its OAuth callback leaves in the _xsrf cookie (readable by the page):
   JupyterHub accepts the hub-OAuth cookie on a script's request only with it (X-XSRFToken, or
   ?_xsrf= where no header can be set, as on an EventSource). */
function xsrfToken() {
  const m = /(?:^|;\s*)_xsrf=([^;]*)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : null;
}

async function getJSON(path) {
  const headers = { Accept: "application/json" };
  const xsrf = xsrfToken();
  if (xsrf) headers["X-XSRFToken"] = xsrf;
  // a redirect means the hub wants a login (an ended session): following it would loop through OAuth
  const r = await fetch(path, { credentials: "same-origin", headers, redirect: "manual" });
  if (r.type === "opaqueredirect") throw new Error("the hub session has ended: reload the page to log in again");
  if (!r.ok) {
    const err = new Error(`${path}: HTTP ${r.status}`);
    err.status = r.status;
    throw err;
  }
  return r.json();
}

function showError(message) {
  const p = $("error");
  p.textContent = message || "";
  p.hidden = !message;
}

/* ------------------------------------------------------------------ numbers */

function ms(v) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  if (v >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

function pct(rel) {
  return rel === null || rel === undefined || !isFinite(rel) ? "–" : `±${(100 * rel).toFixed(1)}%`;
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleString();
}

/* A log10 axis over [lo, hi] mapped to [x0, x1], with ticks at 1, 2, 5 × 10^k inside it. */
function logAxis(lo, hi, x0, x1) {
  const a = Math.log10(lo), b = Math.log10(hi);
  const at = (v) => x0 + (x1 - x0) * (Math.log10(v) - a) / (b - a || 1);
  const ticks = [];
  for (let k = Math.floor(a); k <= Math.ceil(b); k++)
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, k);
      if (v >= lo && v <= hi) ticks.push(v);
    }
  return { at, ticks };
}

function drawAxis(root, axis, top, y) {
  const g = svg("g", { class: "axis" });
  for (const t of axis.ticks) {
    const x = axis.at(t);
    g.append(svg("line", { x1: x, x2: x, y1: top, y2: y }));
    g.append(svg("text", { x, y: y + 16, "text-anchor": "middle" }, ms(t)));
  }
  root.append(g);
}

/* ------------------------------------------------------------------ the board */

function renderBoard(b) {
  $("board-title").textContent = b.title ? `${b.title} (${b.problem})` : b.problem;
  const run = [];
  run.push(`GPU: ${b.gpu || "unknown"}`);
  run.push(b.clock_mhz ? `clock ${b.clock_mhz} MHz` : "clock unknown");
  if (b.backend) run.push(`backend ${b.backend}`);
  if (b.run_at) run.push(`run ${when(b.run_at)}`);
  $("board-run").textContent = run.join(" · ");
  $("board-queue").textContent = b.queue ? `${b.queue} submission${b.queue === 1 ? "" : "s"} waiting to run` : "";

  const tbody = $("entries").querySelector("tbody");
  tbody.replaceChildren();
  for (const e of b.entries || []) {
    const tr = el("tr", { "data-user": e.user, "data-rank": e.rank });
    if (e.you) tr.classList.add("you");
    if (e.tied) tr.classList.add("tied");
    tr.append(el("td", { class: "rank num", title: e.tied ? "tied: within noise of another entry" : "" },
                 e.tied ? `=${e.rank}` : e.rank),
              el("td", { class: "user" }, e.you && e.user !== "you" ? `${e.user} (you)` : e.user),
              el("td", { class: "name" }, e.name),
              el("td", { class: "num" }, ms(e.median_ms)),
              el("td", { class: "num" }, pct(e.ci95_rel)),
              el("td", { class: "num" }, e.score === null || e.score === undefined ? "–" : `${Number(e.score).toFixed(2)}×`),
              el("td", {}, when(e.submitted_at)));
    tbody.append(tr);
  }
  if (!(b.entries || []).length) {
    const tr = el("tr", { class: "empty" });
    tr.append(el("td", { colspan: 7 }, state.instructor ? "No ranked submission yet."
      : `You have no ranked submission yet: %submit NAME --to ${b.problem} in your notebook sends your kernel.`));
    tbody.append(tr);
  }

  drawBoardChart(b);

  const failed = b.failed || [];
  $("failed-section").hidden = failed.length === 0;
  const fbody = $("failed").querySelector("tbody");
  fbody.replaceChildren();
  for (const f of failed) {
    const tr = el("tr", { "data-user": f.user });
    tr.append(el("td", { class: "user" }, f.user), el("td", { class: "name" }, f.name),
              el("td", { class: "finding" }, f.finding),
              el("td", { class: "num" }, f.line === null || f.line === undefined ? "" : f.line));
    fbody.append(tr);
  }
  document.body.dataset.boardUpdated = String(Date.now());
}

/* Each entry a dot at its median with its 95% interval as a whisker, one row per entry in rank
   order; each reference a dashed vertical line across them, named at the top. */
function drawBoardChart(b) {
  const fig = $("chart");
  fig.querySelector("svg")?.remove();
  const entries = (b.entries || []).filter((e) => e.median_ms > 0);
  const refs = (b.references || []).filter((r) => r.median_ms > 0);
  if (!entries.length && !refs.length) return;
  const times = [];
  for (const e of entries) times.push(e.median_ms * (1 - (e.ci95_rel || 0)), e.median_ms * (1 + (e.ci95_rel || 0)));
  for (const r of refs) times.push(r.median_ms);
  const lo = Math.min(...times.filter((t) => t > 0)) / 1.5, hi = Math.max(...times) * 1.5;
  const rows = Math.max(entries.length, 1);
  const height = CHART_MARGIN.top + rows * CHART_ROW + CHART_MARGIN.bottom;
  const root = svg("svg", { width: CHART_WIDTH, height, viewBox: `0 0 ${CHART_WIDTH} ${height}`,
                            role: "img", "aria-label": "students' times against the reference ladder" });
  const axis = logAxis(lo, hi, CHART_MARGIN.left, CHART_WIDTH - CHART_MARGIN.right);
  const yAxis = CHART_MARGIN.top + rows * CHART_ROW;
  drawAxis(root, axis, CHART_MARGIN.top - 6, yAxis);
  root.append(svg("text", { x: (CHART_MARGIN.left + CHART_WIDTH - CHART_MARGIN.right) / 2, y: height - 2,
                            "text-anchor": "middle" }, "median time (ms), lower is better"));

  entries.forEach((e, i) => {
    const y = CHART_MARGIN.top + i * CHART_ROW + CHART_ROW / 2;
    const g = svg("g", { class: e.you ? "entry you" : "entry", "data-user": e.user });
    const label = `${e.tied ? "=" : ""}${e.rank}. ${e.user} · ${e.name}`;
    g.append(svg("text", { x: CHART_MARGIN.left - 8, y: y + 4, "text-anchor": "end" },
                 label.length > 24 ? label.slice(0, 23) + "…" : label));
    const rel = e.ci95_rel || 0;
    g.append(svg("line", { x1: axis.at(e.median_ms * (1 - rel)), x2: axis.at(e.median_ms * (1 + rel)), y1: y, y2: y }));
    g.append(svg("circle", { cx: axis.at(e.median_ms), cy: y, r: 5 }));
    g.append(svg("title", {}, `${e.user} ${e.name}: ${ms(e.median_ms)} ms ${pct(e.ci95_rel)}`));
    root.append(g);
  });

  refs.forEach((r, i) => {
    const x = axis.at(r.median_ms);
    const g = svg("g", { class: "ref", "data-variant": r.variant });
    g.append(svg("line", { x1: x, x2: x, y1: CHART_MARGIN.top - 4, y2: yAxis }));
    // stagger the names on two lines so neighbouring references do not overprint
    g.append(svg("text", { x, y: CHART_MARGIN.top - 8 - (i % 2) * 13, "text-anchor": "middle" },
                 `${r.variant} ${ms(r.median_ms)}`));
    root.append(g);
  });
  fig.prepend(root);
}

/* ------------------------------------------------------------------ the class view */

function renderClassView(c) {
  $("class-title").textContent = `Class view: ${c.exercise}`;
  const total = c.kernels || 0;
  const tbody = $("class-counts").querySelector("tbody");
  tbody.replaceChildren();
  const rows = [["reported", total], ["compile", c.compiled || 0], ["pass", c.passed || 0]];
  for (const [name, n] of Object.entries(c.lesson || {})) rows.push([`lesson check: ${name}`, n]);
  for (const [what, n] of rows) {
    const tr = el("tr", { "data-check": what });
    const bar = el("span", { class: "bar" });
    bar.style.width = `${total ? Math.round(200 * n / total) : 0}px`;
    const cell = el("td");
    cell.append(bar);
    tr.append(el("td", {}, what), el("td", { class: "num" }, what === "reported" ? n : `${n} of ${total}`), cell);
    tbody.append(tr);
  }

  drawHistogram(c.times_ms || []);

  const ol = $("class-findings");
  ol.replaceChildren();
  const findings = [...(c.findings || [])].sort((a, b) => b.count - a.count);
  for (const f of findings) {
    const li = el("li");
    li.append(el("span", { class: "count" }, `${f.count} kernel${f.count === 1 ? "" : "s"}`), " ",
              el("span", { class: "text" }, f.text));
    if (f.line !== null && f.line !== undefined) li.append(" ", el("span", { class: "line" }, `at line ${f.line}`));
    ol.append(li);
  }
  if (!findings.length) ol.append(el("li", { class: "empty" }, "No findings."));
  document.body.dataset.classUpdated = String(Date.now());
}

function drawHistogram(times) {
  const fig = $("class-times");
  fig.querySelector("svg")?.remove();
  const ok = times.filter((t) => t > 0 && isFinite(t));
  if (!ok.length) return;
  const lo = Math.min(...ok) / 1.2, hi = Math.max(...ok) * 1.2;
  const left = 40, right = CHART_WIDTH - 16, top = 24, bottom = HISTOGRAM_HEIGHT - 36;
  const axis = logAxis(lo, hi, left, right);
  const counts = new Array(HISTOGRAM_BINS).fill(0);
  const a = Math.log10(lo), b = Math.log10(hi);
  for (const t of ok) counts[Math.min(HISTOGRAM_BINS - 1, Math.floor(HISTOGRAM_BINS * (Math.log10(t) - a) / (b - a || 1)))]++;
  const most = Math.max(...counts);
  const root = svg("svg", { width: CHART_WIDTH, height: HISTOGRAM_HEIGHT, viewBox: `0 0 ${CHART_WIDTH} ${HISTOGRAM_HEIGHT}`,
                            role: "img", "aria-label": "distribution of the class's times" });
  drawAxis(root, axis, top, bottom);
  root.append(svg("text", { x: (left + right) / 2, y: HISTOGRAM_HEIGHT - 2, "text-anchor": "middle" },
                  "quick check's time (ms); bars: kernels"));
  const w = (right - left) / HISTOGRAM_BINS;
  counts.forEach((n, i) => {
    if (!n) return;
    const h = (bottom - top) * n / most;
    const r = svg("rect", { class: "bin", x: left + i * w + 1, y: bottom - h, width: w - 2, height: h, "data-count": n });
    r.append(svg("title", {}, `${n} kernel${n === 1 ? "" : "s"}`));
    root.append(r);
    root.append(svg("text", { x: left + i * w + w / 2, y: bottom - h - 3, "text-anchor": "middle" }, n));
  });
  fig.prepend(root);
}

/* ------------------------------------------------------------------ fetching, coalesced */

/* Runs load() now, or once more after the fetch in flight when it is already running: a burst of
   events (thirty quick checks at once) costs at most two fetches, and the last one is current. */
async function refresh(what, load) {
  if (state.fetching[what]) { state.fetching[what] = "again"; return; }
  state.fetching[what] = true;
  try {
    do {
      state.fetching[what] = true;
      await load();
    } while (state.fetching[what] === "again");
  } finally {
    state.fetching[what] = false;
  }
}

function refreshBoard() {
  if (!state.problem) return;
  const problem = state.problem;
  return refresh("board", async () => {
    try {
      const b = await getJSON(`api/boards/${encodeURIComponent(problem)}`);
      if (problem === state.problem) { renderBoard(b); showError(""); }
    } catch (err) { showError(`Could not load the board of ${problem}: ${err.message}`); }
  });
}

function refreshClassView() {
  if (!state.exercise || !state.instructor) return;
  const exercise = state.exercise;
  return refresh("class", async () => {
    try {
      const c = await getJSON(`api/classview/${encodeURIComponent(exercise)}`);
      if (exercise === state.exercise) { renderClassView(c); showError(""); }
    } catch (err) { showError(`Could not load the class view of ${exercise}: ${err.message}`); }
  });
}

/* ------------------------------------------------------------------ navigation: #board=P, #class=E */

function readHash() {
  const m = /^#(board|class)=(.+)$/.exec(location.hash);
  if (!m) return;
  const value = decodeURIComponent(m[2]);
  if (m[1] === "board") { state.view = "board"; state.problem = value; }
  else if (state.instructor) { state.view = "class"; state.exercise = value; }
}

function writeHash() {
  const h = state.view === "class" ? `#class=${encodeURIComponent(state.exercise || "")}`
                                   : `#board=${encodeURIComponent(state.problem || "")}`;
  if (location.hash !== h) history.replaceState(null, "", h);
}

function show() {
  $("board").hidden = state.view !== "board";
  $("classview").hidden = state.view !== "class";
  $("show-board").setAttribute("aria-pressed", String(state.view === "board"));
  $("show-class").setAttribute("aria-pressed", String(state.view === "class"));
  $("problem").value = state.problem || "";
  $("exercise").value = state.exercise || "";
  writeHash();
  if (state.view === "board" && !state.problem) showError("No problem to show: this page's address names one as #board=PROBLEM.");
  if (state.view === "board") refreshBoard(); else refreshClassView();
}

function fillSelect(select, values) {
  select.replaceChildren();
  for (const [value, label] of values) select.append(el("option", { value }, label));
}

/* ------------------------------------------------------------------ live updates */

/* Follows api/events. An EventSource reconnects by itself after a stream ends (a service or a
   proxy may end one at any time: one that buffers whole responses only passes a stream that ends),
   so an error while it is reconnecting is no outage; only a closed one (refused: the session
   ended, the service is down) is, and then we start again after a pause. Every (re)opening
   re-fetches what is shown, for whatever changed while no stream was open. */
const EVENTS_RESTART_MS = 5000;

function follow() {
  const live = $("live");
  const xsrf = xsrfToken();
  const events = new EventSource(xsrf ? `api/events?_xsrf=${encodeURIComponent(xsrf)}` : "api/events",
                                 { withCredentials: true });
  events.onopen = () => {
    live.textContent = "live";
    live.className = "live on";
    if (state.view === "board") refreshBoard(); else refreshClassView();
  };
  events.onerror = () => {
    if (events.readyState !== EventSource.CLOSED) return;
    live.textContent = "offline: retrying";
    live.className = "live off";
    setTimeout(follow, EVENTS_RESTART_MS);
  };
  events.addEventListener("board", (ev) => {
    let d; try { d = JSON.parse(ev.data); } catch { return; }
    if (state.view === "board" && d.problem === state.problem) refreshBoard();
  });
  events.addEventListener("classview", (ev) => {
    let d; try { d = JSON.parse(ev.data); } catch { return; }
    if (state.view === "class" && d.exercise === state.exercise) refreshClassView();
  });
}

/* ------------------------------------------------------------------ start */

async function start() {
  let meta;
  try {
    // who is looking and what there is to show: {user, instructor, class_view, problems: [{problem, title, exercise}]}
    meta = await getJSON("api/problems");
  } catch (err) {
    showError(`Could not reach the board service: ${err.message}`);
    return;
  }
  state.problems = meta.problems || [];
  state.instructor = !!meta.instructor;
  $("who").textContent = meta.user ? `${meta.user} (${state.instructor ? "instructor" : "student"})` : "";
  document.body.classList.toggle("instructor", state.instructor);
  fillSelect($("problem"), state.problems.map((p) => [p.problem, p.title ? `${p.problem}: ${p.title}` : p.problem]));
  const exercises = [...new Set(state.problems.map((p) => p.exercise).filter(Boolean))];
  fillSelect($("exercise"), exercises.map((e) => [e, e]));
  $("views").hidden = !(state.instructor && meta.class_view);
  state.problem = state.problems.length ? state.problems[0].problem : null;
  state.exercise = exercises[0] || null;
  readHash();
  // a problem or exercise named in the address but not listed (yet) still gets its option
  if (state.problem && !state.problems.some((p) => p.problem === state.problem)) $("problem").append(el("option", { value: state.problem }, state.problem));
  if (state.exercise && !exercises.includes(state.exercise)) $("exercise").append(el("option", { value: state.exercise }, state.exercise));

  $("problem").addEventListener("change", () => { state.problem = $("problem").value; state.view = "board"; show(); });
  $("exercise").addEventListener("change", () => { state.exercise = $("exercise").value; state.view = "class"; show(); });
  $("show-board").addEventListener("click", () => { state.view = "board"; show(); });
  $("show-class").addEventListener("click", () => { state.view = "class"; show(); });
  window.addEventListener("hashchange", () => { readHash(); show(); });
  show();
  follow();
}

start();
