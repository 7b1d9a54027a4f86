// web/src/views/targets.js -- scrape targets by pool (/api/v1/targets):
// state, labels, last scrape, duration and error.
import { h, clear, fmtTime, fmtDuration } from "../util.js";
import { api } from "../api.js";
import { table, labelChips } from "./common.js";

export function render(main) {
  const el = h("div", { id: "targets" }, h("p", { class: "muted" }, "loading"));
  main.append(h("h2", {}, "Targets"), el);
  async function load() {
    const r = await api.targets();
    if (r.error) return clear(el).append(h("p", { class: "error" }, r.error));
    const pools = new Map();
    for (const t of r.data.activeTargets) {
      if (!pools.has(t.scrapePool)) pools.set(t.scrapePool, []);
      pools.get(t.scrapePool).push(t);
    }
    clear(el);
    for (const [pool, ts] of [...pools].sort()) {
      const up = ts.filter((t) => t.health === "up").length;
      el.append(h("section", { class: "panel section" }, h("h3", {}, `${pool} `, h("span", { class: "badge " + (up === ts.length ? "up" : "down") }, `${up}/${ts.length} up`)),
        table(["Endpoint", "State", "Labels", "Last scrape", "Duration", "Error"], ts.map((t) => [
          h("a", { href: t.scrapeUrl }, t.scrapeUrl), h("span", { class: "badge " + t.health }, t.health), labelChips(t.labels),
          t.lastScrape && !t.lastScrape.startsWith("0001") ? fmtTime(Date.parse(t.lastScrape)) : "never",
          fmtDuration(t.lastScrapeDuration), h("span", { class: "error" }, t.lastError || "")]), { class: "targets-table" })));
    }
    if (!pools.size) el.append(h("p", { class: "muted" }, "No active targets."));
    if (r.data.droppedTargets && r.data.droppedTargets.length) el.append(h("p", { class: "muted" }, `${r.data.droppedTargets.length} targets dropped by relabelling.`));
  }
  return { ready: load(), refresh: load };
}
