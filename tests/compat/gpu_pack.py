#!/usr/bin/python3
"""tests/compat/gpu_pack.py -- the GPU alert pack (rules/gpu.rules.yml) is valid,
tested and speaks the agent's metric names, for promtool 2.42 and for Kelvin.

Checks, each reported by name; exit status 1 if any fails:
  1. `promtool check rules --lint=all --lint-fatal` accepts the pack (no lint
     finding: a duplicate rule exits 3) and `kelvin check rules` prints the same.
  2. `promtool test rules rules/gpu.rules.test.yml` passes, and so does
     `kelvin test rules` (when `kelvin test --help` fails, that is a failure
     with its own message: the pack's tests must run on Kelvin).
  3. The tests can fail: copies of the pack with one rule broken (a
     threshold, a severity, a critical XID code) make both runners fail.
  4. Every metric name an expression reads is in the agent's catalog
     (docs/metrics.md), is node_exporter's (the real prometheus-node-exporter
     from KELVIN_PEERS, started on loopback only when a node_* name is not in
     the catalog), is `up`, or is recorded by the pack itself.
  5. Every alert has labels.severity critical, warning or info and the
     annotations summary and description; every alert has a test case where
     it fires and one where it must not (exp_alerts: []); every recording rule
     is the subject of a promql_expr_test.
The rule and test files are read with a small line-based reader (the
standard library has no YAML): it expects the layout they have (one key per
line, multi-line expressions as `expr: |` blocks); promtool's own check
(1) is what proves the YAML itself. Every process started is stopped; each
run has a timeout.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from kelvintest import run_capture as run  # noqa: E402

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "offset", "bool", "atan2", "inf", "nan",
            # aggregation operators: `sum by (l) (x)` has no '(' right after the name
            "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk",
            "quantile", "count_values"}
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|\[[^\]]*\]|'
                   r'[0-9]+(?:ms|[smhdwy])(?:[0-9]+(?:ms|[smhdwy]))*(?![A-Za-z0-9_:])|'
                   r'[A-Za-z_:][A-Za-z0-9_:]*|[0-9.]+(?:[eE][-+]?[0-9]+)?|.', re.S)
MAX_EXPRS = 500


def rule_items(path):
    """Reads the pack: list of dicts {kind, name, expr, labels, annotations, line}."""
    lines = open(path, encoding="utf-8").read().splitlines()
    items, cur, section, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)- (alert|record): (\S+)\s*$", line)
        if m:
            cur = {"kind": m.group(2), "name": m.group(3), "expr": None, "labels": {}, "annotations": {},
                   "line": i + 1, "indent": len(m.group(1)) + 2}
            items.append(cur)
            section = None
            i += 1
            continue
        if cur is not None:
            m = re.match(r"^(\s*)(\w+):\s*(.*)$", line)
            if m and len(m.group(1)) == cur["indent"]:
                key, val = m.group(2), m.group(3)
                section = key if key in ("labels", "annotations") else None
                if key == "expr":
                    if val in ("|", "|-", ">", ">-"):
                        block, j = [], i + 1
                        while j < len(lines) and (not lines[j].strip() or
                                                  len(lines[j]) - len(lines[j].lstrip()) > cur["indent"]):
                            block.append(lines[j])
                            j += 1
                        cur["expr"] = "\n".join(block)
                        i = j
                        continue
                    cur["expr"] = val
            elif m and section and len(m.group(1)) > cur["indent"]:
                cur[section][m.group(2)] = m.group(3).strip().strip('"')
            elif m and len(m.group(1)) < cur["indent"]:
                cur = None
        i += 1
    return items


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are not
    functions, keywords, label names inside {...} or in by/on/... lists."""
    toks = [t for t in TOKEN.findall(expr) if t.strip()]
    names, depth_brace, i = set(), 0, 0
    while i < len(toks):
        t = toks[i]
        if t == "{":
            depth_brace += 1
        elif t == "}":
            depth_brace -= 1
        elif depth_brace == 0 and re.match(r"^[A-Za-z_:][A-Za-z0-9_:]*$", t):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if t in LABEL_LIST_KEYWORDS:
                if nxt == "(":  # skip the label list
                    j = i + 2
                    while j < len(toks) and toks[j] != ")":
                        j += 1
                    i = j
            elif t.lower() in KEYWORDS:
                pass
            elif nxt == "(":
                pass  # a function
            else:
                names.add(t)
        i += 1
    return names


