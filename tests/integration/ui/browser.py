"""The web UI's serving and its pages in a real headless Chromium, for
tests/integration/ui.py (which owns the processes).

- check_serving: "/" is index.html with an ETag, no-cache and
  Vary: Accept-Encoding, and answers 304 to If-None-Match, gzip when
  accepted (and the same bytes unzipped), hashed assets immutable (with
  their ETag and Vary), unknown /ui/ paths 404;
- run_pages: tests/integration/ui/e2e.mjs (playwright-core from the
  build's web/node_modules, Debian's chromium) over every page: no console
  errors, one heatmap cell per simulated GPU, charts with drawn data
  (canvas pixels, uPlot data) and no more points than pixels, the firing
  alert on the alerts page and shaded on the node's charts, a syntax error
  shown at its position, both themes; screenshots go to
  $KELVIN_BUILD_DIR/ui-artifacts/.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import urllib.request

import kelvintest as kt

BUILD = os.environ.get("KELVIN_BUILD_DIR", os.path.dirname(os.path.abspath(kt.KELVIN)))
MODULES = os.path.join(BUILD, "web", "node_modules")
CHROMIUM = os.environ.get("KELVIN_CHROMIUM", "/usr/bin/chromium")
ART = os.path.join(BUILD, "ui-artifacts")
E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e.mjs")


def need_tools():
    """Raises naming what the browser run lacks."""
    for need, what in ((CHROMIUM, "chromium (scripts/deps test)"),
                       (os.path.join(MODULES, "playwright-core"), "playwright-core (the build's npm ci)"),
                       (shutil.which("node") or "/nonexistent/node", "node (scripts/deps build)")):
        if not os.path.exists(need):
            raise AssertionError(f"{what} is missing: {need}")


def check_serving(f, base):
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
    with urllib.request.urlopen(urllib.request.Request(base + "/", headers={"Accept-Encoding": "gzip"}), timeout=10) as r:
        raw = r.read()
        f.check(r.headers.get("Content-Encoding") == "gzip" and gzip.decompress(raw) == body, "gzip of / differs or is absent")
    m = re.search(rb'src="(ui/[0-9a-f]+/app\.js)"', body)
    f.check(m is not None, "index.html names no hashed app.js")
    if m:
        st, hd, _ = kt.http(base + "/" + m.group(1).decode())
        f.check(st == 200 and "immutable" in (hd.get("Cache-Control") or "") and hd.get("Content-Type", "").startswith("text/javascript")
                and hd.get("Vary") == "Accept-Encoding" and (hd.get("ETag") or "").startswith('"'), f"app.js: {st} {dict(hd)}")
    st, _, _ = kt.http(base + "/ui/000000000000/app.js")
    f.check(st == 404, f"an unknown /ui/ path: want 404, got {st}")
    st, _, _ = kt.http(base + "/api/v1/query?query=up")
    f.check(st == 200, f"the API still answers: {st}")


def run_pages(f, base, ngpus, alert):
    """Every page in Chromium; alert must be firing on a node's GPU."""
    os.makedirs(ART, exist_ok=True)
    for old in os.listdir(ART):
        if old.endswith(".png"):
            os.remove(os.path.join(ART, old))
    env = dict(os.environ, KELVIN_NODE_MODULES=MODULES, KELVIN_CHROMIUM=CHROMIUM)
    try:
        p = subprocess.run(["node", E2E, base, ART, str(ngpus), alert], capture_output=True, text=True, timeout=400, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("the browser run took more than 400 s")
    out = p.stdout.strip().splitlines()
    try:
        res = json.loads(out[-1]) if out else None
    except json.JSONDecodeError:
        res = None
    if res is None:
        raise AssertionError(f"e2e.mjs exited {p.returncode} without a result:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    for c in res["checks"]:
        f.check(c["ok"], f"{c['name']}: {c['detail'][:1500]}")
    print(f"ui: {len(res['checks'])} browser checks, screenshots in {ART}: {', '.join(sorted(os.listdir(ART)))}")
