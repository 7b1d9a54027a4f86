#!/usr/bin/python3
"""tests/compat/template_promtool.py -- proves that the expected strings of
tests/unit/rules/template.c are Prometheus 2.42's.

The unit test states each template case as OK(text, want), OKP(text,
want) or XERR(text, col, ctx, msg). This script reads those calls out of
the C source, turns every case that needs no fake query engine into an
alerting rule named "test" (so the template is named "__alert_test" and
gets 2.42's variable prefix, as in the unit test) over a series with the
unit test's labels and value, and asks the real `promtool test rules` to
confirm the expected annotation: the unit test's output for OK/OKP, and
"<error expanding template: error executing template __alert_test: ...>"
around the unit test's error text for XERR. The parse errors of
check_perr(text, want) must be what `promtool check rules` reports for
the same template. All cases run in one promtool
call; when it fails, each case runs alone so the report names the ones
that differ. Exit status: 0 when promtool agrees on every case.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

PREFIX = ("{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}"
          "{{$externalURL := .ExternalURL}}{{$value := .Value}}")
# Cases that need what promtool cannot give the same way: the unit test's
# fake query engine, its external URL and labels, the data struct itself.
SKIP = ("query", "externalURL", "pathPrefix", "$externalLabels", "$externalURL", "{{ . }}")
MAX_CASES = 1000


def c_literals(src, pos):
    """Parses the arguments of a call starting after '(' at pos: returns
    (list of args, each a bytes (joined literals) or an int, end pos)."""
    args, cur, i, depth = [], None, pos, 0
    while i < len(src):
        c = src[i]
        if c in " \t\r\n":
            i += 1
        elif c == '"':
            j, out = i + 1, bytearray()
            while src[j] != '"':
                if src[j] == "\\":
                    e = src[j + 1]
                    if e == "x":
                        k = j + 2
                        while k < len(src) and src[k] in "0123456789abcdefABCDEF":
                            k += 1
                        out.append(int(src[j + 2:k], 16) & 0xFF)
                        j = k
                        continue
                    if e in "01234567":
                        k = j + 1
                        while k < j + 4 and src[k] in "01234567":
                            k += 1
                        out.append(int(src[j + 1:k], 8) & 0xFF)
                        j = k
                        continue
                    out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", '"': b'"', "'": b"'",
                            "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}[e]
                    j += 2
                else:
                    out += src[j].encode()
                    j += 1
            cur = (cur or b"") + bytes(out)
            i = j + 1
        elif c.isdigit():
            j = i
            while src[j].isdigit():
                j += 1
            cur = int(src[i:j])
            i = j
        elif c == "(":
            depth += 1
            i += 1
        elif c == ",":
            args.append(cur)
            cur = None
            i += 1
        elif c == ")":
            if depth == 0:
                args.append(cur)
                return args, i + 1
            depth -= 1
            i += 1
        else:
            raise ValueError("unexpected %r at %d" % (c, i))
    raise ValueError("unterminated call")


def load_parse_errors(path):
    """check_perr(text, want) cases: (line, text, want as promtool names
    the template). Our own limits and what Go accepts are left out."""
    src = open(path, encoding="utf-8").read()
    cases = []
    for m in re.finditer(r"check_perr\(", src):
        line = src.count("\n", 0, m.start()) + 1
        try:
            args, _ = c_literals(src, m.end())
            text, want = args[0].decode(), args[1].decode()
        except (ValueError, IndexError, KeyError, AttributeError, UnicodeDecodeError):
            continue
        if any(ord(c) < 0x20 and c not in "\n\t" for c in text):
            continue  # not a YAML string
        if "not supported" in want or "too deep" in want or not want.startswith("template: t:"):
            continue
        cases.append((line, text, "template: __alert_test:" + want[len("template: t:"):]))
    return cases[:MAX_CASES]


def check_parse_errors(promtool, cases):
    """Each case must fail `promtool check rules` with exactly its text."""
    with tempfile.TemporaryDirectory() as d:
        rules = {"groups": [{"name": "g", "rules": [
            {"alert": "test", "expr": "up", "annotations": {"a": text}} for _, text, _ in cases]}]}
        with open(os.path.join(d, "rules.yml"), "w") as f:
            f.write(json.dumps(rules, indent=1))
        try:
            p = subprocess.run([promtool, "check", "rules", "rules.yml"], cwd=d, capture_output=True,
                               text=True, timeout=120)
        except subprocess.TimeoutExpired:
            print("MISMATCH: promtool check rules timed out")
            return len(cases)
        out = (p.stdout + p.stderr).splitlines()
        bad = 0
        for i, (line, text, want) in enumerate(cases):
            tag = 'rules.yml: group "g", rule %d, "test": annotation "a": ' % (i + 1)
            got = [o[len(tag):] for o in out if o.startswith(tag)]
            if got != [want]:
                bad += 1
                print("MISMATCH template.c:%d: %r\n  want %r\n  promtool: %r" % (line, text, want, got))
        return bad


def load_cases(path):
    src = open(path, encoding="utf-8").read()
    cases = []
    for m in re.finditer(r"(?<![A-Za-z_])(OKP|OK|XERR)\(", src):
        line = src.count("\n", 0, m.start()) + 1
        if src[m.start() - 8:m.start()].endswith("define "):
            continue
        try:
            args, _ = c_literals(src, m.end())
        except (ValueError, IndexError, KeyError):
            continue  # the macro definitions themselves
        if any(a is None for a in args):
            continue
        try:
            if m.group(1) in ("OK", "OKP"):
                text, want = args[0].decode(), args[1].decode()
            else:
                text = args[0].decode()
                col = len(PREFIX) + args[1]
                err = ('template: __alert_test:1:%d: executing "__alert_test" at <%s>: %s'
                       % (col, args[2].decode(), args[3].decode()))
                want = "<error expanding template: error executing template __alert_test: %s>" % err
        except UnicodeDecodeError:
            continue
        if any(s in text for s in SKIP):
            continue
        cases.append((line, text, want))
    return cases[:MAX_CASES]


def write_files(d, cases):
    rules = {"groups": [{"name": "g", "rules": [
        {"alert": "test", "expr": "metric * 1", "labels": {"case": str(i)},
         "annotations": {"a": text}} for i, (_, text, _) in enumerate(cases)]}]}
    exp = [{"exp_labels": {"alertname": "test", "case": str(i), "instance": "host1.example.com:9100",
                           "job": "node", "severity": "critical"},
            "exp_annotations": {"a": want}} for i, (_, _, want) in enumerate(cases)]
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m",
                       "input_series": [{"series": 'metric{instance="host1.example.com:9100",job="node",'
                                                   'severity="critical"}',
                                         "values": "1234.5678"}],
                       "alert_rule_test": [{"eval_time": "0m", "alertname": "test", "exp_alerts": exp}]}]}
    # YAML is a superset of JSON: json.dumps escapes exactly.
    with open(os.path.join(d, "rules.yml"), "w") as f:
        f.write(json.dumps(rules, indent=1))
    with open(os.path.join(d, "test.yml"), "w") as f:
        f.write(json.dumps(test, indent=1))


def promtool_ok(promtool, cases):
    with tempfile.TemporaryDirectory() as d:
        write_files(d, cases)
        try:
            p = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=d, capture_output=True,
                               text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return False, "promtool timed out"
        return p.returncode == 0, p.stdout + p.stderr


def main():
    src_dir = os.environ.get("KELVIN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    peers = os.environ.get("KELVIN_PEERS", os.path.join(src_dir, "build", "peers"))
    promtool = os.path.join(peers, "bin", "promtool")
    if not os.access(promtool, os.X_OK):
        print("template_promtool: FAIL: no promtool at %s" % promtool)
        return 1
    cases = load_cases(os.path.join(src_dir, "tests", "unit", "rules", "template.c"))
    if len(cases) < 50:
        print("template_promtool: FAIL: only %d cases read from the unit test" % len(cases))
        return 1
    perrs = load_parse_errors(os.path.join(src_dir, "tests", "unit", "rules", "template.c"))
    if len(perrs) < 20:
        print("template_promtool: FAIL: only %d parse error cases read from the unit test" % len(perrs))
        return 1
    pbad = check_parse_errors(promtool, perrs)
    ok, out = promtool_ok(promtool, cases)
    if ok and pbad == 0:
        print("template_promtool: promtool 2.42 agrees on %d template cases and %d parse errors" %
              (len(cases), len(perrs)))
        return 0
    if ok:
        print("template_promtool: FAIL: %d of %d parse errors differ from promtool 2.42" % (pbad, len(perrs)))
        return 1
    bad = 0
    for case in cases:
        one_ok, one_out = promtool_ok(promtool, [case])
        if not one_ok:
            bad += 1
            got = re.findall(r"got:\s*(.*)", one_out)
            print("MISMATCH template.c:%d: %r\n  want %r\n  promtool: %s" %
                  (case[0], case[1], case[2], (got[-1] if got else one_out.strip()[-600:])))
    if bad == 0:
        print("template_promtool: FAIL: the combined run failed but every case passes alone:\n" + out[-2000:])
    else:
        print("template_promtool: FAIL: %d of %d cases differ from promtool 2.42" % (bad, len(cases)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
