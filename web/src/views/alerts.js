// web/src/views/alerts.js -- firing and pending alerts (/api/v1/alerts)
// and their history in the time range (the ALERTS series) as a timeline.
import { h, clear, fmtTime, fmt } from "../util.js";
import { api } from "../api.js";
import { timeRange, stepFor, link } from "../state.js";
import { timeline, segments } from "../chart.js";
import { table, labelChips } from "./common.js";
import { Q, expr as qexpr } from "../queries.js";

export function render(main) {
  const now = h("section", { class: "panel", id: "alerts-now" }, h("div", { class: "muted" }, "loading"));
  const hist = h("section", { class: "panel section", id: "alerts-history" }, h("div", { class: "muted" }, "loading"));
  main.append(h("h2", {}, "Active alerts"), now, h("h2", {}, "History"), hist);
  async function load() {
    const r = await api.alerts();
    const list = r.data ? r.data.alerts.slice() : [];
    const sev = { critical: 0, warning: 1, info: 2 };
    list.sort((a, b) => (a.state === b.state ? 0 : a.state === "firing" ? -1 : 1) || (sev[a.labels.severity] ?? 3) - (sev[b.labels.severity] ?? 3));
    clear(now).append(r.error ? h("p", { class: "error" }, r.error) : !list.length ? h("p", { class: "muted" }, "No alerts are firing or pending.")
      : table(["State", "Severity", "Alert", "Where", "Since", "Value", "Summary"], list.map((a) => [
        h("span", { class: "badge " + a.state }, a.state), h("span", { class: "badge " + (a.labels.severity || "") }, a.labels.severity || "-"),
        a.labels.alertname,
        h("span", {}, a.labels.Hostname ? h("a", { href: link("node", { node: a.labels.Hostname, ...(a.labels.gpu ? { gpu: a.labels.gpu } : {}) }) }, a.labels.Hostname + (a.labels.gpu ? " GPU " + a.labels.gpu : "")) : "",
          " ", labelChips(a.labels, ["alertname", "severity", "Hostname", "gpu"])),
        fmtTime(Date.parse(a.activeAt)), fmt(parseFloat(a.value), ""), (a.annotations && a.annotations.summary) || ""]), { id: "alerts-table" }));
    const { start, end } = timeRange();
    const step = stepFor(start, end, hist.clientWidth || 900);
    const hr = await api.range(qexpr(Q.alerts.history), start, end, step);
    const rows = new Map();
    for (const s of hr.data ? hr.data.result : []) {
      const m = s.metric;
      const key = `${m.alertname} · ${m.Hostname || m.instance || ""}${m.gpu ? " GPU " + m.gpu : ""}`;
      const lvl = m.alertstate === "firing" ? (m.severity === "critical" ? "crit" : "warn") : "info";
      if (!rows.has(key)) rows.set(key, { label: key, segs: [] });
      rows.get(key).segs.push(...segments(s, step, () => lvl));
    }
    clear(hist).append(h("h3", {}, "ALERTS in the time range ", h("span", { class: "unit" }, "red: critical firing · amber: warning firing · blue: pending")),
      hr.error ? h("p", { class: "error" }, hr.error)
        : timeline([...rows.values()].sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true })), start, end, "No alert was pending or firing in this time range."));
  }
  return { ready: load(), refresh: load };
}