def test_cases(path):
    """alertnames with a firing case / an empty case; expressions of promql_expr_test."""
    lines = open(path, encoding="utf-8").read().splitlines()
    fire, empty, exprs = set(), set(), []
    for i, line in enumerate(lines):
        m = re.match(r"^\s+alertname: (\S+)\s*$", line)
        if m and i + 1 < len(lines):
            (empty if lines[i + 1].strip() == "exp_alerts: []" else fire).add(m.group(1))
        m = re.match(r"^\s+- expr: (.*)$", line)
        if m:
            exprs.append(m.group(1).strip())
    return fire, empty, exprs


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def node_exporter_names(peers):
    """Metric names the real node_exporter serves on this machine."""
    exe = os.path.join(peers, "bin", "prometheus-node-exporter")
    if not os.access(exe, os.X_OK):
        raise RuntimeError("%s not found (run scripts/peers)" % exe)
    port = free_port()
    p = subprocess.Popen([exe, "--web.listen-address=127.0.0.1:%d" % port], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline, body = time.time() + 20, None
        while time.time() < deadline and body is None:
            if p.poll() is not None:
                raise RuntimeError("node_exporter exited with %d" % p.returncode)
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                    body = r.read().decode(errors="replace")
            except OSError:
                time.sleep(0.2)
        if body is None:
            raise RuntimeError("node_exporter did not answer within 20 s")
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[ {]", body, re.M)}


def mutate(pack, mutation):
    """Applies (old, new) to the pack's text; the old text must occur once."""
    old, new = mutation
    if pack.count(old) != 1:
        raise RuntimeError("mutation target %r occurs %d times" % (old, pack.count(old)))
    return pack.replace(old, new)


MUTATIONS = [
    ("the HBM warning threshold", ("DCGM_FI_DEV_MEMORY_TEMP >= instance_gpu:DCGM_FI_DEV_MEMORY_TEMP:max_operating - 10",
                                   "DCGM_FI_DEV_MEMORY_TEMP >= instance_gpu:DCGM_FI_DEV_MEMORY_TEMP:max_operating - 9")),
    ("critical XIDs only warn", ('        for: 0m\n        labels:\n          severity: critical\n'
                                 '        annotations:\n          summary: "Critical XID',
                                 '        for: 0m\n        labels:\n          severity: warning\n'
                                 '        annotations:\n          summary: "Critical XID')),
]


def main():
    src = os.environ.get("KELVIN_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    src = os.path.abspath(src)
    kelvin = os.environ.get("KELVIN_BIN")
    peers = os.path.abspath(os.environ.get("KELVIN_PEERS", os.path.join(src, "build", "peers")))
    promtool = os.path.join(peers, "bin", "promtool")
    pack = os.path.join(src, "rules", "gpu.rules.yml")
    tests = os.path.join(src, "rules", "gpu.rules.test.yml")
    catalog = os.path.join(src, "docs", "metrics.md")
    if not kelvin or not os.access(kelvin, os.X_OK):
        print("gpu_pack: KELVIN_BIN is not set to an executable", file=sys.stderr)
        return 1
    kelvin = os.path.abspath(kelvin)
    if not os.access(promtool, os.X_OK):
        print("gpu_pack: %s not found (run scripts/peers)" % promtool, file=sys.stderr)
        return 1
    for f in (pack, tests, catalog):
        if not os.path.isfile(f):
            print("gpu_pack: %s is missing" % f, file=sys.stderr)
            return 1

    failures = []

    def check(name, ok, detail=""):
        print("%-4s %s%s" % ("ok" if ok else "FAIL", name, "" if ok or not detail else ": " + detail))
        if not ok:
            failures.append(name)

    rdir = os.path.dirname(pack)
    # 1. validity and lint
    prc, pout, perr = run([promtool, "check", "rules", "--lint=all", "--lint-fatal", "gpu.rules.yml"], rdir)
    check("promtool check rules (lint fatal)", prc == 0 and "SUCCESS" in pout, (pout + perr).strip()[-600:])
    krc, kout, kerr = run([kelvin, "check", "rules", "--lint=all", "--lint-fatal", "gpu.rules.yml"], rdir)
    check("kelvin check rules (lint fatal)", krc == 0 and kout == pout and kerr == perr,
          "exit %d\n--- kelvin\n%s%s--- promtool\n%s%s" % (krc, kout, kerr, pout, perr))

    # 2. the unit tests, on both
    prc, pout, perr = run([promtool, "test", "rules", "gpu.rules.test.yml"], rdir, timeout=240)
    check("promtool test rules", prc == 0 and "SUCCESS" in pout, (pout + perr).strip()[-3000:])
    hrc, hout, herr = run([kelvin, "test", "--help"], rdir)
    has_test = hrc == 0 and "test rules" in (hout + herr)
    check("kelvin test --help", has_test,
          "`kelvin test` is not available (exit %d: %s); the pack's tests must run on kelvin test rules"
          % (hrc, (hout + herr).strip()[-300:]))
    if has_test:
        krc, kout, kerr = run([kelvin, "test", "rules", "gpu.rules.test.yml"], rdir, timeout=240)
        check("kelvin test rules", krc == 0 and "SUCCESS" in kout, (kout + kerr).strip()[-3000:])

    # 3. the tests can fail
    text = open(pack, encoding="utf-8").read()
    tmp = tempfile.mkdtemp(prefix="gpu_pack.")
    try:
        shutil.copy(tests, os.path.join(tmp, "gpu.rules.test.yml"))
        for what, mutation in MUTATIONS:
            try:
                broken = mutate(text, mutation)
            except RuntimeError as e:
                check("mutant (%s) applies" % what, False, str(e))
                continue
            with open(os.path.join(tmp, "gpu.rules.yml"), "w", encoding="utf-8") as f:
                f.write(broken)
            prc, pout, perr = run([promtool, "test", "rules", "gpu.rules.test.yml"], tmp, timeout=240)
            check("promtool test rules fails on a mutant (%s)" % what, prc == 1 and "FAILED" in pout + perr,
                  "exit %d" % prc)
            if has_test:
                krc, kout, kerr = run([kelvin, "test", "rules", "gpu.rules.test.yml"], tmp, timeout=240)
                check("kelvin test rules fails on a mutant (%s)" % what, krc == 1 and "FAILED" in kout + kerr,
                      "exit %d" % krc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # 4. metric names
    items = rule_items(pack)
    check("rules read", len(items) >= 40 and all(it["expr"] for it in items),
          "%d rules, %d without expr" % (len(items), sum(1 for it in items if not it["expr"])))
    cat_text = open(catalog, encoding="utf-8").read()
    known = set(re.findall(r"^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \|", cat_text, re.M))
    check("catalog read", len(known) >= 300 and "DCGM_FI_DEV_GPU_TEMP" in known, "%d names" % len(known))
    recorded = {it["name"] for it in items if it["kind"] == "record"}
    used = {}
    for it in items[:MAX_EXPRS]:
        for n in metric_names(it["expr"] or ""):
            used.setdefault(n, []).append(it["name"])
    check("expressions name metrics", len(used) >= 30, "%d names" % len(used))
    unknown = {n for n in used if n not in known and n not in recorded and n != "up"}
    node_unknown = {n for n in unknown if n.startswith("node_")}
    if node_unknown:
        try:
            ne = node_exporter_names(peers)
        except RuntimeError as e:
            check("node_exporter's names", False, str(e))
            ne = set()
        unknown -= node_unknown & ne
    check("every metric name is the agent's, node_exporter's, up or recorded", not unknown,
          ", ".join("%s (in %s)" % (n, ", ".join(sorted(set(used[n])))) for n in sorted(unknown)))

    # 5. structure and coverage
    fire, empty, exprs = test_cases(tests)
    for it in items:
        if it["kind"] == "alert":
            sev = it["labels"].get("severity")
            check("%s: severity" % it["name"], sev in ("critical", "warning", "info"), repr(sev))
            check("%s: summary and description" % it["name"],
                  bool(it["annotations"].get("summary")) and bool(it["annotations"].get("description")),
                  "annotations %s" % sorted(it["annotations"]))
            check("%s: a test where it fires and one where it must not" % it["name"],
                  it["name"] in fire and it["name"] in empty,
                  "fires: %s, never: %s" % (it["name"] in fire, it["name"] in empty))
        else:
            check("%s: a promql_expr_test" % it["name"],
                  any(re.search(r"(^|[^a-zA-Z0-9_:])" + re.escape(it["name"]) + r"($|[^a-zA-Z0-9_:])", e)
                      for e in exprs))

    print("gpu_pack: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
