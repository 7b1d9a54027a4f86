// web/src/views/jobs.js -- training and inference: the application
// metrics jobs send through the agent's StatsD and push endpoints (any
// metric that is not a GPU, host or server metric), each as a chart --
// histograms as p50/p90/p99 latencies, counters as rates, gauges as they
// are -- and the GPUs each job runs on (kelvin_gpu_process_memory_bytes)
// with their utilisation. Variable: job (the job label, optional).
import { h, clear } from "../util.js";
import { api } from "../api.js";
import { param, setParams, timeRange, rateWindow, link } from "../state.js";
import { chart } from "../chart.js";
import { table, num } from "./common.js";
import { Q, expr as qexpr, esc } from "../queries.js";

const SYSTEM = /^(DCGM_|kelvin_|node_|go_|process_|prometheus_|promhttp_|scrape_|up$|ALERTS|push_|net_conntrack|instance|job:|instance_|job_|statsd_)/;
const INTEREST = /loss|step|through|token|latency|duration|sample|batch|epoch|lr|learning|request|queue|accuracy|perplex/i;

export function render(main, ctx) {
  const grid = h("div", { class: "grid", id: "app-charts" });
  const gpus = h("section", { class: "panel section", id: "job-gpus" }, h("div", { class: "muted" }, "loading"));
  main.append(h("h2", {}, "Application metrics"), grid, h("h2", {}, "Where the jobs run"), gpus);
  const job = param("job", "");
  const ready = (async () => {
    const { start, end } = timeRange();
    const [names, jobs] = await Promise.all([api.labelValues("__name__"), api.labelValues("job")]);
    const jobSel = h("select", { id: "job-select", onchange: (e) => setParams({ job: e.target.value || null }) },
      h("option", { value: "" }, "all jobs"), (jobs.data || []).map((j) => h("option", { value: j, selected: j === job }, j)));
    ctx.vars.append(h("label", {}, "Job", jobSel));
    const js = job ? `job="${esc(job)}"` : "";
    const all = (names.data || []).filter((n) => !SYSTEM.test(n));
    const hist = new Set(all.filter((n) => n.endsWith("_bucket")).map((n) => n.slice(0, -7)));
    const plain = all.filter((n) => !/_(bucket|sum|count)$/.test(n) || !hist.has(n.replace(/_(bucket|sum|count)$/, "")));
    const picked = [...[...hist].map((n) => ({ n, kind: "hist" })), ...plain.map((n) => ({ n, kind: n.endsWith("_total") ? "counter" : "gauge" }))]
      .sort((a, b) => (INTEREST.test(b.n) - INTEREST.test(a.n)) || a.n.localeCompare(b.n)).slice(0, 16);
    if (!picked.length) grid.append(h("p", { class: "muted" }, "No application metrics yet: jobs send them to the agent's StatsD port or push endpoint (docs/metrics.md)."));
    for (const { n, kind } of picked) {
      const q = kind === "hist"
        ? [0.5, 0.9, 0.99].map((p) => ({ expr: (st) => qexpr(Q.jobs.quantile, { q: p, metric: n, job: js, rate: rateWindow(st) }), legend: (m) => `p${p * 100} ${m.job || ""}` }))
        : kind === "counter" ? [{ expr: (st) => qexpr(Q.jobs.counter, { metric: n, job: js, rate: rateWindow(st) }), legend: (m) => `${m.job || ""} ${m.instance || ""}/s` }]
          : [{ expr: qexpr(Q.jobs.gauge, { metric: n, job: js }) }];
      grid.append(chart({ title: kind === "hist" ? `${n} (quantiles)` : kind === "counter" ? `${n} (rate)` : n, unit: kind === "hist" ? "s" : "", queries: q }).el);
    }
    // the GPUs each workload runs on
    const key = "slurm_job_id";
    const r = await api.query(qexpr(Q.jobs.workloads), end);
    const u = await api.query(qexpr(Q.jobs.util), end);
    const util = new Map((u.data ? u.data.result : []).map((s) => [s.metric.Hostname + "/" + s.metric.gpu, parseFloat(s.value[1])]));
    const rows = (r.data ? r.data.result : []).map((s) => [s.metric[key] || s.metric.pod_uid || s.metric.command || "-",
      h("a", { href: link("node", { node: s.metric.Hostname, gpu: s.metric.gpu }) }, `${s.metric.Hostname} GPU ${s.metric.gpu}`),
      num(parseFloat(s.value[1]), "bytes"), num(util.get(s.metric.Hostname + "/" + s.metric.gpu), "%")]);
    void start;
    clear(gpus).append(h("h3", {}, "Workloads on GPUs"), rows.length ? table(["Job / pod / command", "GPU", "GPU memory", "GPU utilisation"], rows)
      : h("p", { class: "muted" }, "No GPU processes reported (kelvin_gpu_process_memory_bytes)."));
  })();
  return { ready };
}
