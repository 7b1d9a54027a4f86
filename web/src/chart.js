// web/src/chart.js -- time series panels (uPlot), drawn only when visible.
//
// A panel spec: {title, unit, queries: [{expr, fallback, legend(metric) ->
// string, dash, points}], thresholds: [{value, label, level}] (or a function
// resolving to them), projection: {queries: [{expr(horizonSeconds), legend}]},
// alerts: label matchers ("Hostname=\"x\"", "" for all) whose firing ALERTS
// are shown, yMin, yMax, height}.
// Alert annotations: an alert with a gpu or UUID label belongs to that GPU:
// on a chart whose series are per GPU it is drawn as a strip in that
// GPU's colour along the top (and only when the GPU is on the chart); an
// alert without one (or any alert on a chart of aggregates) shades the
// whole height.
// The step of every range query is stepFor(range, plot width): never more
// points than pixels. Panels render when an IntersectionObserver says they
// are on screen; a refresh of a hidden panel only marks it stale.
// Each panel element carries data-series / data-points (what was drawn)
// and data-state ("loading", "ok", "empty", "error") for tests, and
// data-max-points (the most points any series of any answer had) next to
// data-width (the plot's width in CSS pixels) for the benchmark.
// pending() tells whether a visible panel is still loading (the app's
// "rendered" marker waits for it).
import { api } from "./api.js";
import { Q, expr as qexpr } from "./queries.js";
import { h, clear, fmt, fmtTime, PALETTE } from "./util.js";
import { stepFor, timeRange } from "./state.js";

const panels = new Set();
const io = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const p = e.target._panel;
    if (!p) continue;
    p.seen = true;
    p.visible = e.isIntersecting;
    if (p.visible && p.stale) p.load();
  }
}, { rootMargin: "200px" });

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Firing intervals [[t0, t1, metric], ...] (seconds) of ALERTS series on
// the grid.
function intervals(result, step) {
  const out = [];
  for (const s of result) {
    let t0 = null, prev = null;
    for (const [t] of s.values) {
      if (t0 === null) t0 = t;
      else if (t - prev > step * 1.5) {
        out.push([t0, prev + step, s.metric]);
        t0 = t;
      }
      prev = t;
    }
    if (t0 !== null) out.push([t0, prev + step, s.metric]);
  }
  return out;
}

// Splits alert intervals into chart-wide bands and per-GPU ones (those
// whose gpu / UUID label names a GPU of the chart's series: [t0, t1,
// seriesIndex]). Per-GPU alerts of GPUs not on the chart are dropped.
function splitBands(ivs, series) {
  const perGpu = series.some((s) => s.metric && (s.metric.gpu !== undefined || s.metric.UUID !== undefined));
  const wide = [], gpu = [];
  for (const [t0, t1, m] of ivs) {
    if (!perGpu || (m.gpu === undefined && m.UUID === undefined)) {
      wide.push([t0, t1]);
      continue;
    }
    const i = series.findIndex((s) => s.metric && !s.projection &&
      ((m.UUID !== undefined && s.metric.UUID === m.UUID) || (m.gpu !== undefined && s.metric.gpu === m.gpu && (!m.Hostname || !s.metric.Hostname || s.metric.Hostname === m.Hostname))));
    if (i >= 0) gpu.push([t0, t1, i]);
  }
  return { wide, gpu };
}

// Whether a panel on screen (or about to be) is still loading.
export function pending() {
  for (const p of panels) if (!p.seen || (p.visible && (p.stale || p.loading))) return true;
  return false;
}

class Panel {
  constructor(spec) {
    this.spec = spec;
    this.stale = true;
    this.visible = false;
    this.seen = false; // the IntersectionObserver has reported on it
    this.loading = false;
    this.plot = null;
    this.seq = 0;
    this.body = h("div", { class: "panel-body" });
    this.msg = h("div", { class: "panel-msg muted" }, "waiting to be visible");
    this.el = h("section", { class: "panel chart", dataset: { state: "loading", series: "0", points: "0" } },
      h("h3", {}, spec.title, spec.unit ? h("span", { class: "unit" }, " " + unitName(spec.unit)) : null),
      this.body, this.msg);
    this.el._panel = this;
    panels.add(this);
    io.observe(this.el);
  }

  refresh() {
    this.stale = true;
    if (this.visible) this.load();
  }

  destroy() {
    io.unobserve(this.el);
    panels.delete(this);
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }

