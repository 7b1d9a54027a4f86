// web/src/views/apiview.js -- links to the server's raw endpoints (what
// the old landing page at "/" listed), for scripts and curl users.
import { h } from "../util.js";

const LINKS = [
  ["api/v1/targets", "targets (JSON)"], ["api/v1/targets/metadata", "target metadata (JSON)"],
  ["api/v1/status/config", "configuration (JSON)"], ["api/v1/status/flags", "flags (JSON)"],
  ["api/v1/status/buildinfo", "build information (JSON)"], ["api/v1/status/runtimeinfo", "runtime information (JSON)"],
  ["api/v1/status/tsdb", "TSDB status (JSON)"], ["api/v1/rules", "rules (JSON)"], ["api/v1/alerts", "alerts (JSON)"],
  ["api/v1/labels", "label names (JSON)"], ["api/v1/metadata", "metric metadata (JSON)"],
  ["metrics", "the server's own metrics"], ["federate?match[]=up", "federation (up)"],
  ["-/healthy", "health"], ["-/ready", "readiness"],
];

export function render(main) {
  main.append(h("h2", {}, "API"), h("p", { class: "muted" },
    "Kelvin server answers Prometheus 2.42's HTTP API; every page of this UI is built on it."),
  h("section", { class: "panel" }, h("ul", { id: "api-links" }, LINKS.map(([href, text]) => h("li", {}, h("a", { href }, href), " — ", text)))));
}
