// web/src/views/node.js -- one node: per-GPU charts (utilisation, SM and
// tensor activity, memory used vs total, die and memory-junction
// temperature with the alert pack's thresholds and a predict_linear
// projection, power vs limit, clocks), throttle reasons as a timeline,
// errors (XID, ECC, PCIe, NVLink) as event markers, the host's CPU,
// memory, network and disk, and the processes on each GPU. Firing alerts
// of the node are shown on every chart: alerts of one GPU (a gpu or UUID
// label) as a strip in that GPU's colour, node-wide ones shading the chart.
// Variables: node (Hostname), gpu (one index or all). The expressions live
// in queries.js.
// The host's metrics are found through the scrape target whose labels the
// node's GPU series carry (a fleet serves many nodes on one address).
import { h, clear, fmt, selector, fmtTime } from "../util.js";
import { api } from "../api.js";
import { param, setParams, timeRange, stepFor, rateWindow } from "../state.js";
import { chart, timeline, segments } from "../chart.js";
import { table, num, labelChips } from "./common.js";
import { Q, expr as qexpr, esc } from "../queries.js";

export function render(main, ctx) {
  let alive = true;
  const wrap = h("div", {});
  main.append(wrap);
  // With the node in the URL the panels start at once; the node list (label
  // values over the whole fleet) and the GPU list fill the variables
  // alongside. Without one, the first node of the list is shown.
  const ready = (async () => {
    const valsP = api.labelValues("Hostname", "DCGM_FI_DEV_GPU_TEMP");
    let node = param("node", "");
    const gpu = param("gpu", "");
    if (!node) {
      const vals = await valsP;
      node = (vals.data || []).slice().sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))[0] || "";
      if (!alive) return;
      if (!node) {
        wrap.append(h("p", { class: "muted" }, vals.error || "No GPU nodes (no DCGM_FI_DEV_GPU_TEMP series) in storage yet."));
        return;
      }
    }
    const varsP = (async () => {
      const [vals, gpus] = await Promise.all([valsP, api.query(qexpr(Q.node.gpus, { node: `Hostname="${esc(node)}"` }), timeRange().end)]);
      if (!alive) return;
      const hosts = (vals.data || []).slice().sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
      const nodeSel = h("select", { id: "node-select", onchange: (e) => setParams({ node: e.target.value, gpu: null }) },
        hosts.map((x) => h("option", { value: x, selected: x === node }, x)));
      const gpuList = (gpus.data ? gpus.data.result : []).map((s) => s.metric).sort((a, b) => Number(a.gpu) - Number(b.gpu));
      const gpuSel = h("select", { id: "gpu-select", onchange: (e) => setParams({ gpu: e.target.value || null }) },
        h("option", { value: "" }, "all GPUs"), gpuList.map((m) => h("option", { value: m.gpu, selected: m.gpu === gpu }, `GPU ${m.gpu}`)));
      ctx.vars.append(h("label", {}, "Node", nodeSel), h("label", {}, "GPU", gpuSel),
        h("span", { class: "muted" }, gpuList.length ? `${gpuList.length} × ${gpuList[0].modelName || "GPU"}` : ""));
    })();
    await Promise.all([build(wrap, node, gpu), varsP]);
  })();
  return { ready, destroy: () => { alive = false; } };
}

async function hostSelector(node) {
  const [t, s] = await Promise.all([api.targets(), api.query(qexpr(Q.node.target, { node: `Hostname="${esc(node)}"` }))]);
  if (!t.data || !s.data || !s.data.result.length) return null;
  const m = s.data.result[0].metric;
  for (const tg of t.data.activeTargets) {
    const ls = tg.labels;
    if (Object.keys(ls).length && Object.entries(ls).every(([k, v]) => m[k] === v)) return ls;
  }
  return m.instance ? { job: m.job, instance: m.instance } : null;
}

