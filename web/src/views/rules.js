// web/src/views/rules.js -- rule groups (/api/v1/rules): recording and
// alerting rules, their health, last error and evaluation times.
import { h, clear, fmtTime, fmtDuration } from "../util.js";
import { api } from "../api.js";
import { link } from "../state.js";
import { table } from "./common.js";

export function render(main) {
  const el = h("div", { id: "rules" }, h("p", { class: "muted" }, "loading"));
  main.append(h("h2", {}, "Rules"), el);
  async function load() {
    const r = await api.rules();
    if (r.error) return clear(el).append(h("p", { class: "error" }, r.error));
    clear(el);
    for (const g of r.data.groups) {
      el.append(h("details", { class: "panel section", open: true },
        h("summary", {}, h("strong", {}, g.name), h("span", { class: "muted" }, ` · ${g.file} · every ${fmtDuration(g.interval)} · last run ${fmtTime(Date.parse(g.lastEvaluation))} in ${fmtDuration(g.evaluationTime)}`)),
        table(["Rule", "Expression", "State", "Health", "Evaluation"], g.rules.map((ru) => [
          ru.type === "alerting" ? h("span", {}, "alert: ", h("strong", {}, ru.name)) : h("span", {}, "record: ", h("strong", {}, ru.name)),
          h("a", { href: link("explore", { expr: ru.query }) }, h("pre", {}, ru.query)),
          ru.type === "alerting" ? h("span", { class: "badge " + ru.state }, ru.state + (ru.alerts && ru.alerts.length ? ` (${ru.alerts.length})` : "")) : "",
          h("span", {}, h("span", { class: "badge " + (ru.health === "ok" ? "ok" : ru.health === "err" ? "err" : "unknown") }, ru.health), ru.lastError ? h("div", { class: "error" }, ru.lastError) : null),
          fmtDuration(ru.evaluationTime)]), { class: "rules-table" })));
    }
    if (!r.data.groups.length) el.append(h("p", { class: "muted" }, "No rule files are loaded."));
  }
  return { ready: load(), refresh: load };
}
