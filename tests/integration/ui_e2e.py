#!/usr/bin/python3
"""The web UI end to end, in a real headless Chromium.

- starts `kelvin sim fleet` (4 nodes x 8 simulated GPUs, scenario xid-storm
  so the alert pack's GPUXidError fires) and `kelvin server` scraping it
  every second through file_sd, with rules/gpu.rules.yml;
- checks the UI's serving: "/" is index.html with an ETag, no-cache and
  Vary: Accept-Encoding, and answers 304 to If-None-Match, gzip when
  accepted (and the same bytes unzipped), hashed assets immutable (with
  their ETag and Vary), unknown /ui/ paths 404;
- waits until the alert fires, then runs tests/integration/ui/e2e.mjs
  (playwright-core from the build's web/node_modules, Debian's chromium)
  over every page: no console errors, one heatmap cell per simulated GPU,
  charts with drawn data (canvas pixels, uPlot data) and no more points
  than pixels, the firing alert on the alerts page and shaded on the
  node's charts, a syntax error shown at its position, both themes;
- screenshots go to $KELVIN_BUILD_DIR/ui-artifacts/.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

NODES, GPUS = 4, 8
ALERT = "GPUXidError"
BUILD = os.environ.get("KELVIN_BUILD_DIR", os.path.dirname(os.path.abspath(kt.KELVIN)))
MODULES = os.path.join(BUILD, "web", "node_modules")
CHROMIUM = os.environ.get("KELVIN_CHROMIUM", "/usr/bin/chromium")
ART = os.path.join(BUILD, "ui-artifacts")

f = kt.Failures()
tmp = tempfile.mkdtemp(prefix="kelvin-ui-")
try:
    for need, what in ((CHROMIUM, "chromium (scripts/deps test)"), (os.path.join(MODULES, "playwright-core"), "playwright-core (the build's npm ci)"),
                       (shutil.which("node") or "/nonexistent/node", "node (scripts/deps build)")):
        if not os.path.exists(need):
            raise AssertionError(f"{what} is missing: {need}")
    os.makedirs(ART, exist_ok=True)
    for old in os.listdir(ART):
        if old.endswith(".png"):
            os.remove(os.path.join(ART, old))

    sport = kt.free_port()
    _, _, sd = kt.start_fleet(tmp, NODES, GPUS, "xid-storm", 3)
    rules = os.path.join(kt.SOURCE, "rules", "gpu.rules.yml")
    conf = os.path.join(tmp, "kelvin.yml")
    with open(conf, "w") as fh:
        fh.write("global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 2s\n"
                 f"rule_files: ['{rules}']\n"
                 "scrape_configs:\n"
                 "  - job_name: gpu\n"
                 f"    file_sd_configs: [{{files: ['{sd}'], refresh_interval: 1s}}]\n"
                 "  - job_name: kelvin\n"
                 f"    static_configs: [{{targets: ['127.0.0.1:{sport}']}}]\n")
    srv = kt.start([kt.KELVIN, "server", f"--config.file={conf}", f"--web.listen-address=127.0.0.1:{sport}",
                    f"--storage.tsdb.path={os.path.join(tmp, 'data')}"], log=os.path.join(tmp, "server.log"))
    base = f"http://127.0.0.1:{sport}"
    kt.wait_http(base + "/-/ready", proc=srv)

    # ---- serving
    st, hd, body = kt.http(base + "/", headers={"Accept-Encoding": "identity"})
    etag = hd.get("ETag")
    f.check(st == 200 and b"<!doctype html>" in body[:100] and hd.get("Content-Type", "").startswith("text/html"),
            f"/: {st} {hd.get('Content-Type')} {body[:80]!r}")
    f.check(etag is not None and etag.startswith('"'), f"/ has no ETag: {dict(hd)}")
    f.check(hd.get("Vary") == "Accept-Encoding" and hd.get("Cache-Control") == "no-cache",
            f"/ must vary with Accept-Encoding and be revalidated: {dict(hd)}")
    st2, _, _ = kt.http(base + "/", headers={"If-None-Match": etag or '"x"'})
    f.check(st2 == 304, f"If-None-Match with the ETag: want 304, got {st2}")
    st3, _, _ = kt.http(base + "/", headers={"If-None-Match": '"0000000000000000"'})
    f.check(st3 == 200, f"If-None-Match with another ETag: want 200, got {st3}")
    import urllib.request
    with urllib.request.urlopen(urllib.request.Request(base + "/", headers={"Accept-Encoding": "gzip"}), timeout=10) as r:
        raw = r.read()
        f.check(r.headers.get("Content-Encoding") == "gzip" and gzip.decompress(raw) == body, "gzip of / differs or is absent")
    import re
    m = re.search(rb'src="(ui/[0-9a-f]+/app\.js)"', body)
    f.check(m is not None, "index.html names no hashed app.js")
    if m:
        st, hd, js = kt.http(base + "/" + m.group(1).decode())
        f.check(st == 200 and "immutable" in (hd.get("Cache-Control") or "") and hd.get("Content-Type", "").startswith("text/javascript")
                and hd.get("Vary") == "Accept-Encoding" and (hd.get("ETag") or "").startswith('"'), f"app.js: {st} {dict(hd)}")
    st, _, _ = kt.http(base + "/ui/000000000000/app.js")
    f.check(st == 404, f"an unknown /ui/ path: want 404, got {st}")
    st, _, _ = kt.http(base + "/api/v1/query?query=up")
    f.check(st == 200, f"the API still answers: {st}")

    # ---- wait for data, the recording rules and the firing alert
    deadline = time.time() + 120
    firing = False
    while time.time() < deadline:
        st, _, b = kt.http(base + "/api/v1/alerts")
        if st == 200 and any(a["labels"].get("alertname") == ALERT and a["state"] == "firing" for a in json.loads(b)["data"]["alerts"]):
            firing = True
            break
        time.sleep(1)
    f.check(firing, f"{ALERT} did not fire within 120 s")
    time.sleep(5)  # a few more samples so charts have lines
    env = dict(os.environ, KELVIN_NODE_MODULES=MODULES, KELVIN_CHROMIUM=CHROMIUM)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ui", "e2e.mjs")
    try:
        p = subprocess.run(["node", script, base, ART, str(NODES * GPUS), ALERT], capture_output=True, text=True, timeout=400, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("the browser run took more than 240 s")
    out = p.stdout.strip().splitlines()
    try:
        res = json.loads(out[-1]) if out else None
    except json.JSONDecodeError:
        res = None
    if res is None:
        raise AssertionError(f"e2e.mjs exited {p.returncode} without a result:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    for c in res["checks"]:
        f.check(c["ok"], f"{c['name']}: {c['detail'][:1500]}")
    print(f"ui_e2e: {len(res['checks'])} browser checks, screenshots in {ART}: {', '.join(sorted(os.listdir(ART)))}")
finally:
    kt.stop_all()
    shutil.rmtree(tmp, ignore_errors=True)
    f.finish("ui_e2e")
