// web/src/state.js -- the UI's state, all of it in the URL's hash so a view
// can be shared: "#/<view>?from=now-1h&to=now&refresh=30s&node=...".
// from/to are "now-<duration>", "now" or epoch milliseconds. The scrape
// interval (from the server's configuration) is the floor of every step.
import { parseDuration } from "./util.js";
import { api } from "./api.js";

export const state = {
  view: "fleet",
  params: new URLSearchParams(),
  scrapeInterval: 15,
  recorded: new Set(), // names the server's recording rules write (loadRecorded)
  listeners: new Set(),
};

export const RANGES = ["15m", "1h", "6h", "24h", "7d"];
export const REFRESH = ["off", "10s", "30s", "1m"];

export function parseHash() {
  const hash = location.hash.replace(/^#\/?/, "");
  const q = hash.indexOf("?");
  state.view = (q >= 0 ? hash.slice(0, q) : hash) || "fleet";
  state.params = new URLSearchParams(q >= 0 ? hash.slice(q + 1) : "");
}

export function param(name, dflt) {
  const v = state.params.get(name);
  return v === null || v === "" ? dflt : v;
}

// Sets URL parameters (null removes one) and, unless quiet, re-renders.
export function setParams(obj, quiet) {
  for (const [k, v] of Object.entries(obj)) {
    if (v === null || v === undefined) state.params.delete(k);
    else state.params.set(k, String(v));
  }
  const qs = state.params.toString();
  const h = "#/" + state.view + (qs ? "?" + qs : "");
  if (quiet) history.replaceState(null, "", h);
  else location.hash = h;
}

export function link(view, extra) {
  const p = new URLSearchParams();
  for (const k of ["from", "to", "refresh"]) if (state.params.has(k)) p.set(k, state.params.get(k));
  for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
  const qs = p.toString();
  return "#/" + view + (qs ? "?" + qs : "");
}

function resolve(s, now) {
  if (s === "now") return now;
  const m = /^now-(.+)$/.exec(s);
  if (m) {
    const d = parseDuration(m[1]);
    return Number.isFinite(d) ? now - d * 1000 : NaN;
  }
  const n = Number(s);
  return Number.isFinite(n) ? n : NaN;
}

// {start, end} in seconds (floats), end > start.
export function timeRange() {
  const now = Date.now();
  let end = resolve(param("to", "now"), now);
  let start = resolve(param("from", "now-1h"), now);
  if (!Number.isFinite(end)) end = now;
  if (!Number.isFinite(start) || start >= end) start = end - 3600e3;
  return { start: start / 1000, end: end / 1000 };
}

const NICE = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

// Never more points than pixels: step = max(range / width, scrape
// interval), rounded up to a nice value.
export function stepFor(start, end, widthPx) {
  const raw = Math.max((end - start) / Math.max(widthPx, 50), state.scrapeInterval);
  for (const n of NICE) if (n >= raw) return n;
  return Math.ceil(raw / 86400) * 86400;
}

// Prometheus's $__rate_interval: max(step + scrape, 4 * scrape).
export function rateWindow(step) {
  const s = Math.max(step + state.scrapeInterval, 4 * state.scrapeInterval);
  return Math.ceil(s) + "s";
}

export async function loadScrapeInterval() {
  const r = await api.config();
  if (r.data && r.data.yaml) {
    const m = /^global:\s*\n(?:[ \t]+.*\n)*?[ \t]+scrape_interval:\s*(\S+)/m.exec(r.data.yaml);
    const d = m ? parseDuration(m[1]) : NaN;
    if (Number.isFinite(d) && d > 0) state.scrapeInterval = d;
  }
}

// The metric names the server's recording rules write: a panel asks for a
// recording rule alone (not "rule or raw": PromQL evaluates both sides of
// "or", so the raw side would cost as much as without the rule) only when
// the server has it.
export async function loadRecorded() {
  const r = await api.rules();
  if (!r.data) return;
  for (const g of r.data.groups || []) for (const ru of g.rules || []) if (ru.type === "recording") state.recorded.add(ru.name);
}