// Resolves when the panels are built (the charts load as they show).
function build(wrap, node, gpu) {
  const sel = `Hostname="${esc(node)}"${gpu !== "" ? `,gpu="${esc(gpu)}"` : ""}`;
  const N = Q.node, v = { sel };
  const q = (entry, extra) => qexpr(entry, { ...v, ...extra });
  const g = (m) => `GPU ${m.gpu}`;
  const alerts = `Hostname="${esc(node)}"`;
  const grid = h("div", { class: "grid" });
  const events = h("section", { class: "panel", id: "throttle-panel" }, h("h3", {}, "Throttle reasons (clock events)"), h("div", { class: "muted" }, "loading"));
  const procs = h("section", { class: "panel", id: "procs-panel" }, h("h3", {}, "Processes on the GPUs"), h("div", { class: "muted" }, "loading"));
  const hostGrid = h("div", { class: "grid" });
  wrap.append(h("h2", {}, node, gpu !== "" ? ` · GPU ${gpu}` : ""), grid,
    h("div", { class: "section" }, events), h("div", { class: "section" }, procs),
    h("h2", {}, "Host"), hostGrid);
  // thresholds from the pack's per-GPU limits (max over the node's GPUs)
  const thr = (entry, warnOff, critOff, what) => async (t) => {
    const r = await api.query(q(entry), t);
    const lim = r.data && r.data.result.length ? parseFloat(r.data.result[0].value[1]) : null;
    if (lim === null) return [];
    return [{ value: lim - warnOff, label: `${what} warning (limit - ${warnOff})`, level: "warn" },
      { value: lim - critOff, label: `${what} critical (limit${critOff ? " - " + critOff : ""})`, level: "crit" }];
  };
  const panels = [
    chart({ title: "GPU utilisation", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: q(N.util), legend: g }] }),
    chart({ title: "SM active", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: q(N.sm), legend: g }] }),
    chart({ title: "Tensor pipe active", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: q(N.tensor), legend: g }] }),
    chart({ title: "GPU memory used (dashed: projected)", unit: "MiB", yMin: 0, alerts,
      thresholds: async (t) => {
        const r = await api.query(q(N.fbTotal), t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "total", level: "crit" }] : [];
      },
      queries: [{ expr: q(N.fbUsed), legend: g }],
      projection: { queries: [{ expr: (hz) => q(N.fbProjected, { hz }), legend: g }] } }),
    chart({ title: "GPU die temperature (dashed: projected)", unit: "C", alerts,
      thresholds: thr(N.tempLimit, 5, 0, "die"),
      queries: [{ expr: q(N.temp), legend: g }],
      projection: { queries: [{ expr: (hz) => q(N.tempProjected, { hz }), legend: g }] } }),
    chart({ title: "Memory junction (HBM) temperature (dashed: projected)", unit: "C", alerts,
      thresholds: thr(N.memTempLimit, 10, 3, "HBM"),
      queries: [{ expr: q(N.memTemp), legend: g }],
      projection: { queries: [{ expr: (hz) => q(N.memTempProjected, { hz }), legend: g }] } }),
    chart({ title: "Power vs limit", unit: "W", yMin: 0, alerts,
      thresholds: async (t) => {
        const r = await api.query(q(N.powerLimit), t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "power limit", level: "crit" }] : [];
      },
      queries: [{ expr: q(N.power), legend: g }] }),
    chart({ title: "SM clock", unit: "MHz", yMin: 0, alerts, queries: [{ expr: q(N.smClock), legend: g }] }),
    chart({ title: "Memory clock", unit: "MHz", yMin: 0, alerts, queries: [{ expr: q(N.memClock), legend: g }] }),
    chart({ title: "Errors (events: increase per step)", unit: "", yMin: 0, alerts, queries: [
      { expr: (st) => q(N.xid, { step: st + "s" }), legend: (m) => `XID GPU ${m.gpu}`, points: true },
      { expr: (st) => q(N.eccSbe, { step: st + "s" }), legend: (m) => `ECC SBE GPU ${m.gpu}`, points: true },
      { expr: (st) => q(N.eccDbe, { step: st + "s" }), legend: (m) => `ECC DBE GPU ${m.gpu}`, points: true },
      { expr: (st) => q(N.pcie, { step: st + "s" }), legend: (m) => `PCIe replay GPU ${m.gpu}`, points: true },
      { expr: (st) => q(N.nvlink, { step: st + "s" }), legend: (m) => `NVLink GPU ${m.gpu}`, points: true }] }),
  ];
  for (const p of panels) grid.append(p.el);
  return Promise.all([throttle(events, sel), processes(procs, sel), hostSelector(node).then((ls) => {
    if (!ls) {
      hostGrid.append(h("p", { class: "muted" }, "The node's host metrics were not found (no scrape target matches its GPU series)."));
      return;
    }
    const hs = selector(ls).slice(1, -1);
    const hq = (entry, st) => qexpr(entry, { host: hs, rate: st === undefined ? "" : rateWindow(st) });
    const hp = [
      chart({ title: "CPU busy", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: (st) => hq(N.cpu, st), legend: () => "busy" }] }),
      chart({ title: "Memory", unit: "bytes", yMin: 0, alerts, queries: [
        { expr: hq(N.memUsed), legend: () => "used" },
        { expr: hq(N.memTotal), legend: () => "total", dash: [4, 4] }] }),
      chart({ title: "Network", unit: "Bps", yMin: 0, alerts, queries: [
        { expr: (st) => hq(N.netRx, st), legend: () => "receive" },
        { expr: (st) => hq(N.netTx, st), legend: () => "transmit" }] }),
      chart({ title: "Disk", unit: "Bps", yMin: 0, alerts, queries: [
        { expr: (st) => hq(N.diskRead, st), legend: () => "read" },
        { expr: (st) => hq(N.diskWritten, st), legend: () => "written" }] }),
    ];
    for (const p of hp) hostGrid.append(p.el);
  })]);
}

