// web/src/api.js -- the Prometheus HTTP API as the UI uses it.
// Every call resolves to {data} or {error, errorType}; nothing throws, so a
// view shows a panel's error in the panel and carries on. URLs are relative
// to the document ("/"), so the UI also works behind a path prefix.
// In-flight range queries of the same URL are shared.

const inflight = new Map();

async function get(path, params) {
  const qs = params ? "?" + new URLSearchParams(params).toString() : "";
  const url = "api/v1/" + path + qs;
  if (inflight.has(url)) return inflight.get(url);
  const p = (async () => {
    try {
      // long queries go as POST form bodies (Prometheus accepts both)
      const r = url.length > 1800
        ? await fetch("api/v1/" + path, { method: "POST", body: new URLSearchParams(params) })
        : await fetch(url);
      let body;
      try {
        body = await r.json();
      } catch (e) {
        return { error: `HTTP ${r.status}: not JSON`, errorType: "http" };
      }
      if (body.status !== "success") return { error: body.error || `HTTP ${r.status}`, errorType: body.errorType || "http" };
      return { data: body.data, warnings: body.warnings };
    } catch (e) {
      return { error: "cannot reach the server: " + e.message, errorType: "network" };
    } finally {
      inflight.delete(url);
    }
  })();
  inflight.set(url, p);
  return p;
}

export const api = {
  query: (query, time) => get("query", time !== undefined ? { query, time: String(time) } : { query }),
  range: (query, start, end, step) => get("query_range", { query, start: String(start), end: String(end), step: String(step) }),
  labelValues: (name, match) => get(`label/${encodeURIComponent(name)}/values`, match ? { "match[]": match } : undefined),
  series: (match, start, end) => get("series", { "match[]": match, start: String(start), end: String(end) }),
  alerts: () => get("alerts"),
  rules: () => get("rules"),
  targets: () => get("targets"),
  tsdb: () => get("status/tsdb"),
  buildinfo: () => get("status/buildinfo"),
  runtimeinfo: () => get("status/runtimeinfo"),
  flags: () => get("status/flags"),
  config: () => get("status/config"),
  metadata: () => get("metadata"),
};

// The value of an instant vector's first sample, or null.
export function scalarOf(res) {
  if (!res || res.error || !res.data) return null;
  const r = res.data.result;
  if (res.data.resultType === "scalar") return parseFloat(r[1]);
  if (!r || !r.length) return null;
  return parseFloat(r[0].value[1]);
}
