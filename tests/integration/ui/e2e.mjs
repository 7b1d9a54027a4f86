// tests/integration/ui/e2e.mjs -- drives Debian's Chromium (headless,
// through playwright-core from the build directory's web/node_modules)
// through every page of the web UI against a running kelvin server.
// Usage: node e2e.mjs BASE_URL ARTIFACT_DIR EXPECTED_GPUS EXPECTED_ALERT
// Prints one JSON object: {checks: [{name, ok, detail}], console: [...]}.
// Called by tests/integration/ui/browser.py for tests/integration/ui.py, which owns the processes.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(process.env.KELVIN_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const [base, artifacts, expectedGpus, expectedAlert] = process.argv.slice(2);
const checks = [];
const consoleErrors = [];
const check = (name, ok, detail) => checks.push({ name, ok: !!ok, detail: String(detail ?? "") });

const browser = await chromium.launch({
  executablePath: process.env.KELVIN_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(`${page.url()}: ${m.text()}`); });
  page.on("pageerror", (e) => consoleErrors.push(`${page.url()}: uncaught ${e.message}`));
  page.on("requestfailed", (r) => consoleErrors.push(`${page.url()}: request failed ${r.url()} ${r.failure() && r.failure().errorText}`));
  const shot = (name) => page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
  const go = async (hash) => {
    await page.goto(base + "/" + hash, { waitUntil: "load" });
    await page.waitForFunction(() => !document.querySelector("#view p.muted") || document.querySelector("#view").children.length > 1, null, { timeout: 15000 }).catch(() => {});
  };
  // charts that rendered: every visible .panel.chart done loading
  const settle = async (sel) => {
    await page.waitForFunction((s) => {
      const ps = [...document.querySelectorAll(s || ".panel.chart")];
      return ps.length > 0 && ps.every((p) => p.dataset.state !== "loading" || p.getBoundingClientRect().top > innerHeight + 200);
    }, sel, { timeout: 20000 }).catch(() => {});
  };
  // non-background pixels of a panel's canvas
  const drawn = (sel) => page.evaluate((s) => {
    const out = [];
    for (const p of document.querySelectorAll(s)) {
      const c = p.querySelector("canvas");
      const u = p._panel && p._panel.plot;
      let pixels = 0;
      if (c) {
        const ctx = c.getContext("2d");
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < d.length; i += 16) if (d[i] !== 0) pixels++;
      }
      out.push({ title: p.querySelector("h3").textContent, state: p.dataset.state, points: Number(p.dataset.points),
        series: u ? u.series.length - 1 : 0, labels: u ? u.series.slice(1).map((x) => x.label) : [], len: u ? u.data[0].length : 0, pixels, bands: Number(p.dataset.alertBands || 0),
        width: u ? u.bbox.width / devicePixelRatio : 0, step: Number(p.dataset.step) });
    }
    return out;
  }, sel);

  // ---- fleet overview
  await go("#/fleet?from=now-15m&to=now");
  await page.waitForSelector("#heatmap .hm-cell", { timeout: 60000 });
  const cells = await page.$$eval("#heatmap .hm-cell", (cs) => cs.length);
  check("fleet: one heatmap cell per simulated GPU", cells === Number(expectedGpus), `${cells} cells, want ${expectedGpus}`);
  const colored = await page.$$eval("#heatmap .hm-cell", (cs) => cs.filter((c) => c.dataset.value !== "").length);
  // a scrape that timed out on this shared machine leaves a node without a current value
  check("fleet: heatmap cells have values", colored >= Number(expectedGpus) * 3 / 4, `${colored} with values`);
  await page.waitForFunction(() => document.querySelectorAll("#fleet-stats .stat").length >= 8, null, { timeout: 60000 });
  const gpusStat = await page.$eval('[data-stat="GPUs"] .v', (e) => e.textContent);
  check("fleet: GPU count tile", gpusStat === String(expectedGpus), gpusStat);
  await settle();
  const fc = await drawn(".panel.chart");
  check("fleet: every chart has drawn data", fc.length >= 4 && fc.every((c) => c.state === "ok" && c.points > 0 && c.pixels > 50), JSON.stringify(fc));
  check("fleet: no chart asks for more points than pixels", fc.every((c) => c.len <= c.width + 2), JSON.stringify(fc.map((c) => [c.len, c.width])));
  await shot("fleet-dark");
  // every colouring of the heatmap
  for (const col of ["temp", "memtemp", "power", "mem", "xid", "ecc"]) {
    await go(`#/fleet?from=now-15m&to=now&color=${col}`);
    await page.waitForSelector("#heatmap .hm-cell", { timeout: 60000 });
    const n = await page.$$eval("#heatmap .hm-cell", (cs) => cs.length);
    check(`fleet: heatmap coloured by ${col}`, n === Number(expectedGpus), `${n} cells`);
  }
  // the scrubber: values at an earlier time
  const at = Math.floor(Date.now() / 1000) - 20;
  await go(`#/fleet?from=now-15m&to=now&at=${at}`);
  await page.waitForSelector("#heatmap .hm-cell", { timeout: 60000 });
  const label = await page.$eval("#hm-time", (e) => e.textContent);
  check("fleet: scrubber time shown", /\d\d:\d\d:\d\d/.test(label), label);
  // clicking a cell opens its node
  const cell = await page.$("#heatmap .hm-cell");
  const host = await cell.getAttribute("data-host");
  await cell.click();
  await page.waitForFunction(() => location.hash.startsWith("#/node"), null, { timeout: 5000 }).catch(() => {});
  check("fleet: clicking a cell opens the node", page.url().includes("#/node") && page.url().includes(encodeURIComponent(host)), page.url());

  // the rendered marker (bench/ui_bench.py times it): set once the view is drawn
  await go("#/fleet?from=now-15m&to=now");
  const marked = await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).then(() => true, () => false);
  const mark = await page.evaluate(() => ({ ...document.body.dataset, cells: document.querySelectorAll("#heatmap .hm-cell").length,
    loading: [...document.querySelectorAll(".panel.chart")].filter((p) => p.dataset.state === "loading" && p.getBoundingClientRect().top < innerHeight).length }));
  check("fleet: rendered marker set once the heatmap and visible charts are drawn", marked && mark.cells === Number(expectedGpus) && mark.loading === 0 && Number(mark.renderedAt) > 0, JSON.stringify(mark));
  // variables: a node multi-select and a cluster (the job label here), in the URL
  await page.waitForSelector("#nodes-select input[type=checkbox]", { state: "attached", timeout: 15000 }).catch(() => {});
  const hosts = await page.$$eval("#nodes-select input[type=checkbox]", (b) => b.map((x) => x.value));
  const clusters = await page.$$eval("#cluster-select option", (o) => o.map((x) => x.value).filter((x) => x));
  check("fleet: node multi-select lists every node", hosts.length === Number(expectedGpus) / 8, JSON.stringify(hosts));
  check("fleet: cluster variable lists the job", clusters.includes("gpu"), JSON.stringify(clusters));
  await page.click("#nodes-select summary");
  for (const x of hosts.slice(0, 2)) await page.check(`#nodes-select input[value="${x}"]`);
  await page.click("#nodes-apply");
  await page.waitForFunction(() => location.hash.includes("nodes="), null, { timeout: 5000 }).catch(() => {});
  await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).catch(() => {});
  const sub = await page.evaluate(() => ({ hash: location.hash, cells: [...document.querySelectorAll("#heatmap .hm-cell")].map((c) => c.dataset.host),
    gpus: (document.querySelector('[data-stat="GPUs"] .v') || {}).textContent }));
  check("fleet: node filter in the URL narrows the heatmap and tiles", sub.hash.includes("nodes=") && sub.cells.length === 16 &&
    sub.cells.every((h) => hosts.slice(0, 2).includes(h)) && sub.gpus === "16", JSON.stringify(sub));
  await go(`#/fleet?from=now-15m&to=now&cluster=gpu`);
  await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).catch(() => {});
  const byCluster = await page.$$eval("#heatmap .hm-cell", (cs) => cs.length);
  check("fleet: cluster filter keeps its GPUs", byCluster === Number(expectedGpus), `${byCluster} cells`);
  await go(`#/fleet?from=now-15m&to=now&cluster=nosuchjob`);
  await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).catch(() => {});
  const none = await page.$$eval("#heatmap .hm-cell", (cs) => cs.length);
  check("fleet: an unknown cluster shows no GPUs", none === 0, `${none} cells`);

  // ---- node view: the node of the firing alert, every GPU
  const firingAll = await page.evaluate(async () => (await (await fetch("api/v1/alerts")).json()).data.alerts.filter((a) => a.state === "firing"));
  const fired = firingAll.find((a) => a.labels.alertname === expectedAlert);
  await go(`#/node?from=now-15m&to=now&node=${encodeURIComponent(fired.labels.Hostname)}`);
  await page.waitForSelector("#node-select", { timeout: 60000 });
  await settle();
  // scroll through to make every panel visible (rendered on visibility)
  for (let y = 0; y < 6000; y += 700) { await page.evaluate((yy) => scrollTo(0, yy), y); await page.waitForTimeout(150); }
  await settle();
  const nc = await drawn(".panel.chart");
  const byTitle = (t) => nc.find((c) => c.title.startsWith(t));
  for (const t of ["GPU utilisation", "SM active", "GPU memory used", "GPU die temperature", "Memory junction", "Power vs limit", "SM clock", "CPU busy", "Memory", "Network"]) {
    const c = byTitle(t);
    check(`node: "${t}" chart has drawn data`, c && c.state === "ok" && c.points > 0 && c.pixels > 50, JSON.stringify(c));
  }
  const temp = byTitle("GPU die temperature");
  check("node: temperature chart has a predict_linear projection", temp && temp.labels.some((l) => l.endsWith("(projected)")), JSON.stringify(temp));
  const thr = await page.evaluate(() => [...document.querySelectorAll(".panel.chart")].find((p) => p.querySelector("h3").textContent.startsWith("Memory junction"))._panel.spec.title);
  check("node: HBM chart present", !!thr, thr);
  const ann = nc.filter((c) => c.bands > 0).length;
  check("node: firing alert shaded as an annotation on the node's charts", ann > 0, `${ann} charts with alert bands`);
  const gpuAnn = await page.$$eval(".panel.chart", (ps) => ps.filter((p) => Number(p.dataset.gpuAlertBands || 0) > 0).length);
  check("node: the GPU's alert drawn as a per-GPU annotation", gpuAnn > 0, `${gpuAnn} charts with per-GPU alert bands (alert labels ${JSON.stringify(fired.labels)})`);
  // another GPU of the node alone: the alert of the firing GPU is not on its charts
  const other = fired.labels.gpu === "0" ? "1" : "0";
  await go(`#/node?from=now-15m&to=now&node=${encodeURIComponent(fired.labels.Hostname)}&gpu=${other}`);
  await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).catch(() => {});
  const otherAnn = await page.$$eval(".panel.chart", (ps) => ps.slice(0, 3).map((p) => [p.dataset.state, p.dataset.gpuAlertBands]));
  const otherFiring = firingAll.some((a) => a.labels.Hostname === fired.labels.Hostname && a.labels.gpu === other);
  check("node: another GPU's charts carry no per-GPU band of the alerting GPU", otherFiring || otherAnn.every(([st, b]) => st !== "ok" || b === "0"), JSON.stringify(otherAnn));
  await go(`#/node?from=now-15m&to=now&node=${encodeURIComponent(fired.labels.Hostname)}`);
  await page.waitForFunction(() => document.body.dataset.rendered === "1", null, { timeout: 30000 }).catch(() => {});
  await page.evaluate(() => scrollTo(0, 0));
  await shot("node-dark");

  // ---- alerts
  await go("#/alerts?from=now-15m&to=now");
  await page.waitForSelector("#alerts-table, #alerts-now p", { timeout: 60000 });
  const alertText = await page.$eval("#alerts-now", (e) => e.textContent);
  check("alerts: the simulated alert is listed as firing", alertText.includes(expectedAlert) && alertText.includes("firing"), alertText.slice(0, 300));
  await page.waitForSelector("#alerts-history .tl-seg", { timeout: 15000 }).catch(() => {});
  const segs = await page.$$eval("#alerts-history .tl-seg", (s) => s.length);
  check("alerts: history timeline has segments", segs > 0, `${segs} segments`);
  await shot("alerts");

  // ---- targets, rules, tsdb, api
  await go("#/targets");
  await page.waitForSelector(".targets-table", { timeout: 60000 });
  const ups = await page.$$eval(".targets-table .badge.up", (b) => b.length);
  check("targets: targets listed as up", ups > 0, `${ups} up`);
  await shot("targets");
  await go("#/rules");
  await page.waitForSelector(".rules-table", { timeout: 60000 });
  const nrules = await page.$$eval(".rules-table tbody tr", (r) => r.length);
  check("rules: the alert pack's rules listed", nrules > 20, `${nrules} rules`);
  await shot("rules");
  await go("#/tsdb");
  await page.waitForSelector("#tsdb table", { timeout: 60000 });
  const tsdbText = await page.$eval("#tsdb", (e) => e.textContent);
  const topRows = await page.$$eval("#tsdb table tbody tr", (r) => r.length);
  check("tsdb: head stats and top metrics shown", /Head series/.test(tsdbText) && topRows >= 10, `${topRows} rows: ${tsdbText.slice(0, 200)}`);
  await shot("tsdb");
  await go("#/api");
  check("api: links to the raw endpoints", (await page.$$eval("#api-links a", (a) => a.length)) >= 10, "");

  // ---- query explorer: graph, table, syntax error with its position
  await go("#/explore?from=now-15m&to=now");
  await page.fill("#expr", "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)");
  await page.click("#execute");
  check("explore: Execute puts the query in the URL", decodeURIComponent(await page.evaluate(() => location.hash)).includes("DCGM_FI_DEV_GPU_UTIL"), await page.evaluate(() => location.hash));
  await page.waitForSelector("#query-graph, #query-error", { timeout: 60000 });
  const qerr = await page.$("#query-error");
  check("explore: the query answers without an error", !qerr, qerr ? await qerr.textContent() : "");
  await settle("#query-graph");
  const qg = await drawn("#query-graph");
  check("explore: graph drawn", qg.length === 1 && qg[0].points > 0 && qg[0].pixels > 50, JSON.stringify(qg));
  await shot("explore-graph");
  await page.click("#tab-table");
  await page.waitForSelector("#query-table tbody tr", { timeout: 60000 });
  const qrows = await page.$$eval("#query-table tbody tr", (r) => r.length);
  check("explore: table rows", qrows > 0, `${qrows} rows`);
  const bad = "sum(rate(DCGM_FI_DEV_GPU_UTIL[5m]) by";
  const before = consoleErrors.length;
  await page.fill("#expr", bad);
  await page.click("#execute");
  await page.waitForSelector("#query-error", { timeout: 60000 });
  // Chromium logs the API's 400 answer to the bad query: expected, once
  const logged = consoleErrors.splice(before).filter((e) => !/status of 400/.test(e));
  consoleErrors.push(...logged);
  const err = await page.$eval("#query-error", (e) => ({ text: e.textContent, line: e.dataset.line, col: e.dataset.col, mark: (e.querySelector("mark") || {}).textContent }));
  // Prometheus says 1:36 (the "by" after the complete sum(...) argument)
  check("explore: syntax error shown with its position", err.line === "1" && err.col === "36" && err.mark === "b" && /parse error/.test(err.text), JSON.stringify(err));
  await shot("explore-error");
  const hist = await page.evaluate(() => JSON.parse(localStorage.getItem("kelvin.history") || "[]"));
  check("explore: history kept in localStorage", hist.includes(bad), JSON.stringify(hist));

  // ---- training, capacity
  await go("#/jobs?from=now-15m&to=now");
  await page.waitForSelector("#job-gpus h3", { timeout: 60000 });
  await shot("jobs");
  await go("#/capacity?from=now-15m&to=now");
  await page.waitForSelector("#capacity-stats .stat", { timeout: 60000 });
  await settle();
  const cc = await drawn(".panel.chart");
  check("capacity: trend charts drawn", cc.filter((c) => c.points > 0).length >= 3, JSON.stringify(cc));
  await shot("capacity");

  // ---- light theme
  await go("#/fleet?from=now-15m&to=now");
  await page.click("#theme");
  await page.waitForSelector("#heatmap .hm-cell", { timeout: 60000 });
  await settle();
  const themeNow = await page.evaluate(() => document.documentElement.dataset.theme);
  check("theme: toggles to light", themeNow === "light", themeNow);
  await shot("fleet-light");

  // ---- caching: hashed assets immutable, index revalidated (304)
  const heads = await page.evaluate(async () => {
    const src = document.querySelector('script[type="module"]').getAttribute("src");
    const a = await fetch(src, { cache: "no-store" });
    const i = await fetch("./", { cache: "no-store" });
    const etag = i.headers.get("etag");
    return { cc: a.headers.get("cache-control"), etag };
  });
  check("serving: hashed assets are immutable", /immutable/.test(heads.cc || ""), JSON.stringify(heads));
  check("serving: index has an ETag", /^"[0-9a-f]{16}"$/.test(heads.etag || ""), JSON.stringify(heads));
} finally {
  await browser.close();
}
check("no console errors on any page", consoleErrors.length === 0, consoleErrors.join("\n"));
console.log(JSON.stringify({ checks }));
