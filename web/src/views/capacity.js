// web/src/views/capacity.js -- capacity: GPUs allocated (running a
// process) vs used (utilisation) by a workload label, idle GPUs, and the
// fleet's trends with a predict_linear projection. Variable: by (the
// workload label: slurm_job_id, pod_uid, container_id, command).
import { h, clear } from "../util.js";
import { api } from "../api.js";
import { state, param, setParams, timeRange, link } from "../state.js";
import { chart } from "../chart.js";
import { stat, scalar, table, num } from "./common.js";
import { Q, expr as qexpr, pick } from "../queries.js";

const C = Q.capacity;

const BY = ["slurm_job_id", "pod_uid", "container_id", "command"];
const IDLE = 5; // % utilisation under which a GPU counts as idle

export function render(main, ctx) {
  const by = BY.includes(param("by", "")) ? param("by", "") : "command";
  ctx.vars.append(h("label", {}, "Allocation by", h("select", { id: "by-select", onchange: (e) => setParams({ by: e.target.value }) },
    BY.map((b) => h("option", { value: b, selected: b === by }, b)))));
  const stats = h("div", { class: "stats", id: "capacity-stats" });
  const alloc = h("section", { class: "panel section", id: "alloc" }, h("div", { class: "muted" }, "loading"));
  const idle = h("section", { class: "panel section", id: "idle" }, h("div", { class: "muted" }, "loading"));
  const grid = h("div", { class: "grid" });
  main.append(stats, h("div", { class: "grid" }, alloc, idle), h("h2", {}, "Trends"), grid);
  grid.append(
    chart({ title: "GPUs busy vs idle", unit: "", yMin: 0, queries: [
      { expr: qexpr(C.busy, { idle: IDLE }), legend: () => "busy" },
      { expr: qexpr(C.idle, { idle: IDLE }), legend: () => "idle" },
      { expr: qexpr(C.allocated), legend: () => "allocated" }] }).el,
    chart({ title: "Fleet GPU memory used (dashed: projected)", unit: "MiB", yMin: 0, queries: [{ expr: qexpr(C.fbUsed), legend: () => "used" }],
      thresholds: async (t) => {
        const r = await api.query(qexpr(C.fbTotal), t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "capacity", level: "crit" }] : [];
      },
      projection: { queries: [{ expr: (hz) => qexpr(C.fbProjected, { hz }), legend: () => "used" }] } }).el,
    chart({ title: "Fleet utilisation (dashed: projected)", unit: "%", yMin: 0, yMax: 100,
      queries: [{ ...pick(C.util, {}, true, state.recorded), legend: () => "average" }],
      projection: { queries: [{ expr: (hz) => qexpr(C.utilProjected, { hz }), legend: () => "average" }] } }).el,
    chart({ title: "Fleet power", unit: "W", yMin: 0, queries: [{ ...pick(C.power, {}, true, state.recorded), legend: () => "total" }],
      thresholds: async (t) => {
        const r = await api.query(qexpr(C.powerLimit), t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "sum of power limits", level: "warn" }] : [];
      } }).el);
  async function load() {
    const { end } = timeRange();
    const [total, idleN, allocN] = await Promise.all([scalar(qexpr(C.gpus), end),
      scalar(qexpr(C.idle, { idle: IDLE }), end), scalar(qexpr(C.allocated), end)]);
    clear(stats).append(stat("GPUs", total === null ? "-" : String(total), "", "ok"),
      stat("Allocated (running a process)", allocN === null ? "0" : String(allocN), "", "ok"),
      stat(`Idle (< ${IDLE}% busy)`, idleN === null ? "0" : String(idleN), "", idleN ? "warn" : "ok"));
    const a = await api.query(qexpr(C.allocBy, { by }), end);
    const u = await api.query(qexpr(C.useBy, { by }), end);
    const used = new Map((u.data ? u.data.result : []).map((s) => [s.metric[by] || "", parseFloat(s.value[1])]));
    clear(alloc).append(h("h3", {}, `Allocation vs use by ${by}`), a.error ? h("p", { class: "error" }, a.error)
      : !a.data.result.length ? h("p", { class: "muted" }, "No GPU processes reported (kelvin_gpu_process_memory_bytes).")
        : table([by, "GPUs allocated", "avg utilisation"], a.data.result.map((s) => [s.metric[by] || "(none)", num(parseFloat(s.value[1]), ""), num(used.get(s.metric[by] || ""), "%")])));
    const i = await api.query(qexpr(C.idleList, { idle: IDLE }), end);
    clear(idle).append(h("h3", {}, "Idle GPUs"), i.error ? h("p", { class: "error" }, i.error)
      : !i.data.result.length ? h("p", { class: "muted" }, "No idle GPU.")
        : table(["GPU", "Utilisation"], i.data.result.slice(0, 200).map((s) => [h("a", { href: link("node", { node: s.metric.Hostname, gpu: s.metric.gpu }) }, `${s.metric.Hostname} GPU ${s.metric.gpu}`), num(parseFloat(s.value[1]), "%")])));
  }
  return { ready: load(), refresh: load };
}