  async load() {
    this.loading = true;
    try {
      await this.fetchAndDraw();
    } finally {
      this.loading = false;
    }
  }

  async fetchAndDraw() {
    this.stale = false;
    const seq = ++this.seq;
    const spec = this.spec;
    const width = Math.max(this.body.clientWidth || this.el.clientWidth || 400, 200);
    const { start: s0, end: e0 } = timeRange();
    const step = stepFor(s0, e0, width);
    const start = Math.floor(s0 / step) * step, end = Math.floor(e0 / step) * step;
    // a query with a fallback (a recording rule's raw expression) runs it
    // when the first answers no series, and over the part of the range
    // before the rule's first point when the rule is younger than the range
    const qs = spec.queries.map(async (q) => {
      const r = await api.range(typeof q.expr === "function" ? q.expr(step) : q.expr, start, end, step);
      if (!q.fallback || !r.data) return r;
      if (!r.data.result.length) return api.range(q.fallback, start, end, step);
      const first = Math.min(...r.data.result.map((x) => (x.values.length ? x.values[0][0] : Infinity)));
      if (!(first > start + step) || !Number.isFinite(first)) return r;
      const older = await api.range(q.fallback, start, first - step, step);
      return older.data ? { data: prependOlder(r.data, older.data) } : r;
    });
    const alertQ = spec.alerts !== undefined
      ? api.range(qexpr(Q.alerts.firing, { alerts: `alertstate="firing"${spec.alerts ? "," + spec.alerts : ""}` }), start, end, step) : null;
    const horizon = Math.min(3600, Math.max(300, Math.round((end - start) / 4)));
    const projQ = spec.projection ? spec.projection.queries.map((q) => api.query(q.expr(horizon), end)) : [];
    const thrQ = typeof spec.thresholds === "function" ? spec.thresholds(end) : spec.thresholds || [];
    const [res, alerts, proj, thresholds] = await Promise.all([Promise.all(qs), alertQ, Promise.all(projQ), thrQ]);
    if (seq !== this.seq) return;
    const err = res.find((r) => r.error);
    if (err) return this.fail(err.error);

    const n = Math.round((end - start) / step) + 1;
    const xs = Array.from({ length: n }, (_, i) => start + i * step);
    const series = [], data = [];
    let points = 0, maxPoints = 0;
    res.forEach((r, qi) => {
      const q = spec.queries[qi];
      for (const s of r.data.result || []) {
        maxPoints = Math.max(maxPoints, (s.values || []).length);
        const ys = new Array(n).fill(null);
        for (const [t, v] of s.values || []) {
          const i = Math.round((t - start) / step);
          if (i >= 0 && i < n) ys[i] = parseFloat(v), points++;
        }
        series.push({ label: q.legend ? q.legend(s.metric) : labelOf(s.metric), dash: q.dash, points: q.points, metric: s.metric, color: q.color });
        data.push(ys);
      }
    });
    const pairs = series.map((m, i) => [m, data[i]]).sort((a, b) => a[0].label.localeCompare(b[0].label, undefined, { numeric: true }));
    const order = pairs.map((p) => p[0]);
    const sortedData = pairs.map((p) => p[1]);
    // projections: a dashed segment from each series' last value to the
    // value predict_linear gives horizon seconds after the end
    if (proj.length) {
      xs.push(end + horizon);
      for (const d of sortedData) d.push(null);
      proj.forEach((r, pi) => {
        if (r.error || !r.data) return;
        for (const s of r.data.result) {
          const lab = spec.projection.queries[pi].legend(s.metric);
          const base = order.findIndex((o) => o.label === lab);
          if (base < 0) continue;
          const src = sortedData[base];
          let li = n - 1;
          while (li >= 0 && src[li] === null) li--;
          if (li < 0) continue;
          const ys = new Array(n + 1).fill(null);
          ys[li] = src[li];
          ys[n] = parseFloat(s.value[1]);
          order.push({ label: lab + " (projected)", dash: [6, 5], projection: true, color: order[base].color, baseIdx: base });
          sortedData.push(ys);
        }
      });
    }
    const { wide: bands, gpu: gpuBands } = splitBands(alerts && alerts.data ? intervals(alerts.data.result, step) : [], order);
    this.el.dataset.series = String(order.length);
    this.el.dataset.points = String(points);
    this.el.dataset.maxPoints = String(maxPoints);
    this.el.dataset.width = String(Math.round(width));
    this.el.dataset.alertBands = String(bands.length + gpuBands.length);
    this.el.dataset.gpuAlertBands = String(gpuBands.length);
    this.el.dataset.step = String(step);
    if (!points) {
      this.el.dataset.state = "empty";
      this.msg.textContent = "no data in this time range";
      this.msg.hidden = false;
      if (this.plot) this.plot.destroy(), this.plot = null;
      clear(this.body);
      return;
    }
    this.el.dataset.state = "ok";
    this.msg.hidden = true;
    this.draw(xs, order, sortedData, thresholds || [], bands, gpuBands, width, step);
  }