async function throttle(el, sel) {
  const { start, end } = timeRange();
  const step = stepFor(start, end, el.clientWidth || 900);
  const r = await api.range(qexpr(Q.node.throttle, { sel }), start, end, step);
  const rows = [];
  for (const s of (r.data ? r.data.result : [])) {
    const segs = segments(s, step, () => (/thermal|power_brake|hw_slowdown/.test(s.metric.reason || "") ? "crit" : "warn"));
    if (segs.length) rows.push({ label: `GPU ${s.metric.gpu} · ${(s.metric.reason || "?").replace(/_/g, " ")}`, segs });
  }
  rows.sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true }));
  clear(el).append(h("h3", {}, "Throttle reasons (clock events)"),
    r.error ? h("p", { class: "error" }, r.error) : timeline(rows, start, end, "No clock event reason was active in this time range."));
}

async function processes(el, sel) {
  const { end } = timeRange();
  const r = await api.query(qexpr(Q.node.processes, { sel }), end);
  const rows = (r.data ? r.data.result : []).sort((a, b) => Number(a.metric.gpu) - Number(b.metric.gpu));
  clear(el).append(h("h3", {}, "Processes on the GPUs ", h("span", { class: "unit" }, "at " + fmtTime(end * 1000))),
    r.error ? h("p", { class: "error" }, r.error)
      : !rows.length ? h("p", { class: "muted" }, "No GPU processes reported (kelvin_gpu_process_memory_bytes).")
        : table(["GPU", "PID", "Command", "Job / pod", "Memory"], rows.map((s) => [s.metric.gpu, s.metric.pid || "", s.metric.command || "",
          labelChips(Object.fromEntries(Object.entries(s.metric).filter(([k]) => /slurm_job_id|pod_uid|container_id/.test(k)))), num(parseFloat(s.value[1]), "bytes")])));
}

export { fmt };
