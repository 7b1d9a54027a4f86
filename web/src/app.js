// web/src/app.js -- the UI's entry point: the header (navigation, time
// range, refresh interval, theme), the hash router, auto-refresh.
// A view module exports render(main, ctx) -> optional {ready, refresh(),
// destroy()}; ctx.vars is the #vars bar the view may fill with its
// variables; ready, a promise settled when the view's own loading is done.
// The "rendered" marker: once ready has settled and no panel on screen is
// loading, document.body gets data-rendered="1", data-rendered-at
// (performance.now(), ms since navigation) and data-render-ms (ms since the
// route began); "0" while a view renders. Tests and bench/ui_bench.py wait
// for it.
import { h, clear, fmtTime, parseDuration } from "./util.js";
import { state, parseHash, param, setParams, RANGES, REFRESH, loadScrapeInterval, loadRecorded, link } from "./state.js";
import { destroyAll, refreshAll, pending } from "./chart.js";
import * as fleet from "./views/fleet.js";
import * as node from "./views/node.js";
import * as alerts from "./views/alerts.js";
import * as targets from "./views/targets.js";
import * as rules from "./views/rules.js";
import * as tsdb from "./views/tsdb.js";
import * as explore from "./views/explore.js";
import * as jobs from "./views/jobs.js";
import * as capacity from "./views/capacity.js";
import * as apiview from "./views/apiview.js";
import { api, scalarOf } from "./api.js";
import { Q, fill } from "./queries.js";

const VIEWS = {
  fleet: ["Fleet", fleet], node: ["Node", node], jobs: ["Training", jobs], capacity: ["Capacity", capacity],
  alerts: ["Alerts", alerts], targets: ["Targets", targets], rules: ["Rules", rules], tsdb: ["TSDB", tsdb],
  explore: ["Query", explore], api: ["API", apiview],
};

let current = null, timer = null, lastKey = "", routeSeq = 0, routedWidth = innerWidth;

// Sets the rendered marker once ready has settled and no visible panel is
// loading (checked every frame, for at most 120 s).
async function markRendered(ready, t0, seq) {
  const body = document.body.dataset;
  body.rendered = "0";
  try { await ready; } catch (e) { /* the view shows its error */ }
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  const limit = t0 + 120e3;
  await frame();
  while (seq === routeSeq && pending() && performance.now() < limit) await frame();
  await frame(); // painted
  if (seq !== routeSeq) return;
  const now = performance.now();
  body.renderedAt = now.toFixed(1);
  body.renderMs = (now - t0).toFixed(1);
  body.rendered = "1";
}

function theme(t) {
  document.documentElement.dataset.theme = t;
  try { localStorage.setItem("kelvin.theme", t); } catch (e) { /* private mode */ }
}

function controls() {
  const c = clear(document.getElementById("controls"));
  const from = param("from", "now-1h"), to = param("to", "now");
  const sel = h("select", { id: "range", title: "time range", onchange: (e) => {
    if (e.target.value === "custom") return custom.hidden = false;
    setParams({ from: "now-" + e.target.value, to: "now" });
  } });
  const rel = to === "now" && from.startsWith("now-") ? from.slice(4) : null;
  for (const r of RANGES) sel.append(h("option", { value: r, selected: r === rel }, "Last " + r));
  if (rel && !RANGES.includes(rel)) sel.append(h("option", { value: rel, selected: true }, "Last " + rel));
  sel.append(h("option", { value: "custom", selected: !rel }, rel ? "Custom..." : "Custom"));
  const toLocal = (ms) => { const d = new Date(ms - new Date().getTimezoneOffset() * 60000); return d.toISOString().slice(0, 16); };
  const fromIn = h("input", { type: "datetime-local", id: "from-input" }), toIn = h("input", { type: "datetime-local", id: "to-input" });
  const custom = h("span", { class: "custom", hidden: !!rel }, fromIn, "–", toIn,
    h("button", { onclick: () => {
      const a = Date.parse(fromIn.value), b = Date.parse(toIn.value);
      if (Number.isFinite(a) && Number.isFinite(b) && a < b) setParams({ from: a, to: b });
    } }, "Apply"));
  const now = Date.now();
  const resolve = (s) => (s === "now" ? now : s.startsWith("now-") ? now - parseDuration(s.slice(4)) * 1000 : Number(s));
  fromIn.value = toLocal(resolve(from) || now - 3600e3);
  toIn.value = toLocal(resolve(to) || now);
  const ref = h("select", { id: "refresh", title: "auto-refresh", onchange: (e) => setParams({ refresh: e.target.value === "off" ? null : e.target.value }) });
  for (const r of REFRESH) ref.append(h("option", { value: r, selected: r === param("refresh", "off") }, r === "off" ? "Refresh off" : "Every " + r));
  const now_ = h("button", { title: "refresh now", onclick: () => doRefresh() }, "↻");
  const th = h("button", { id: "theme", title: "dark / light theme", onclick: () => {
    theme(document.documentElement.dataset.theme === "dark" ? "light" : "dark");
    route(true);
  } }, "◐");
  c.append(sel, custom, ref, now_, th);
}

function navbar() {
  const n = clear(document.getElementById("nav"));
  for (const [k, [name]] of Object.entries(VIEWS))
    n.append(h("a", { href: link(k, k === "node" && param("node") ? { node: param("node") } : {}), class: state.view === k ? "active" : "" }, name));
}

function doRefresh() {
  if (current && current.refresh) current.refresh();
  refreshAll();
}

function schedule() {
  clearInterval(timer);
  const r = param("refresh", "off");
  const s = parseDuration(r);
  if (Number.isFinite(s) && s >= 5) timer = setInterval(() => { if (!document.hidden) doRefresh(); }, s * 1000);
}

// Re-renders the view when the route or its parameters change.
function route(force) {
  parseHash();
  const key = location.hash;
  if (!force && key === lastKey) return;
  lastKey = key;
  routedWidth = innerWidth;
  const t0 = performance.now(), seq = ++routeSeq;
  if (current && current.destroy) current.destroy();
  destroyAll();
  current = null;
  navbar();
  controls();
  schedule();
  const v = VIEWS[state.view] || VIEWS.fleet;
  const main = clear(document.getElementById("view"));
  const vars = clear(document.getElementById("vars"));
  document.title = "Kelvin · " + v[0];
  try {
    current = v[1].render(main, { vars, link, fmtTime }) || null;
  } catch (e) {
    main.append(h("p", { class: "error" }, "This view failed: " + e.message));
    markRendered(null, t0, seq);
    throw e;
  }
  markRendered(current && current.ready, t0, seq);
}

window.addEventListener("hashchange", () => route(false));
// Charts take their width from the page, so a change of width redraws the
// view; a change of height alone (a full-page screenshot, a toolbar) does
// not, and keeps what the user typed but has not run.
window.addEventListener("resize", (() => { let t; return () => { clearTimeout(t); t = setTimeout(() => { if (innerWidth !== routedWidth) route(true); }, 300); }; })());
Promise.all([loadScrapeInterval(), loadRecorded()]).then(() => route(true));

// Simulated GPUs are labelled as such in the header, on every page.
api.query(fill(Q.simulated.expr, {})).then((res) => {
  const n = scalarOf(res);
  if (!n) return;
  const badge = h("span", { class: "sim-badge", title: "These GPUs are simulated (kelvin agent --gpu.simulate): no NVML driver here" },
    `simulated GPUs (${n})`);
  document.querySelector("#top .brand").after(badge);
}).catch(() => {});
