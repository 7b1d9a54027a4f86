// web/src/queries.js -- every PromQL expression the UI's views run, in one
// place, as templates with $variables (or ${variable} before a word
// character), so the views and tests/integration/ui.py (which runs
// each one against kelvin on a simulated fleet, through node) read the
// same text.
//
// An entry is {expr, rule?, filter?, vars}: expr is the template; rule, when
// present, a recording-rule form (rules/gpu.rules.yml) that views send
// instead (pick) while the server has the rule and no filter rules it out,
// falling back to expr when it has no data; filter a
// comparison appended for display ("> 0": events only), left out when a
// test asks whether the expression has data at all; vars the variables the
// template takes. fill() throws on a variable it is not given, so a view
// cannot send a half-substituted expression.
//
// Variables: f (a label matcher list, possibly empty, for the fleet
// filter: cluster and nodes), c (the cluster part of it alone: targets
// carry no Hostname), sel (matchers of a node or one GPU of it),
// node (Hostname="..."), host (the node's host metrics target: job and
// instance), alerts (ALERTS matchers), rate (a rate window, "60s"), step
// (the query step, "60s"), hz (a projection horizon in seconds), idle
// (the idle utilisation threshold), by (a workload label), job (matchers,
// possibly empty), metric (an application metric), q (a quantile).
// Invariants: a template never puts a variable that may be empty next to a
// comma ("{$f}" alone, never "{$f,x=\"y\"}").

const v = (...names) => names;

