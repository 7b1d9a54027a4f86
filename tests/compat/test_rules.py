#!/usr/bin/python3
"""test_rules.py -- `kelvin test rules` against promtool 2.42's `test rules`.

For every *.yml under tests/fixtures/rulestest/ (Prometheus's own rule unit
tests, Kelvin's passing and failing ones, and the rule files themselves,
which fail as unit-test files), runs
    $KELVIN_PEERS/bin/promtool test rules FILE
    $KELVIN_BIN test rules FILE
from that directory and requires the same exit status, the same stdout and
the same stderr, byte for byte. One normalisation: promtool names the two
series of a "found duplicate series for the match group" error in the order
its LazyLoader happened to create them (Go map iteration, so it varies from
run to run); both outputs get those two names sorted before the comparison.
Then runs both over all files at once (one run, several files: the exit
status is 1 if any fails) and compares the same way.

Checks that the expectations still hold: every file whose name ends in
-test.yml and starts with own- fails, except own-templates-test.yml, which
passes; Prometheus's unittest.yml passes.
Prints a per-file table; exits 1 on any mismatch.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402
from kelvintest import run_capture as run  # noqa: E402

DUP = re.compile(r"(on the (?:left|right) hand-side of the operation: \[)(\{[^\]]*?\}), (\{[^\]]*?\})(\])")


def normalise(text):
    return DUP.sub(lambda m: m.group(1) + ", ".join(sorted([m.group(2), m.group(3)])) + m.group(4), text)


def main():
    found = kt.kelvin_and_promtool("test_rules")
    if not found:
        return 1
    src, kelvin, promtool = found
    base = os.path.join(src, "tests", "fixtures", "rulestest")
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(base, "*.yml")))
    if len(files) < 20 or "unittest.yml" not in files:
        print("test_rules: too few fixture files under %s" % base, file=sys.stderr)
        return 1
    failures = []
    print("%-34s %8s %8s  %s" % ("file", "promtool", "kelvin", "result"))
    for name in files:
        prc, pout, perr = run([promtool, "test", "rules", name], base, timeout=300)
        krc, kout, kerr = run([kelvin, "test", "rules", name], base, timeout=300)
        problems = []
        if krc not in (0, 1):
            problems.append("kelvin exit status %d (crash or usage error): %s" % (krc, kerr.strip()[-400:]))
        if prc != krc:
            problems.append("exit status differs: promtool %d, kelvin %d" % (prc, krc))
        if normalise(pout) != normalise(kout):
            problems.append("stdout differs:\n--- promtool\n%s--- kelvin\n%s" % (pout, kout))
        if normalise(perr) != normalise(kerr):
            problems.append("stderr differs:\n--- promtool\n%s--- kelvin\n%s" % (perr, kerr))
        if "Unit Testing:  " + name not in kout:
            problems.append("no 'Unit Testing:  FILE' line on stdout")
        if name == "unittest.yml" or name == "own-templates-test.yml":
            if krc != 0:
                problems.append("a passing fixture failed: %s" % kerr.strip()[-400:])
        elif name.startswith("own-") and name.endswith("-test.yml") and krc != 1:
            problems.append("a failing fixture passed")
        print("%-34s %8d %8d  %s" % (name, prc, krc, "ok" if not problems else "FAIL"))
        for p in problems:
            failures.append("%s: %s" % (name, p))
    prc, pout, perr = run([promtool, "test", "rules"] + files, base, timeout=600)
    krc, kout, kerr = run([kelvin, "test", "rules"] + files, base, timeout=600)
    ok = prc == krc and normalise(pout) == normalise(kout) and normalise(perr) == normalise(kerr)
    print("%-34s %8d %8d  %s" % ("(all files in one run)", prc, krc, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("all files in one run: promtool %d, kelvin %d; outputs %s" % (
            prc, krc, "equal" if pout == kout and perr == kerr else "differ"))
    return kt.report_agreement(failures, len(files))


if __name__ == "__main__":
    sys.exit(main())
