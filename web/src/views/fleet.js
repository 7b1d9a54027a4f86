// web/src/views/fleet.js -- the fleet overview: headline tiles coloured by
// threshold, a heatmap with one cell per GPU (rows: Hostname, columns: GPU
// index) for a chosen metric at a chosen time (the scrubber: instant
// queries at that time), and fleet-wide time series from the recording
// rules. Clicking a cell opens that node. Variables: color, at.
import { h, clear, fmt, fmtTime, ramp, level, debounce } from "../util.js";
import { api } from "../api.js";
import { param, setParams, timeRange, link } from "../state.js";
import { chart } from "../chart.js";
import { stat, alertCounts, scalar, LIMITS } from "./common.js";

// Heatmap colourings: PromQL giving one value per (Hostname, gpu), its
// unit and the colour scale's [min, max].
export const COLORINGS = {
  util: { name: "Utilisation", expr: "DCGM_FI_DEV_GPU_UTIL", unit: "%", min: 0, max: 100 },
  temp: { name: "Die temperature", expr: "DCGM_FI_DEV_GPU_TEMP", unit: "C", min: 30, max: 90 },
  memtemp: { name: "Memory junction temperature", expr: "DCGM_FI_DEV_MEMORY_TEMP", unit: "C", min: 30, max: 95 },
  power: { name: "Power", expr: "DCGM_FI_DEV_POWER_USAGE", unit: "W", min: 0, max: 700 },
  mem: { name: "Memory used", expr: "100 * (instance_gpu:DCGM_FI_DEV_FB_USED:ratio or DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))", unit: "%", min: 0, max: 100 },
  xid: { name: "XID errors (1h)", expr: "sum by (Hostname, gpu) (increase(kelvin_gpu_xid_errors_total[1h])) or sum by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP * 0)", unit: "", min: 0, max: 5 },
  ecc: { name: "ECC errors (volatile)", expr: "sum by (Hostname, gpu) (DCGM_FI_DEV_ECC_SBE_VOL_TOTAL + DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)", unit: "", min: 0, max: 10 },
};

// Fleet-wide queries (recording rules first).
export const FLEET_QUERIES = {
  targetsUp: "sum(up)",
  targets: "count(up)",
  nodes: "count(count by (Hostname) (DCGM_FI_DEV_GPU_TEMP))",
  gpus: "sum(job:DCGM_FI_DEV_GPU_TEMP:count) or count(DCGM_FI_DEV_GPU_TEMP)",
  lost: "sum(kelvin_gpu_lost)",
  util: "avg(job:DCGM_FI_DEV_GPU_UTIL:avg) or avg(DCGM_FI_DEV_GPU_UTIL)",
  power: "sum(job:DCGM_FI_DEV_POWER_USAGE:sum) or sum(DCGM_FI_DEV_POWER_USAGE)",
  temp: "max(job:DCGM_FI_DEV_GPU_TEMP:max) or max(DCGM_FI_DEV_GPU_TEMP)",
  memtemp: "max(job:DCGM_FI_DEV_MEMORY_TEMP:max) or max(DCGM_FI_DEV_MEMORY_TEMP)",
  memratio: "100 * (avg(job:DCGM_FI_DEV_FB_USED:ratio) or avg(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)))",
};

