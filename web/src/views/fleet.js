// web/src/views/fleet.js -- the fleet overview: headline tiles coloured by
// threshold, a heatmap with one cell per GPU (rows: Hostname, columns: GPU
// index) for a chosen metric at a chosen time (the scrubber: instant
// queries at that time), and fleet-wide time series from the recording
// rules. Clicking a cell opens that node.
// Variables (in the URL): color, at, cluster (one value of the cluster
// label: "cluster" when the GPU series carry one, else "job"), nodes (a
// comma list of Hostnames; empty: all). With a node filter (or a cluster
// label the job-level rules drop) the raw expressions answer instead of
// the recording rules. The expressions live in queries.js.
import { h, clear, fmt, fmtTime, ramp, level, debounce } from "../util.js";
import { api } from "../api.js";
import { state, param, setParams, timeRange, link } from "../state.js";
import { chart } from "../chart.js";
import { Q, expr as qexpr, pick, esc, reQuote } from "../queries.js";
import { stat, alertCounts, scalar, LIMITS } from "./common.js";

// Heatmap colourings: PromQL giving one value per (Hostname, gpu)
// (queries.js), its unit and the colour scale's [min, max].
export const COLORINGS = {
  util: { name: "Utilisation", q: Q.fleet.color.util, unit: "%", min: 0, max: 100 },
  temp: { name: "Die temperature", q: Q.fleet.color.temp, unit: "C", min: 30, max: 90 },
  memtemp: { name: "Memory junction temperature", q: Q.fleet.color.memtemp, unit: "C", min: 30, max: 95 },
  power: { name: "Power", q: Q.fleet.color.power, unit: "W", min: 0, max: 700 },
  mem: { name: "Memory used", q: Q.fleet.color.mem, unit: "%", min: 0, max: 100 },
  xid: { name: "XID errors (1h)", q: Q.fleet.color.xid, unit: "", min: 0, max: 5 },
  ecc: { name: "ECC errors (volatile)", q: Q.fleet.color.ecc, unit: "", min: 0, max: 10 },
};

// The fleet filter: f, the matchers for GPU series; c, the cluster's alone
// (for up, which has no Hostname); rules, whether the job-level recording
// rules still answer (no node filter, and a cluster label they keep).
export function fleetFilter(clabel, cluster, nodes) {
  const c = cluster ? `${clabel}="${esc(cluster)}"` : "";
  const parts = c ? [c] : [];
  if (nodes.length) parts.push(`Hostname=~"${esc(nodes.map(reQuote).join("|"))}"`);
  return { f: parts.join(","), c, clabel, rules: !nodes.length && (!cluster || clabel === "job") };
}

// The cluster and node variables in the #vars bar.
function variables(bar, clabel, cluster, clusters, nodes, hosts) {
  const csel = h("select", { id: "cluster-select", title: `the ${clabel} label`, onchange: (e) => setParams({ cluster: e.target.value || null, nodes: null }) },
    h("option", { value: "" }, "all"), clusters.map((x) => h("option", { value: x, selected: x === cluster }, x)));
  const picked = new Set(nodes);
  const boxes = hosts.map((x) => h("label", { class: "opt", dataset: { host: x } }, h("input", { type: "checkbox", value: x, checked: picked.has(x) }), x));
  const search = h("input", { type: "search", placeholder: "filter", oninput: (e) => {
    const t = e.target.value.toLowerCase();
    for (const b of boxes) b.hidden = !b.dataset.host.toLowerCase().includes(t);
  } });
  const apply = () => {
    const on = boxes.map((b) => b.firstChild).filter((i) => i.checked).map((i) => i.value);
    setParams({ nodes: on.length && on.length < hosts.length ? on.join(",") : null });
  };
  const multi = h("details", { class: "multi", id: "nodes-select" },
    h("summary", {}, nodes.length ? `${nodes.length} of ${hosts.length}` : `all ${hosts.length}`),
    h("div", { class: "multi-menu" }, search,
      h("div", { class: "multi-list" }, boxes),
      h("div", { class: "toolbar" }, h("button", { class: "primary", id: "nodes-apply", onclick: apply }, "Apply"),
        h("button", { onclick: () => setParams({ nodes: null }) }, "All"))));
  bar.append(h("label", {}, clabel === "job" ? "Cluster (job)" : "Cluster", csel), h("label", {}, "Nodes", multi));
}

