// web/src/views/node.js -- one node: per-GPU charts (utilisation, SM and
// tensor activity, memory used vs total, die and memory-junction
// temperature with the alert pack's thresholds and a predict_linear
// projection, power vs limit, clocks), throttle reasons as a timeline,
// errors (XID, ECC, PCIe, NVLink) as event markers, the host's CPU,
// memory, network and disk, and the processes on each GPU. Firing alerts
// of the node are shaded on every chart.
// Variables: node (Hostname), gpu (one index or all).
// The host's metrics are found through the scrape target whose labels the
// node's GPU series carry (a fleet serves many nodes on one address).
import { h, clear, fmt, selector, fmtTime } from "../util.js";
import { api } from "../api.js";
import { param, setParams, timeRange, stepFor, rateWindow } from "../state.js";
import { chart, timeline, segments } from "../chart.js";
import { table, num, labelChips } from "./common.js";

const esc = (v) => String(v).replace(/\\/g, "\\\\").replace(/"/g, '\\"');

export function render(main, ctx) {
  let alive = true;
  const wrap = h("div", {});
  main.append(wrap);
  (async () => {
    const vals = await api.labelValues("Hostname", "DCGM_FI_DEV_GPU_TEMP");
    if (!alive) return;
    const hosts = (vals.data || []).slice().sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    if (!hosts.length) {
      wrap.append(h("p", { class: "muted" }, vals.error || "No GPU nodes (no DCGM_FI_DEV_GPU_TEMP series) in storage yet."));
      return;
    }
    const node = param("node", hosts[0]);
    const gpu = param("gpu", "");
    const nodeSel = h("select", { id: "node-select", onchange: (e) => setParams({ node: e.target.value, gpu: null }) },
      hosts.map((x) => h("option", { value: x, selected: x === node }, x)));
    const gpus = await api.query(`group by (gpu, UUID, modelName) (DCGM_FI_DEV_GPU_TEMP{Hostname="${esc(node)}"})`, timeRange().end);
    if (!alive) return;
    const gpuList = (gpus.data ? gpus.data.result : []).map((s) => s.metric).sort((a, b) => Number(a.gpu) - Number(b.gpu));
    const gpuSel = h("select", { id: "gpu-select", onchange: (e) => setParams({ gpu: e.target.value || null }) },
      h("option", { value: "" }, "all GPUs"), gpuList.map((m) => h("option", { value: m.gpu, selected: m.gpu === gpu }, `GPU ${m.gpu}`)));
    ctx.vars.append(h("label", {}, "Node", nodeSel), h("label", {}, "GPU", gpuSel),
      h("span", { class: "muted" }, gpuList.length ? `${gpuList.length} × ${gpuList[0].modelName || "GPU"}` : ""));
    build(wrap, node, gpu);
  })();
  return { destroy: () => { alive = false; } };
}

async function hostSelector(node) {
  const [t, s] = await Promise.all([api.targets(), api.query(`DCGM_FI_DEV_GPU_TEMP{Hostname="${esc(node)}"}`)]);
  if (!t.data || !s.data || !s.data.result.length) return null;
  const m = s.data.result[0].metric;
  for (const tg of t.data.activeTargets) {
    const ls = tg.labels;
    if (Object.keys(ls).length && Object.entries(ls).every(([k, v]) => m[k] === v)) return ls;
  }
  return m.instance ? { job: m.job, instance: m.instance } : null;
}

function build(wrap, node, gpu) {
  const sel = `Hostname="${esc(node)}"${gpu !== "" ? `,gpu="${esc(gpu)}"` : ""}`;
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
  const thr = (metric, warnOff, critOff, what) => async (t) => {
    const r = await api.query(`max(instance_gpu:${metric}:max_operating{${sel}})`, t);
    const lim = r.data && r.data.result.length ? parseFloat(r.data.result[0].value[1]) : null;
    if (lim === null) return [];
    return [{ value: lim - warnOff, label: `${what} warning (limit - ${warnOff})`, level: "warn" },
      { value: lim - critOff, label: `${what} critical (limit${critOff ? " - " + critOff : ""})`, level: "crit" }];
  };
  const panels = [
    chart({ title: "GPU utilisation", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: `DCGM_FI_DEV_GPU_UTIL{${sel}}`, legend: g }] }),
    chart({ title: "SM active", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: `100 * (DCGM_FI_PROF_SM_ACTIVE{${sel}} or kelvin_gpu_sm_active_ratio{${sel}})`, legend: g }] }),
    chart({ title: "Tensor pipe active", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: `100 * (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{${sel}} or kelvin_gpu_tensor_active_ratio{${sel}})`, legend: g }] }),
    chart({ title: "GPU memory used (dashed: projected)", unit: "MiB", yMin: 0, alerts,
      thresholds: async (t) => {
        const r = await api.query(`max(DCGM_FI_DEV_FB_USED{${sel}} + DCGM_FI_DEV_FB_FREE{${sel}})`, t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "total", level: "crit" }] : [];
      },
      queries: [{ expr: `DCGM_FI_DEV_FB_USED{${sel}}`, legend: g }],
      projection: { queries: [{ expr: (hz) => `predict_linear(DCGM_FI_DEV_FB_USED{${sel}}[30m], ${hz})`, legend: g }] } }),
    chart({ title: "GPU die temperature (dashed: projected)", unit: "C", alerts,
      thresholds: thr("DCGM_FI_DEV_GPU_TEMP", 5, 0, "die"),
      queries: [{ expr: `DCGM_FI_DEV_GPU_TEMP{${sel}}`, legend: g }],
      projection: { queries: [{ expr: (hz) => `predict_linear(DCGM_FI_DEV_GPU_TEMP{${sel}}[30m], ${hz})`, legend: g }] } }),
    chart({ title: "Memory junction (HBM) temperature (dashed: projected)", unit: "C", alerts,
      thresholds: thr("DCGM_FI_DEV_MEMORY_TEMP", 10, 3, "HBM"),
      queries: [{ expr: `DCGM_FI_DEV_MEMORY_TEMP{${sel}}`, legend: g }],
      projection: { queries: [{ expr: (hz) => `predict_linear(DCGM_FI_DEV_MEMORY_TEMP{${sel}}[30m], ${hz})`, legend: g }] } }),
    chart({ title: "Power vs limit", unit: "W", yMin: 0, alerts,
      thresholds: async (t) => {
        const r = await api.query(`max(kelvin_gpu_power_limit_watts{${sel}})`, t);
        return r.data && r.data.result.length ? [{ value: parseFloat(r.data.result[0].value[1]), label: "power limit", level: "crit" }] : [];
      },
      queries: [{ expr: `DCGM_FI_DEV_POWER_USAGE{${sel}}`, legend: g }] }),
    chart({ title: "SM clock", unit: "MHz", yMin: 0, alerts, queries: [{ expr: `DCGM_FI_DEV_SM_CLOCK{${sel}}`, legend: g }] }),
    chart({ title: "Memory clock", unit: "MHz", yMin: 0, alerts, queries: [{ expr: `DCGM_FI_DEV_MEM_CLOCK{${sel}}`, legend: g }] }),
    chart({ title: "Errors (events: increase per step)", unit: "", yMin: 0, alerts, queries: [
      { expr: (st) => `sum by (gpu) (increase(kelvin_gpu_xid_errors_total{${sel}}[${st}s])) > 0`, legend: (m) => `XID GPU ${m.gpu}`, points: true },
      { expr: (st) => `sum by (gpu) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{${sel}}[${st}s])) > 0`, legend: (m) => `ECC SBE GPU ${m.gpu}`, points: true },
      { expr: (st) => `sum by (gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{${sel}}[${st}s])) > 0`, legend: (m) => `ECC DBE GPU ${m.gpu}`, points: true },
      { expr: (st) => `sum by (gpu) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{${sel}}[${st}s])) > 0`, legend: (m) => `PCIe replay GPU ${m.gpu}`, points: true },
      { expr: (st) => `sum by (gpu) (increase(kelvin_gpu_nvlink_errors_total{${sel}}[${st}s])) > 0`, legend: (m) => `NVLink GPU ${m.gpu}`, points: true }] }),
  ];
  for (const p of panels) grid.append(p.el);
  throttle(events, sel);
  processes(procs, sel);
  hostSelector(node).then((ls) => {
    if (!ls) {
      hostGrid.append(h("p", { class: "muted" }, "The node's host metrics were not found (no scrape target matches its GPU series)."));
      return;
    }
    const hs = selector(ls).slice(1, -1);
    const hp = [
      chart({ title: "CPU busy", unit: "%", yMin: 0, yMax: 100, alerts, queries: [{ expr: (st) => `100 * (1 - avg(rate(node_cpu_seconds_total{${hs},mode="idle"}[${rateWindow(st)}])))`, legend: () => "busy" }] }),
      chart({ title: "Memory", unit: "bytes", yMin: 0, alerts, queries: [
        { expr: `node_memory_MemTotal_bytes{${hs}} - node_memory_MemAvailable_bytes{${hs}}`, legend: () => "used" },
        { expr: `node_memory_MemTotal_bytes{${hs}}`, legend: () => "total", dash: [4, 4] }] }),
      chart({ title: "Network", unit: "Bps", yMin: 0, alerts, queries: [
        { expr: (st) => `sum(rate(node_network_receive_bytes_total{${hs},device!="lo"}[${rateWindow(st)}]))`, legend: () => "receive" },
        { expr: (st) => `sum(rate(node_network_transmit_bytes_total{${hs},device!="lo"}[${rateWindow(st)}]))`, legend: () => "transmit" }] }),
      chart({ title: "Disk", unit: "Bps", yMin: 0, alerts, queries: [
        { expr: (st) => `sum(rate(node_disk_read_bytes_total{${hs}}[${rateWindow(st)}]))`, legend: () => "read" },
        { expr: (st) => `sum(rate(node_disk_written_bytes_total{${hs}}[${rateWindow(st)}]))`, legend: () => "written" }] }),
    ];
    for (const p of hp) hostGrid.append(p.el);
  });
}

async function throttle(el, sel) {
  const { start, end } = timeRange();
  const step = stepFor(start, end, el.clientWidth || 900);
  const r = await api.range(`kelvin_gpu_clock_event_active{${sel}} > 0`, start, end, step);
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
  const r = await api.query(`kelvin_gpu_process_memory_bytes{${sel}}`, end);
  const rows = (r.data ? r.data.result : []).sort((a, b) => Number(a.metric.gpu) - Number(b.metric.gpu));
  clear(el).append(h("h3", {}, "Processes on the GPUs ", h("span", { class: "unit" }, "at " + fmtTime(end * 1000))),
    r.error ? h("p", { class: "error" }, r.error)
      : !rows.length ? h("p", { class: "muted" }, "No GPU processes reported (kelvin_gpu_process_memory_bytes).")
        : table(["GPU", "PID", "Command", "Job / pod", "Memory"], rows.map((s) => [s.metric.gpu, s.metric.pid || "", s.metric.command || "",
          labelChips(Object.fromEntries(Object.entries(s.metric).filter(([k]) => /slurm_job_id|pod_uid|container_id/.test(k)))), num(parseFloat(s.value[1]), "bytes")])));
}

export { fmt };
