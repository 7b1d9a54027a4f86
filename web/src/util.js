// web/src/util.js -- small helpers shared by every view: DOM building,
// number and time formatting, colour scales, HTML escaping.
// No state lives here.

// h("div", {class: "x", onclick: f}, child, "text", [more]) -> element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

const SI = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
const IEC = [[2 ** 50, "Pi"], [2 ** 40, "Ti"], [2 ** 30, "Gi"], [2 ** 20, "Mi"], [2 ** 10, "Ki"]];

// Formats v in unit: "%", "C", "W", "bytes", "MiB", "Bps", "Hz", "s", "" (plain).
export function fmt(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  const num = (x, d) => {
    const a = Math.abs(x);
    return x.toFixed(a >= 100 ? 0 : a >= 10 ? Math.min(d, 1) : d);
  };
  switch (unit) {
    case "%": return num(v, 1) + "%";
    case "C": return num(v, 1) + " °C";
    case "W": return (Math.abs(v) >= 1e3 ? num(v / 1e3, 2) + " kW" : num(v, 1) + " W");
    case "MiB": return fmt(v * 2 ** 20, "bytes");
    case "bytes": {
      for (const [m, s] of IEC) if (Math.abs(v) >= m) return num(v / m, 2) + " " + s + "B";
      return num(v, 0) + " B";
    }
    case "Bps": {
      for (const [m, s] of SI) if (Math.abs(v) >= m) return num(v / m, 2) + " " + s + "B/s";
      return num(v, 1) + " B/s";
    }
    case "Hz": return fmt(v, "") + "Hz";
    case "MHz": return fmt(v * 1e6, "Hz");
    case "s": return v < 1 ? num(v * 1e3, 1) + " ms" : num(v, 2) + " s";
    default: {
      for (const [m, s] of SI) if (Math.abs(v) >= m) return num(v / m, 2) + " " + s;
      return Math.abs(v) < 0.01 && v !== 0 ? v.toExponential(2) : num(v, 2);
    }
  }
}

export function fmtTime(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtDuration(s) {
  if (!Number.isFinite(s)) return "-";
  if (s < 1) return Math.round(s * 1000) + "ms";
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  let out = "";
  for (const [u, n] of units) {
    if (s >= n) {
      const k = Math.floor(s / n);
      out += k + u;
      s -= k * n;
    }
    if (out.length >= 6) break;
  }
  return out || "0s";
}

// Prometheus durations: "5m", "1h30m", "15s", "500ms" -> seconds (NaN on error).
export function parseDuration(s) {
  const re = /(\d+(?:\.\d+)?)(ms|y|w|d|h|m|s)/g;
  const mult = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  let total = 0, pos = 0, m;
  while ((m = re.exec(s)) !== null) {
    if (m.index !== pos) return NaN;
    total += parseFloat(m[1]) * mult[m[2]];
    pos = re.lastIndex;
  }
  return pos === s.length && pos > 0 ? total : NaN;
}

// A colour ramp (cool -> hot) for t in [0, 1]; null -> the "no data" colour.
const RAMP = [[0.0, [40, 90, 170]], [0.35, [40, 170, 120]], [0.6, [230, 200, 50]], [0.8, [240, 130, 40]], [1.0, [215, 40, 40]]];
export function ramp(t) {
  if (t === null || t === undefined || Number.isNaN(t)) return null;
  t = Math.max(0, Math.min(1, t));
  for (let i = 1; i < RAMP.length; i++) {
    if (t <= RAMP[i][0]) {
      const [t0, c0] = RAMP[i - 1], [t1, c1] = RAMP[i];
      const f = (t - t0) / (t1 - t0);
      const c = c0.map((x, j) => Math.round(x + (c1[j] - x) * f));
      return `rgb(${c[0]},${c[1]},${c[2]})`;
    }
  }
  return "rgb(215,40,40)";
}

// Distinct series colours (readable on dark and light backgrounds).
export const PALETTE = ["#4e9af1", "#f39c33", "#3cba6f", "#e5484d", "#a66bdb", "#19b5b0", "#d9a400", "#e16fb3",
  "#8c9eb5", "#7fc97f", "#fd8d3c", "#6baed6", "#bcbd22", "#c994c7", "#74c476", "#9e9ac8"];

// Threshold level: "ok", "warn", "crit" for v against [warn, crit] (ascending).
export function level(v, warn, crit) {
  if (v === null || v === undefined || Number.isNaN(v)) return "none";
  if (crit !== undefined && v >= crit) return "crit";
  if (warn !== undefined && v >= warn) return "warn";
  return "ok";
}

// A label set as PromQL selector text: {a="x",b="y"}.
export function selector(labels) {
  const esc = (v) => String(v).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
  return "{" + Object.entries(labels).map(([k, v]) => `${k}="${esc(v)}"`).join(",") + "}";
}

export function labelsText(m, skip) {
  const parts = Object.entries(m).filter(([k]) => k !== "__name__" && !(skip && skip.includes(k)));
  return (m.__name__ || "") + "{" + parts.map(([k, v]) => `${k}="${v}"`).join(", ") + "}";
}

export function debounce(fn, ms) {
  let t = null;
  return (...a) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
}
