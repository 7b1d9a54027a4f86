// bench/ui_bench.mjs -- the web UI's render times in headless Chromium
// (Debian's chromium through playwright-core from the build's
// web/node_modules), for bench/ui_bench.py, which owns the server.
// Usage: node ui_bench.mjs BASE_URL RUNS VIEW_HASH...
// For each view: one cold load (a fresh browser context: empty caches),
// then RUNS warm loads (about:blank, then the view again: the HTTP cache
// holds the hashed assets, index.html is revalidated). A load ends when
// the app sets document.body.dataset.rendered = "1" (every panel on screen
// drawn, the heatmap filled; web/src/app.js); its time is the app's
// data-rendered-at (performance.now(), ms since the navigation started).
// Bytes: the Performance API's transferSize (on the wire, headers included,
// 0 for a cache hit) and encodedBodySize (bodies as sent, compressed) of
// the navigation and every resource, split into API answers and assets.
// Points: after the timed load the page is scrolled through so every
// panel draws; each chart reports the most points any series of its
// answers had (data-max-points) and its plot width (data-width).
// Prints one JSON object.
import { createRequire } from "node:module";

const require = createRequire(process.env.KELVIN_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const [base, runsArg, ...views] = process.argv.slice(2);
const runs = Number(runsArg) || 5;
const out = { views: {} };

const browser = await chromium.launch({
  executablePath: process.env.KELVIN_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server"],
});

async function load(page, url) {
  await page.goto("about:blank");
  await page.goto(url, { waitUntil: "commit" });
  await page.waitForFunction(() => document.body && document.body.dataset.rendered === "1", null, { timeout: 120000, polling: 50 });
  return page.evaluate(() => {
    const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
    const b = { wire: 0, body: 0, apiWire: 0, apiBody: 0, requests: entries.length, apiRequests: 0 };
    const api = [];
    for (const e of entries) {
      b.wire += e.transferSize || 0;
      b.body += e.encodedBodySize || 0;
      if (e.name.includes("/api/v1/")) {
        b.apiWire += e.transferSize || 0;
        b.apiBody += e.encodedBodySize || 0;
        b.apiRequests++;
        const u = new URL(e.name);
        api.push({ path: u.pathname.replace(/.*\/api\/v1\//, ""), query: u.searchParams.get("query") || u.searchParams.get("match[]") || "",
          ms: Math.round(e.responseEnd - e.requestStart), start: Math.round(e.startTime), end: Math.round(e.responseEnd), bytes: e.encodedBodySize });
      }
    }
    const d = document.body.dataset;
    return { ms: Number(d.renderedAt), routeMs: Number(d.renderMs), bytes: b, api,
      cells: document.querySelectorAll("#heatmap .hm-cell").length,
      filled: document.querySelectorAll('#heatmap .hm-cell:not([data-value=""])').length,
      charts: [...document.querySelectorAll(".panel.chart")].filter((p) => p.dataset.state !== "loading").length };
  });
}

async function points(page) {
  for (let y = 0; y < 8000; y += 600) {
    await page.evaluate((yy) => scrollTo(0, yy), y);
    await page.waitForTimeout(100);
  }
  await page.waitForFunction(() => [...document.querySelectorAll(".panel.chart")].every((p) => p.dataset.state !== "loading"), null, { timeout: 60000 }).catch(() => {});
  return page.evaluate(() => [...document.querySelectorAll(".panel.chart")].map((p) => ({
    title: p.querySelector("h3").textContent, state: p.dataset.state, maxPoints: Number(p.dataset.maxPoints || 0),
    width: Number(p.dataset.width || 0), step: Number(p.dataset.step || 0) })));
}

try {
  for (const hash of views) {
    const url = base + "/" + hash;
    const v = { url, cold: null, warm: [] };
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await ctx.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    v.cold = await load(page, url);
    for (let i = 0; i < runs; i++) v.warm.push(await load(page, url));
    v.panels = await points(page);
    v.errors = errors;
    await ctx.close();
    out.views[hash] = v;
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
