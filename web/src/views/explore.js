// web/src/views/explore.js -- the query explorer: a PromQL expression
// (variable expr) shown as a graph (range query) or a table (instant
// query at the range's end). A parse error is shown with its position:
// Prometheus's "<line>:<col>: parse error: ..." text is found in the
// answer, and the query is printed with a caret under that column.
// The last 30 queries are kept in localStorage ("kelvin.history").
import { h, clear, fmt, fmtTime, labelsText } from "../util.js";
import { api } from "../api.js";
import { param, setParams, timeRange } from "../state.js";
import { chart } from "../chart.js";

const KEY = "kelvin.history";
function history() {
  try { return JSON.parse(localStorage.getItem(KEY) || "[]"); } catch (e) { return []; }
}
function remember(q) {
  const list = [q, ...history().filter((x) => x !== q)].slice(0, 30);
  try { localStorage.setItem(KEY, JSON.stringify(list)); } catch (e) { /* private mode */ }
}

// {line, col, message} from a Prometheus parse error, or null.
export function errorPosition(msg) {
  const m = /(\d+):(\d+): parse error: (.*)$/s.exec(msg || "");
  return m ? { line: Number(m[1]), col: Number(m[2]), message: m[3] } : null;
}

function errorBox(query, msg) {
  const pos = errorPosition(msg);
  const box = h("div", { class: "query-error", id: "query-error" }, h("div", { class: "error" }, msg));
  if (pos) {
    const lines = query.split("\n");
    const line = lines[pos.line - 1] ?? "";
    const c = Math.max(0, Math.min(pos.col - 1, line.length));
    box.dataset.line = String(pos.line);
    box.dataset.col = String(pos.col);
    box.append(h("pre", { class: "error-at" },
      line.slice(0, c), h("mark", {}, line.slice(c, c + 1) || " "), line.slice(c + 1), "\n",
      " ".repeat(c), h("span", { class: "caret" }, "^"), ` line ${pos.line}, column ${pos.col}`));
  }
  return box;
}

export function render(main) {
  const expr = param("expr", "");
  const tab = param("tab", "graph");
  const ta = h("textarea", { class: "promql", id: "expr", spellcheck: "false", placeholder: "PromQL expression, e.g. avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)" });
  ta.value = expr;
  const run = () => setParams({ expr: ta.value.trim() || null });
  ta.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey || !e.shiftKey)) { e.preventDefault(); run(); } });
  const out = h("div", { id: "query-out" });
  const hist = h("ul", { class: "history", id: "history" }, history().map((q) => h("li", { onclick: () => setParams({ expr: q }) }, q)));
  main.append(h("h2", {}, "Query"), h("section", { class: "panel" }, ta,
    h("div", { class: "toolbar" }, h("button", { class: "primary", id: "execute", onclick: run }, "Execute"),
      h("span", { class: "muted" }, "Enter runs, Shift+Enter adds a line")),
    h("div", { class: "tabs" }, ["graph", "table"].map((t) => h("button", { class: t === tab ? "active" : "", id: "tab-" + t, onclick: () => setParams({ tab: t }) }, t === "graph" ? "Graph" : "Table"))),
    out), h("details", { class: "section" }, h("summary", {}, "History"), hist));
  if (!expr) return null;
  remember(expr);
  async function load() {
    const { end } = timeRange();
    // an instant query first: it checks the syntax and feeds the table
    const r = await api.query(expr, end);
    clear(out);
    if (r.error) return out.append(errorBox(expr, r.error));
    if (tab === "table") return out.append(resultTable(r.data, end));
    const c = chart({ title: expr, unit: "", queries: [{ expr }], height: 320 });
    c.el.id = "query-graph";
    out.append(c.el);
  }
  return { ready: load(), refresh: load };
}

function resultTable(d, t) {
  const wrap = h("div", { id: "query-table" }, h("div", { class: "muted" }, `${d.resultType} at ${fmtTime(t * 1000)}`));
  if (d.resultType === "scalar" || d.resultType === "string") {
    wrap.append(h("pre", {}, String(d.result[1])));
    return wrap;
  }
  if (!d.result.length) {
    wrap.append(h("p", { class: "muted" }, "Empty query result."));
    return wrap;
  }
  const rows = d.result.slice(0, 1000).map((s) => h("tr", {}, h("td", {}, h("code", {}, labelsText(s.metric))),
    h("td", { class: "num" }, s.value ? fmt(parseFloat(s.value[1]), "") : `${s.values.length} samples`)));
  wrap.append(h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Series"), h("th", {}, "Value"))), h("tbody", {}, rows)));
  if (d.result.length > 1000) wrap.append(h("p", { class: "muted" }, `first 1000 of ${d.result.length} series`));
  return wrap;
}