export const Q = {
  // the header's "simulated GPUs" badge: the agent labels every GPU series
  // simulated="true" when the GPUs are simulated (--gpu.simulate)
  simulated: { expr: "count(last_over_time(DCGM_FI_DEV_GPU_TEMP{simulated=\"true\"}[10m]))", vars: v() },
  fleet: {
    // the heatmap: which GPUs exist (seen in the last 10 minutes), and the
    // chosen colouring's value per (Hostname, gpu)
    presence: { expr: "group by (Hostname, gpu, modelName) (last_over_time(DCGM_FI_DEV_GPU_TEMP{$f}[10m]))", vars: v("f") },
    color: {
      util: { expr: "DCGM_FI_DEV_GPU_UTIL{$f}", vars: v("f") },
      temp: { expr: "DCGM_FI_DEV_GPU_TEMP{$f}", vars: v("f") },
      memtemp: { expr: "DCGM_FI_DEV_MEMORY_TEMP{$f}", vars: v("f") },
      power: { expr: "DCGM_FI_DEV_POWER_USAGE{$f}", vars: v("f") },
      mem: { expr: "100 * (instance_gpu:DCGM_FI_DEV_FB_USED:ratio{$f} or DCGM_FI_DEV_FB_USED{$f} / (DCGM_FI_DEV_FB_USED{$f} + DCGM_FI_DEV_FB_FREE{$f}))", vars: v("f") },
      xid: { expr: "sum by (Hostname, gpu) (increase(kelvin_gpu_xid_errors_total{$f}[1h])) or sum by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP{$f} * 0)", vars: v("f") },
      ecc: { expr: "sum by (Hostname, gpu) (kelvin_gpu_ecc_volatile_errors_total{$f})", vars: v("f") },
    },
    // headline tiles (instant queries at the range's end); rule: the
    // recording rule, usable while no node (or non-job cluster) filter is set
    headline: {
      targetsUp: { expr: "sum(up{$c})", vars: v("c") },
      targets: { expr: "count(up{$c})", vars: v("c") },
      nodes: { expr: "count(count by (Hostname) (DCGM_FI_DEV_GPU_TEMP{$f}))", vars: v("f") },
      gpus: { rule: "sum(job:DCGM_FI_DEV_GPU_TEMP:count{$f})", expr: "count(DCGM_FI_DEV_GPU_TEMP{$f})", vars: v("f") },
      lost: { expr: "sum(kelvin_gpu_lost{$f})", vars: v("f") },
      util: { rule: "sum(job:DCGM_FI_DEV_GPU_UTIL:avg{$f} * job:DCGM_FI_DEV_GPU_TEMP:count{$f}) / sum(job:DCGM_FI_DEV_GPU_TEMP:count{$f})", expr: "avg(DCGM_FI_DEV_GPU_UTIL{$f})", vars: v("f") },
      power: { rule: "sum(job:DCGM_FI_DEV_POWER_USAGE:sum{$f})", expr: "sum(DCGM_FI_DEV_POWER_USAGE{$f})", vars: v("f") },
      temp: { rule: "max(job:DCGM_FI_DEV_GPU_TEMP:max{$f})", expr: "max(DCGM_FI_DEV_GPU_TEMP{$f})", vars: v("f") },
      memtemp: { rule: "max(job:DCGM_FI_DEV_MEMORY_TEMP:max{$f})", expr: "max(DCGM_FI_DEV_MEMORY_TEMP{$f})", vars: v("f") },
      memratio: { rule: "100 * avg(job:DCGM_FI_DEV_FB_USED:ratio{$f})", expr: "100 * avg(DCGM_FI_DEV_FB_USED{$f} / (DCGM_FI_DEV_FB_USED{$f} + DCGM_FI_DEV_FB_FREE{$f}))", vars: v("f") },
    },
    // the fleet-over-time charts (range queries)
    chart: {
      utilAvg: { rule: "sum(job:DCGM_FI_DEV_GPU_UTIL:avg{$f} * job:DCGM_FI_DEV_GPU_TEMP:count{$f}) / sum(job:DCGM_FI_DEV_GPU_TEMP:count{$f})", expr: "avg(DCGM_FI_DEV_GPU_UTIL{$f})", vars: v("f") },
      utilMax: { rule: "max(job:DCGM_FI_DEV_GPU_UTIL:max{$f})", expr: "max(DCGM_FI_DEV_GPU_UTIL{$f})", vars: v("f") },
      utilMin: { rule: "min(job:DCGM_FI_DEV_GPU_UTIL:min{$f})", expr: "min(DCGM_FI_DEV_GPU_UTIL{$f})", vars: v("f") },
      tempMax: { rule: "max(job:DCGM_FI_DEV_GPU_TEMP:max{$f})", expr: "max(DCGM_FI_DEV_GPU_TEMP{$f})", vars: v("f") },
      tempAvg: { rule: "sum(job:DCGM_FI_DEV_GPU_TEMP:sum{$f}) / sum(job:DCGM_FI_DEV_GPU_TEMP:count{$f})", expr: "avg(DCGM_FI_DEV_GPU_TEMP{$f})", vars: v("f") },
      memTempMax: { rule: "max(job:DCGM_FI_DEV_MEMORY_TEMP:max{$f})", expr: "max(DCGM_FI_DEV_MEMORY_TEMP{$f})", vars: v("f") },
      power: { rule: "sum(job:DCGM_FI_DEV_POWER_USAGE:sum{$f})", expr: "sum(DCGM_FI_DEV_POWER_USAGE{$f})", vars: v("f") },
      memRatio: { rule: "100 * avg(job:DCGM_FI_DEV_FB_USED:ratio{$f})", expr: "100 * avg(DCGM_FI_DEV_FB_USED{$f} / (DCGM_FI_DEV_FB_USED{$f} + DCGM_FI_DEV_FB_FREE{$f}))", vars: v("f") },
    },
  },
  // alert annotations on every chart (range query; the chart splits them
  // into node-wide bands and per-GPU ones by the gpu / UUID label)
  alerts: {
    firing: { expr: "ALERTS{$alerts}", vars: v("alerts") },
    history: { expr: "ALERTS", vars: v() },
  },
  node: {
    gpus: { expr: "group by (gpu, UUID, modelName) (DCGM_FI_DEV_GPU_TEMP{$node})", vars: v("node") },
    target: { expr: "DCGM_FI_DEV_GPU_TEMP{$node}", vars: v("node") },
    util: { expr: "DCGM_FI_DEV_GPU_UTIL{$sel}", vars: v("sel") },
    sm: { expr: "100 * (DCGM_FI_PROF_SM_ACTIVE{$sel} or kelvin_gpu_sm_active_ratio{$sel})", vars: v("sel") },
    tensor: { expr: "100 * (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{$sel} or kelvin_gpu_tensor_active_ratio{$sel})", vars: v("sel") },
    fbUsed: { expr: "DCGM_FI_DEV_FB_USED{$sel}", vars: v("sel") },
    fbTotal: { expr: "max(DCGM_FI_DEV_FB_USED{$sel} + DCGM_FI_DEV_FB_FREE{$sel})", vars: v("sel") },
    fbProjected: { expr: "predict_linear(DCGM_FI_DEV_FB_USED{$sel}[30m], $hz)", vars: v("sel", "hz") },
    temp: { expr: "DCGM_FI_DEV_GPU_TEMP{$sel}", vars: v("sel") },
    tempLimit: { expr: "max(instance_gpu:DCGM_FI_DEV_GPU_TEMP:max_operating{$sel})", vars: v("sel") },
    tempProjected: { expr: "predict_linear(DCGM_FI_DEV_GPU_TEMP{$sel}[30m], $hz)", vars: v("sel", "hz") },
    memTemp: { expr: "DCGM_FI_DEV_MEMORY_TEMP{$sel}", vars: v("sel") },
    memTempLimit: { expr: "max(instance_gpu:DCGM_FI_DEV_MEMORY_TEMP:max_operating{$sel})", vars: v("sel") },
    memTempProjected: { expr: "predict_linear(DCGM_FI_DEV_MEMORY_TEMP{$sel}[30m], $hz)", vars: v("sel", "hz") },
    power: { expr: "DCGM_FI_DEV_POWER_USAGE{$sel}", vars: v("sel") },
    powerLimit: { expr: "max(kelvin_gpu_power_limit_watts{$sel})", vars: v("sel") },
    smClock: { expr: "DCGM_FI_DEV_SM_CLOCK{$sel}", vars: v("sel") },
    memClock: { expr: "DCGM_FI_DEV_MEM_CLOCK{$sel}", vars: v("sel") },
    xid: { expr: "sum by (gpu) (increase(kelvin_gpu_xid_errors_total{$sel}[$step]))", filter: " > 0", vars: v("sel", "step") },
    eccSbe: { expr: "sum by (gpu) (increase(kelvin_gpu_ecc_volatile_errors_total{$sel,type=\"corrected\"}[$step]))", filter: " > 0", vars: v("sel", "step") },
    eccDbe: { expr: "sum by (gpu) (increase(kelvin_gpu_ecc_volatile_errors_total{$sel,type=\"uncorrected\"}[$step]))", filter: " > 0", vars: v("sel", "step") },
    pcie: { expr: "sum by (gpu) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{$sel}[$step]))", filter: " > 0", vars: v("sel", "step") },
    nvlink: { expr: "sum by (gpu) (increase(kelvin_gpu_nvlink_errors_total{$sel}[$step]))", filter: " > 0", vars: v("sel", "step") },
    throttle: { expr: "kelvin_gpu_clock_event_active{$sel}", filter: " > 0", vars: v("sel") },
    processes: { expr: "kelvin_gpu_process_memory_bytes{$sel}", vars: v("sel") },
    cpu: { expr: "100 * (1 - avg(rate(node_cpu_seconds_total{$host,mode=\"idle\"}[$rate])))", vars: v("host", "rate") },
    memUsed: { expr: "node_memory_MemTotal_bytes{$host} - node_memory_MemAvailable_bytes{$host}", vars: v("host") },
    memTotal: { expr: "node_memory_MemTotal_bytes{$host}", vars: v("host") },
    netRx: { expr: "sum(rate(node_network_receive_bytes_total{$host,device!=\"lo\"}[$rate]))", vars: v("host", "rate") },
    netTx: { expr: "sum(rate(node_network_transmit_bytes_total{$host,device!=\"lo\"}[$rate]))", vars: v("host", "rate") },
    diskRead: { expr: "sum(rate(node_disk_read_bytes_total{$host}[$rate]))", vars: v("host", "rate") },
    diskWritten: { expr: "sum(rate(node_disk_written_bytes_total{$host}[$rate]))", vars: v("host", "rate") },
  },
  capacity: {
    busy: { expr: "count(DCGM_FI_DEV_GPU_UTIL >= $idle)", vars: v("idle") },
    idle: { expr: "count(DCGM_FI_DEV_GPU_UTIL < $idle)", vars: v("idle") },
    allocated: { expr: "count(count by (Hostname, gpu) (kelvin_gpu_process_memory_bytes))", vars: v() },
    fbUsed: { expr: "sum(DCGM_FI_DEV_FB_USED)", vars: v() },
    fbTotal: { expr: "sum(DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)", vars: v() },
    fbProjected: { expr: "predict_linear(sum(DCGM_FI_DEV_FB_USED)[30m:1m], $hz)", vars: v("hz") },
    util: { rule: "sum(job:DCGM_FI_DEV_GPU_UTIL:avg * job:DCGM_FI_DEV_GPU_TEMP:count) / sum(job:DCGM_FI_DEV_GPU_TEMP:count)", expr: "avg(DCGM_FI_DEV_GPU_UTIL)", vars: v() },
    utilProjected: { expr: "predict_linear(avg(DCGM_FI_DEV_GPU_UTIL)[30m:1m], $hz)", vars: v("hz") },
    power: { rule: "sum(job:DCGM_FI_DEV_POWER_USAGE:sum)", expr: "sum(DCGM_FI_DEV_POWER_USAGE)", vars: v() },
    powerLimit: { expr: "sum(kelvin_gpu_power_limit_watts)", vars: v() },
    gpus: { expr: "count(DCGM_FI_DEV_GPU_UTIL)", vars: v() },
    allocBy: { expr: "count by ($by) (count by ($by, Hostname, gpu) (kelvin_gpu_process_memory_bytes))", vars: v("by") },
    useBy: { expr: "avg by ($by) (DCGM_FI_DEV_GPU_UTIL * on (Hostname, gpu) group_right () (count by ($by, Hostname, gpu) (kelvin_gpu_process_memory_bytes) * 0 + 1))", vars: v("by") },
    idleList: { expr: "DCGM_FI_DEV_GPU_UTIL < $idle", vars: v("idle") },
  },
  jobs: {
    quantile: { expr: "histogram_quantile($q, sum by (le, job, instance) (rate(${metric}_bucket{$job}[$rate])))", vars: v("q", "metric", "job", "rate") },
    counter: { expr: "sum by (job, instance) (rate(${metric}{$job}[$rate]))", vars: v("metric", "job", "rate") },
    gauge: { expr: "${metric}{$job}", vars: v("metric", "job") },
    workloads: { expr: "max by (Hostname, gpu, slurm_job_id, pod_uid, command) (kelvin_gpu_process_memory_bytes)", vars: v() },
    util: { expr: "DCGM_FI_DEV_GPU_UTIL", vars: v() },
  },
};