  fail(msg) {
    this.el.dataset.state = "error";
    this.msg.hidden = false;
    this.msg.textContent = msg;
    this.msg.className = "panel-msg error";
    if (this.plot) this.plot.destroy(), this.plot = null;
    clear(this.body);
  }

  draw(xs, series, data, thresholds, bands, gpuBands, width, step) {
    const spec = this.spec;
    const fg = css("--fg-muted"), grid = css("--grid");
    const colors = series.map((s, i) => s.color || PALETTE[(s.projection ? s.baseIdx : i) % PALETTE.length]);
    const thrColor = { warn: css("--warn"), crit: css("--crit"), info: css("--fg-muted") };
    const bandColor = css("--alert-band");
    const opts = {
      width,
      height: spec.height || 220,
      cursor: { drag: { x: true, y: false } },
      legend: { show: true, live: true },
      scales: {
        x: { time: true },
        y: { range: (u, min, max) => {
          let lo = spec.yMin !== undefined ? Math.min(spec.yMin, min) : min;
          let hi = spec.yMax !== undefined ? Math.max(spec.yMax, max) : max;
          for (const t of thresholds) hi = Math.max(hi, t.value * 1.02);
          if (lo === hi) lo -= 1, hi += 1;
          const pad = (hi - lo) * 0.05;
          return [spec.yMin !== undefined ? lo : lo - pad, hi + pad];
        } },
      },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 78,
          values: (u, vals) => vals.map((v) => fmt(v, spec.unit)) },
      ],
      series: [{ value: (u, v) => (v === null ? "-" : fmtTime(v * 1000)) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: colors[i],
          width: s.projection ? 1.5 : 1.25,
          dash: s.dash,
          spanGaps: !!s.projection,
          value: (u, v) => fmt(v, spec.unit),
          paths: s.points ? () => null : undefined,
          points: s.points ? { show: true, size: 9, fill: colors[i] } : { show: false },
        }))],
      hooks: {
        // alert annotations behind the data, threshold lines on top
        drawClear: [(u) => {
          if (!bands.length && !gpuBands.length) return;
          const ctx = u.ctx;
          const span = (t0, t1) => {
            const x0 = u.valToPos(t0, "x", true), x1 = u.valToPos(Math.min(t1, xs[xs.length - 1]), "x", true);
            return [x0, Math.max(x1 - x0, 2)];
          };
          ctx.save();
          ctx.fillStyle = bandColor;
          for (const [t0, t1] of bands) {
            const [x, w] = span(t0, t1);
            ctx.fillRect(x, u.bbox.top, w, u.bbox.height);
          }
          // per-GPU alerts: a strip along the top in the GPU's colour
          // (one row per GPU with alerts) over a light shade
          const rows = [...new Set(gpuBands.map((b) => b[2]))];
          const sh = 5 * devicePixelRatio;
          for (const [t0, t1, si] of gpuBands) {
            const [x, w] = span(t0, t1);
            ctx.globalAlpha = 0.35;
            ctx.fillStyle = bandColor;
            ctx.fillRect(x, u.bbox.top, w, u.bbox.height);
            ctx.globalAlpha = 1;
            ctx.fillStyle = colors[si];
            ctx.fillRect(x, u.bbox.top + rows.indexOf(si) * sh, w, sh);
          }
          ctx.restore();
        }],
        draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          for (const t of thresholds) {
            const y = u.valToPos(t.value, "y", true);
            if (y < u.bbox.top || y > u.bbox.top + u.bbox.height) continue;
            ctx.strokeStyle = thrColor[t.level] || thrColor.info;
            ctx.setLineDash([4, 4]);
            ctx.lineWidth = 1;
            ctx.beginPath();
            ctx.moveTo(u.bbox.left, y);
            ctx.lineTo(u.bbox.left + u.bbox.width, y);
            ctx.stroke();
            ctx.fillStyle = ctx.strokeStyle;
            ctx.font = `${11 * devicePixelRatio}px sans-serif`;
            ctx.textAlign = "right";
            ctx.fillText(t.label, u.bbox.left + u.bbox.width - 4, y - 3);
          }
          ctx.restore();
        }],
        setSelect: [(u) => {
          if (u.select.width < 5) return;
          const a = u.posToVal(u.select.left, "x"), b = u.posToVal(u.select.left + u.select.width, "x");
          if (this.spec.onZoom) this.spec.onZoom(a, b);
        }],
      },
    };
    if (this.plot) this.plot.destroy();
    clear(this.body);
    /* global uPlot */
    this.plot = new uPlot(opts, [xs, ...data], this.body);
    this.el._uplot = this.plot;
  }
}