export function render(main, ctx) {
  const stats = h("div", { class: "stats", id: "fleet-stats" });
  const hmPanel = h("section", { class: "panel", id: "heatmap-panel" });
  const grid = h("div", { class: "grid" });
  main.append(stats, hmPanel, h("h2", {}, "Fleet over time"), grid);

  const colorSel = h("select", { id: "hm-color", onchange: (e) => setParams({ color: e.target.value }) },
    Object.entries(COLORINGS).map(([k, c]) => h("option", { value: k, selected: k === param("color", "util") }, c.name)));
  ctx.vars.append(h("label", {}, "Heatmap colour", colorSel));

  let alive = true, all = null;
  const cluster = param("cluster", "");
  const nodes = param("nodes", "").split(",").filter((x) => x);
  // the cluster label: "cluster" when the GPU series carry one, else "job"
  const clabelP = api.labelValues("cluster", "DCGM_FI_DEV_GPU_TEMP").then((cl) => (cl.data && cl.data.length ? "cluster" : "job"));
  const ready = (async () => {
    // without a cluster filter the label does not matter yet: the panels
    // start at once (one round trip less before the first paint)
    const vars = fleetFilter(cluster ? await clabelP : "job", cluster, nodes);
    if (!alive) return;
    all = body(vars);
    await all();
  })();
  // the variables' choices load once the view is drawn (label values over
  // the whole fleet are not on the way to the first paint)
  ready.then(async () => {
    const clabel = await clabelP;
    const c = fleetFilter(clabel, cluster, []).c;
    const [cs, hs] = await Promise.all([api.labelValues(clabel, "DCGM_FI_DEV_GPU_TEMP"),
      api.labelValues("Hostname", c ? `DCGM_FI_DEV_GPU_TEMP{${c}}` : "DCGM_FI_DEV_GPU_TEMP")]);
    if (alive) variables(ctx.vars, clabel, cluster, (cs.data || []).slice().sort(), nodes,
      (hs.data || []).slice().sort((x, y) => x.localeCompare(y, undefined, { numeric: true })));
  });
  return { ready, refresh: () => all && all(), destroy: () => { alive = false; } };

  function body(vars) {
    const fv = { f: vars.f, c: vars.c };
    const fp = (entry) => pick(entry, fv, vars.rules, state.recorded);
    const fq = (entry) => fp(entry).expr;
    const C = Q.fleet.chart;
    const charts = [
      chart({ title: "GPU utilisation", unit: "%", yMin: 0, yMax: 100, alerts: vars.f, queries: [
        { ...fp(C.utilAvg), legend: () => "average" },
        { expr: fq(C.utilMax), legend: () => "max" },
        { expr: fq(C.utilMin), legend: () => "min" }] }),
      chart({ title: "Temperature", unit: "C", alerts: vars.f,
        thresholds: [{ value: LIMITS.dieCrit, label: "die limit (H100)", level: "crit" }],
        queries: [
          { ...fp(C.tempMax), legend: () => "hottest die" },
          { expr: fq(C.tempAvg), legend: () => "average die" },
          { ...fp(C.memTempMax), legend: () => "hottest memory" }] }),
      chart({ title: "Power", unit: "W", yMin: 0, alerts: vars.f, queries: [
        { ...fp(C.power), legend: () => "total" }] }),
      chart({ title: "GPU memory used", unit: "%", yMin: 0, yMax: 100, alerts: vars.f, queries: [
        { ...fp(C.memRatio), legend: () => "average" }] }),
    ];
    for (const c of charts) grid.append(c.el);
    // an alert belongs to the filter when it carries the filter's labels
    const nodeSet = new Set(nodes);
    const inFilter = (a) => (!cluster || a.labels[vars.clabel] === cluster) && (!nodeSet.size || nodeSet.has(a.labels.Hostname));

    async function headlines(alertsP) {
      const { end } = timeRange();
      const H = Q.fleet.headline;
      const keys = Object.keys(H);
      const [vals, a] = await Promise.all([Promise.all(keys.map(async (k) => {
        const p = fp(H[k]);
        const x = await scalar(p.expr, end);
        return x === null && p.fallback ? scalar(p.fallback, end) : x;
      })), alertsP]);
      const q = {};
      keys.forEach((k, i) => (q[k] = vals[i]));
      clear(stats).append(
        stat("Targets up", q.targetsUp === null ? "-" : `${q.targetsUp} / ${q.targets}`, "", q.targets === null ? "none" : q.targetsUp < q.targets ? "crit" : "ok"),
        stat("GPU nodes", q.nodes === null ? "-" : String(q.nodes), "", q.nodes ? "ok" : "none"),
        stat("GPUs", q.gpus === null ? "-" : String(q.gpus), "", q.lost > 0 ? "crit" : q.gpus ? "ok" : "none", q.lost > 0 ? `${q.lost} lost` : null),
        stat("Alerts critical", String(a.critical), "", a.critical ? "crit" : "ok"),
        stat("Alerts warning", String(a.warning), "", a.warning ? "warn" : "ok"),
        stat("Alerts pending", String(a.pending), "", a.pending ? "warn" : "ok"),
        stat("Fleet utilisation", q.util, "%", q.util === null ? "none" : "ok"),
        stat("Total power", q.power, "W", q.power === null ? "none" : "ok"),
        stat("Hottest GPU die", q.temp, "C", level(q.temp, LIMITS.dieWarn, LIMITS.dieCrit)),
        stat("Hottest GPU memory", q.memtemp, "C", level(q.memtemp, LIMITS.memWarn, LIMITS.memCrit)),
        stat("GPU memory used", q.memratio, "%", level(q.memratio, 90, 98)));
      return a;
    }

    // ---- heatmap ----
    const { start, end } = timeRange();
    const at = Number(param("at", "")) || null;
    const scrubTime = () => (at && at >= start && at <= end ? at : end);
    const timeLabel = h("span", { id: "hm-time", class: "muted" });
    const scrub = h("input", { type: "range", id: "hm-scrub", min: String(Math.floor(start)), max: String(Math.floor(end)), step: "1", value: String(Math.floor(scrubTime())) });
    const hmBody = h("div", { class: "heatmap-wrap" });
    const coloring = COLORINGS[param("color", "util")] || COLORINGS.util;
    clear(hmPanel).append(
      h("h3", {}, "GPUs: ", coloring.name, " ", h("span", { class: "unit" }, "one cell per GPU · rows: nodes · columns: GPU index · click a cell to open its node")),
      h("div", { class: "scrubber" }, h("span", { class: "muted" }, "Time"), scrub, timeLabel,
        h("button", { onclick: () => setParams({ at: null }) }, "Latest")),
      hmBody);
    scrub.addEventListener("input", () => { timeLabel.textContent = fmtTime(Number(scrub.value) * 1000); });
    scrub.addEventListener("change", debounce(() => setParams({ at: scrub.value }, true) || heatmap(Number(scrub.value), alertCounts(inFilter)), 150));

    let hmSeq = 0;
    async function heatmap(t, alertsP) {
      const seq = ++hmSeq;
      timeLabel.textContent = fmtTime(t * 1000);
      const [pres, vals, a] = await Promise.all([api.query(qexpr(Q.fleet.presence, fv), t), api.query(qexpr(coloring.q, fv), t), alertsP]);
      const alertList = a ? a.list : [];
      if (seq !== hmSeq) return;
      if (pres.error || vals.error) {
        clear(hmBody).append(h("p", { class: "error" }, pres.error || vals.error));
        return;
      }
      const cells = new Map();
      const hostSet = new Set();
      let maxGpu = -1;
      for (const s of pres.data.result) {
        const key = s.metric.Hostname + "\u0000" + s.metric.gpu;
        cells.set(key, { host: s.metric.Hostname, gpu: s.metric.gpu, model: s.metric.modelName, v: null });
        hostSet.add(s.metric.Hostname);
        maxGpu = Math.max(maxGpu, Number(s.metric.gpu));
      }
      for (const s of vals.data.result) {
        const c = cells.get(s.metric.Hostname + "\u0000" + s.metric.gpu);
        if (c) c.v = parseFloat(s.value[1]);
      }
      const firing = new Set(alertList.filter((a) => a.state === "firing").map((a) => a.labels.Hostname + "\u0000" + (a.labels.gpu || "")));
      const hosts = [...hostSet].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
      // built as one HTML string (thousands of cells: one parse instead of
      // thousands of createElement calls), events delegated to the grid
      const e = (x) => String(x).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
      const hm = h("div", { class: "heatmap", id: "heatmap", style: { gridTemplateColumns: `minmax(80px, 180px) repeat(${maxGpu + 1}, minmax(22px, 1fr))` } });
      let max = coloring.max;
      if (coloring.unit === "") for (const c of cells.values()) if (c.v !== null) max = Math.max(max, c.v);
      const html = ["<div></div>"];
      for (let g = 0; g <= maxGpu; g++) html.push(`<div class="hm-head">${g}</div>`);
      for (const host of hosts) {
        html.push(`<a class="hm-row" href="${e(link("node", { node: host }))}" title="${e(host)}">${e(host)}</a>`);
        for (let g = 0; g <= maxGpu; g++) {
          const c = cells.get(host + "\u0000" + g);
          if (!c) { html.push("<div></div>"); continue; }
          const color = ramp(c.v === null ? null : (c.v - coloring.min) / (max - coloring.min));
          const alerting = firing.has(host + "\u0000" + g) || firing.has(host + "\u0000");
          const title = `${host} GPU ${g} (${c.model || "?"}): ${c.v === null ? "no current data (seen in the last 10 minutes)" : fmt(c.v, coloring.unit)}${alerting ? " · alert firing" : ""}`;
          html.push(`<div class="hm-cell${alerting ? " alerting" : ""}"${color ? ` style="background:${color}"` : ""} data-host="${e(host)}" data-gpu="${g}" data-value="${c.v === null ? "" : c.v}" title="${e(title)}">${c.v === null ? "" : Math.round(c.v)}</div>`);
        }
      }
      hm.innerHTML = html.join("");
      hm.addEventListener("click", (ev) => {
        const cell = ev.target.closest(".hm-cell");
        if (cell) location.hash = link("node", { node: cell.dataset.host, gpu: cell.dataset.gpu });
      });
      clear(hmBody).append(hm, h("div", { class: "hm-legend" }, fmt(coloring.min, coloring.unit), h("span", { class: "bar" }), fmt(max, coloring.unit),
        h("span", {}, ` · ${cells.size} GPUs on ${hosts.length} nodes · red outline: alert firing · grey: no current data`)));
    }

    // the tiles and the heatmap load at once; both wait for the alerts
    return async function refresh() {
      const { start: s, end: e } = timeRange();
      scrub.min = String(Math.floor(s));
      scrub.max = String(Math.floor(e));
      const t = param("at", "") ? scrubTime() : e;
      if (!param("at", "")) scrub.value = String(Math.floor(e));
      const alertsP = alertCounts(inFilter);
      await Promise.all([headlines(alertsP), heatmap(t, alertsP)]);
    };
  }
}