// The template with its variables substituted; throws naming a variable
// it is not given.
export function fill(tmpl, vars) {
  return tmpl.replace(/\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))/g, (_, a, b) => {
    const name = a || b;
    if (!vars || !(name in vars)) throw new Error(`query variable $${name} not given in ${tmpl}`);
    return String(vars[name]);
  });
}

// The entry's expression with vars (its rule form first, "rule or expr",
// when useRule and it has one; its display filter appended).
export function expr(entry, vars, useRule) {
  const e = useRule && entry.rule ? `${fill(entry.rule, vars)} or ${fill(entry.expr, vars)}` : fill(entry.expr, vars);
  return entry.filter ? e + entry.filter : e;
}

// The recording rule names an entry's rule form reads.
export function ruleNames(entry) {
  return entry.rule ? entry.rule.match(/\b[a-z_]+:[A-Za-z0-9_]+:[a-z0-9_]+\b/g) || [] : [];
}

// What a panel sends for an entry: {expr, fallback}. With useRule and
// every rule the entry reads among the server's (recorded, a Set), the
// rule alone, and the raw expression as the fallback the panel runs when
// the rule has no data, or over the part of the range before the rule's
// first point (rules evaluate from their start: no history before); else
// the raw expression alone.
export function pick(entry, vars, useRule, recorded) {
  const raw = expr(entry, vars, false);
  const names = ruleNames(entry);
  if (!useRule || !names.length || !names.every((n) => recorded.has(n))) return { expr: raw };
  const rule = fill(entry.rule, vars) + (entry.filter || "");
  return { expr: rule, fallback: raw };
}

// Every entry as [dotted name, entry], for tests.
export function all() {
  const out = [];
  const walk = (o, path) => {
    for (const [k, x] of Object.entries(o)) {
      if (x && typeof x.expr === "string") out.push([path + k, x]);
      else if (x && typeof x === "object") walk(x, path + k + ".");
    }
  };
  walk(Q, "");
  return out;
}

// A PromQL string literal's contents for a label value.
export function esc(val) {
  return String(val).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

// Regex-quotes a value for a =~ matcher (RE2 metacharacters escaped).
export function reQuote(val) {
  return String(val).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