export function render(main, ctx) {
  const stats = h("div", { class: "stats", id: "fleet-stats" });
  const hmPanel = h("section", { class: "panel", id: "heatmap-panel" });
  const grid = h("div", { class: "grid" });
  main.append(stats, hmPanel, h("h2", {}, "Fleet over time"), grid);

  const colorSel = h("select", { id: "hm-color", onchange: (e) => setParams({ color: e.target.value }) },
    Object.entries(COLORINGS).map(([k, c]) => h("option", { value: k, selected: k === param("color", "util") }, c.name)));
  ctx.vars.append(h("label", {}, "Heatmap colour", colorSel));

  const alertsSel = "";
  const charts = [
    chart({ title: "GPU utilisation", unit: "%", yMin: 0, yMax: 100, alerts: alertsSel, queries: [
      { expr: "avg(job:DCGM_FI_DEV_GPU_UTIL:avg) or avg(DCGM_FI_DEV_GPU_UTIL)", legend: () => "average" },
      { expr: "max(DCGM_FI_DEV_GPU_UTIL)", legend: () => "max" },
      { expr: "min(DCGM_FI_DEV_GPU_UTIL)", legend: () => "min" }] }),
    chart({ title: "Temperature", unit: "C", alerts: alertsSel,
      thresholds: [{ value: LIMITS.dieCrit, label: "die limit (H100)", level: "crit" }],
      queries: [
        { expr: "max(job:DCGM_FI_DEV_GPU_TEMP:max) or max(DCGM_FI_DEV_GPU_TEMP)", legend: () => "hottest die" },
        { expr: "avg(DCGM_FI_DEV_GPU_TEMP)", legend: () => "average die" },
        { expr: "max(job:DCGM_FI_DEV_MEMORY_TEMP:max) or max(DCGM_FI_DEV_MEMORY_TEMP)", legend: () => "hottest memory" }] }),
    chart({ title: "Power", unit: "W", yMin: 0, alerts: alertsSel, queries: [
      { expr: "sum(job:DCGM_FI_DEV_POWER_USAGE:sum) or sum(DCGM_FI_DEV_POWER_USAGE)", legend: () => "total" }] }),
    chart({ title: "GPU memory used", unit: "%", yMin: 0, yMax: 100, alerts: alertsSel, queries: [
      { expr: FLEET_QUERIES.memratio, legend: () => "average" }] }),
  ];
  for (const c of charts) grid.append(c.el);

  async function headlines() {
    const { end } = timeRange();
    const q = {};
    const keys = Object.keys(FLEET_QUERIES);
    const vals = await Promise.all(keys.map((k) => scalar(FLEET_QUERIES[k], end)));
    keys.forEach((k, i) => (q[k] = vals[i]));
    const a = await alertCounts();
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
  scrub.addEventListener("change", debounce(() => setParams({ at: scrub.value }, true) || heatmap(Number(scrub.value)), 150));

  let hmSeq = 0;
  async function heatmap(t, alertList) {
    const seq = ++hmSeq;
    timeLabel.textContent = fmtTime(t * 1000);
    const [pres, vals] = await Promise.all([
      api.query("group by (Hostname, gpu, modelName) (last_over_time(DCGM_FI_DEV_GPU_TEMP[10m]))", t),
      api.query(coloring.expr, t)]);
    if (seq !== hmSeq) return;
    if (pres.error || vals.error) {
      clear(hmBody).append(h("p", { class: "error" }, pres.error || vals.error));
      return;
    }
    const cells = new Map();
    const nodes = new Set();
    let maxGpu = -1;
    for (const s of pres.data.result) {
      const key = s.metric.Hostname + "\u0000" + s.metric.gpu;
      cells.set(key, { host: s.metric.Hostname, gpu: s.metric.gpu, model: s.metric.modelName, v: null });
      nodes.add(s.metric.Hostname);
      maxGpu = Math.max(maxGpu, Number(s.metric.gpu));
    }
    for (const s of vals.data.result) {
      const c = cells.get(s.metric.Hostname + "\u0000" + s.metric.gpu);
      if (c) c.v = parseFloat(s.value[1]);
    }
    const firing = new Set((alertList || []).filter((a) => a.state === "firing").map((a) => a.labels.Hostname + "\u0000" + (a.labels.gpu || "")));
    const hosts = [...nodes].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const hm = h("div", { class: "heatmap", id: "heatmap", style: { gridTemplateColumns: `minmax(80px, 180px) repeat(${maxGpu + 1}, minmax(22px, 1fr))` } });
    hm.append(h("div", {}), ...Array.from({ length: maxGpu + 1 }, (_, g) => h("div", { class: "hm-head" }, String(g))));
    let max = coloring.max;
    if (coloring.unit === "") for (const c of cells.values()) if (c.v !== null) max = Math.max(max, c.v);
    for (const host of hosts) {
      hm.append(h("a", { class: "hm-row", href: link("node", { node: host }), title: host }, host));
      for (let g = 0; g <= maxGpu; g++) {
        const c = cells.get(host + "\u0000" + g);
        if (!c) { hm.append(h("div", {})); continue; }
        const color = ramp(c.v === null ? null : (c.v - coloring.min) / (max - coloring.min));
        const alerting = firing.has(host + "\u0000" + g) || firing.has(host + "\u0000");
        hm.append(h("div", {
          class: "hm-cell" + (alerting ? " alerting" : ""),
          style: color ? { background: color } : {},
          dataset: { host, gpu: String(g), value: c.v === null ? "" : String(c.v) },
          title: `${host} GPU ${g} (${c.model || "?"}): ${c.v === null ? "no current data (seen in the last 10 minutes)" : fmt(c.v, coloring.unit)}${alerting ? " · alert firing" : ""}`,
          onclick: () => { location.hash = link("node", { node: host, gpu: String(g) }); },
        }, c.v === null ? "" : Math.round(c.v)));
      }
    }
    clear(hmBody).append(hm, h("div", { class: "hm-legend" }, fmt(coloring.min, coloring.unit), h("span", { class: "bar" }), fmt(max, coloring.unit),
      h("span", {}, ` · ${cells.size} GPUs on ${hosts.length} nodes · red outline: alert firing · grey: no current data`)));
  }

  async function all() {
    const a = await headlines();
    const { start: s, end: e } = timeRange();
    scrub.min = String(Math.floor(s));
    scrub.max = String(Math.floor(e));
    const t = param("at", "") ? scrubTime() : e;
    if (!param("at", "")) scrub.value = String(Math.floor(e));
    await heatmap(t, a.list);
  }
  all();
  return { refresh: all };
}
