// web/src/views/common.js -- pieces several views share: stat tiles, the
// alert count by severity, tables, label chips, and the GPU queries the
// fleet and node views agree on (leaning on rules/gpu.rules.yml's
// recording rules, with the raw expression as a fallback when a server
// runs without them).
import { h, fmt, level } from "../util.js";
import { api, scalarOf } from "../api.js";

// Thresholds of the GPU alert pack (rules/gpu.rules.yml): die warning at
// max operating - 5, critical at max operating; memory (HBM) warning at
// max operating - 10, critical at - 3. The headline tiles use H100's
// limits (87 C die, 95 C HBM); node charts use each GPU's own.
export const LIMITS = { dieWarn: 82, dieCrit: 87, memWarn: 85, memCrit: 92 };

export function stat(key, value, unit, lvl, sub) {
  return h("div", { class: "stat " + (lvl || "none"), dataset: { stat: key } },
    h("div", { class: "v" }, typeof value === "string" ? value : fmt(value, unit)),
    h("div", { class: "k" }, key, sub ? h("span", {}, " · " + sub) : null));
}

// Firing alerts by severity, and pending ones; keep(alert) filters them.
export async function alertCounts(keep) {
  const r = await api.alerts();
  const c = { critical: 0, warning: 0, info: 0, pending: 0, list: [] };
  if (r.data) {
    for (const a of r.data.alerts) {
      if (keep && !keep(a)) continue;
      c.list.push(a);
      if (a.state === "pending") c.pending++;
      else if (a.state === "firing") c[a.labels.severity in c ? a.labels.severity : "info"]++;
    }
  }
  c.error = r.error;
  return c;
}

export async function scalar(expr, time) {
  return scalarOf(await api.query(expr, time));
}

export function labelChips(m, skip) {
  return h("span", { class: "labels" }, Object.entries(m).filter(([k]) => !(skip || []).includes(k)).map(([k, v]) => h("span", {}, `${k}="${v}"`)));
}

export function table(head, rows, attrs) {
  return h("table", attrs || {}, h("thead", {}, h("tr", {}, head.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c)))))));
}

export function num(v, unit) {
  return h("td", { class: "num" }, fmt(v, unit));
}

export { level };