function unitName(u) {
  return { "%": "(%)", C: "(°C)", W: "(W)", MiB: "(bytes)", bytes: "(bytes)", Bps: "(bytes/s)", MHz: "(Hz)", s: "(s)" }[u] || "";
}

export // The rule's series with the raw expression's older points in front,
// matched by labels without __name__ (a rule keeps its name, an
// aggregation of the raw series has none); raw series the rule lacks are
// left out.
function prependOlder(rule, older) {
  const key = (m) => JSON.stringify(Object.entries(m).filter(([k]) => k !== "__name__").sort());
  const byKey = new Map(older.result.map((x) => [key(x.metric), x.values]));
  return { ...rule, result: rule.result.map((x) => {
    const head = byKey.get(key(x.metric));
    const t0 = x.values.length ? x.values[0][0] : Infinity;
    return head ? { ...x, values: [...head.filter(([t]) => t < t0), ...x.values] } : x;
  }) };
}

function labelOf(m) {
  const parts = Object.entries(m).filter(([k]) => k !== "__name__");
  if (!parts.length) return m.__name__ || "value";
  return (m.__name__ || "") + "{" + parts.map(([k, v]) => `${k}="${v}"`).join(",") + "}";
}

export function chart(spec) {
  return new Panel(spec);
}

export function refreshAll() {
  for (const p of panels) p.refresh();
}

export function destroyAll() {
  for (const p of [...panels]) p.destroy();
}

// A timeline: rows of {label, segs: [[t0, t1, level]]} over [start, end].
export function timeline(rows, start, end, emptyText) {
  const el = h("div", { class: "timeline" });
  if (!rows.length) {
    el.append(h("div", { class: "muted" }, emptyText || "nothing in this time range"));
    return el;
  }
  const span = end - start;
  for (const r of rows) {
    const track = h("div", { class: "tl-track" });
    for (const [t0, t1, lvl, tip] of r.segs) {
      const l = Math.max(0, (t0 - start) / span) * 100, w = Math.max(0.3, (Math.min(t1, end) - Math.max(t0, start)) / span * 100);
      track.append(h("div", { class: "tl-seg " + (lvl || "warn"), style: { left: l + "%", width: w + "%" },
        title: `${r.label}: ${fmtTime(t0 * 1000)} - ${fmtTime(t1 * 1000)}${tip ? " " + tip : ""}` }));
    }
    el.append(h("div", { class: "tl-row" }, h("div", { class: "tl-label", title: r.label }, r.label), track));
  }
  el.append(h("div", { class: "tl-row tl-axis" }, h("div", { class: "tl-label" }),
    h("div", { class: "tl-track axis" }, h("span", {}, fmtTime(start * 1000)), h("span", {}, fmtTime(end * 1000)))));
  return el;
}

// Segments where a range query's series is non-zero (value != 0).
export function segments(series, step, lvlOf) {
  const segs = [];
  let t0 = null, prev = null;
  for (const [t, v] of series.values) {
    const on = parseFloat(v) !== 0;
    if (on && t0 === null) t0 = t;
    if (on && t0 !== null && prev !== null && t - prev > step * 1.5) {
      segs.push([t0, prev + step, lvlOf ? lvlOf(series.metric) : "warn"]);
      t0 = t;
    }
    if (!on && t0 !== null) {
      segs.push([t0, t, lvlOf ? lvlOf(series.metric) : "warn"]);
      t0 = null;
    }
    prev = t;
  }
  if (t0 !== null) segs.push([t0, prev + step, lvlOf ? lvlOf(series.metric) : "warn"]);
  return segs;
}
