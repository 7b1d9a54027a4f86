// web/src/views/tsdb.js -- storage status (/api/v1/status/tsdb: head
// statistics and the top series counts), build and runtime information.
import { h, clear, fmtTime } from "../util.js";
import { api } from "../api.js";
import { table, num } from "./common.js";
import { stat } from "./common.js";

export function render(main) {
  const el = h("div", { id: "tsdb" }, h("p", { class: "muted" }, "loading"));
  main.append(h("h2", {}, "TSDB status"), el);
  async function load() {
    const [t, b, rt] = await Promise.all([api.tsdb(), api.buildinfo(), api.runtimeinfo()]);
    clear(el);
    if (t.error) return el.append(h("p", { class: "error" }, t.error));
    const hs = t.data.headStats || {};
    el.append(h("div", { class: "stats" },
      stat("Head series", String(hs.numSeries ?? "-"), "", "ok"), stat("Label pairs", String(hs.numLabelPairs ?? "-"), "", "ok"),
      stat("Head chunks", String(hs.chunkCount ?? "-"), "", "ok"),
      stat("Head from", hs.minTime ? fmtTime(hs.minTime) : "-", "", "none"), stat("Head to", hs.maxTime ? fmtTime(hs.maxTime) : "-", "", "none")));
    const top = (title, list, head) => h("section", { class: "panel section" }, h("h3", {}, title),
      table([head, "Count"], (list || []).map((x) => [x.name, num(x.value, "")])));
    el.append(h("div", { class: "grid" },
      top("Top metric names by series", t.data.seriesCountByMetricName, "Name"),
      top("Top label names by value count", t.data.labelValueCountByLabelName, "Label"),
      top("Top label names by memory", t.data.memoryInBytesByLabelName, "Label"),
      top("Top label pairs by series", t.data.seriesCountByLabelValuePair, "Pair")));
    const kv = (title, o) => h("section", { class: "panel section" }, h("h3", {}, title), table(["", ""], Object.entries(o || {}).map(([k, v]) => [k, String(v)])));
    el.append(h("div", { class: "grid" }, kv("Build", b.data), kv("Runtime", rt.data)));
  }
  return { ready: load(), refresh: load };
}
