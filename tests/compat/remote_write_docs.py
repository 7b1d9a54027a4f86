#!/usr/bin/python3
"""The configurations in docs/remote-write.md work: every fenced yaml block
whose first line is `# kelvin.yml...` is a complete configuration file, and
both `kelvin check config` and Prometheus 2.42's `promtool check config`
must accept it; every block whose first line is `# <name>.rules.yml` is a
rule file both `kelvin check rules` and `promtool check rules` must accept.
Blocks may be indented (inside a list item): the indentation of the fence
is removed. At least 6 configurations and 1 rule file must be found (a doc
that lost its snippets fails too). Prints one line per block.
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402


def blocks(text):
    """(first line, body, line number) of every ```yaml block."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^( *)```yaml\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, start, body = len(m.group(1)), i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^ *```\s*$", lines[i]):
            ln = lines[i]
            if ln[:indent].strip():
                raise AssertionError(f"line {i + 1}: block content less indented than its fence")
            body.append(ln[indent:])
            i += 1
        i += 1
        if body:
            out.append((body[0].strip(), "\n".join(body) + "\n", start))
    return out


def main():
    found = kt.kelvin_and_promtool("remote_write_docs")
    if not found:
        return 1
    src, kelvin, promtool = found
    doc = os.path.join(src, "docs", "remote-write.md")
    with open(doc, encoding="utf-8") as fh:
        text = fh.read()
    work = tempfile.mkdtemp(prefix="kelvin-rw-docs-")
    failures, nconf, nrules = [], 0, 0
    try:
        for head, body, line in blocks(text):
            if head.startswith("# kelvin.yml"):
                kind, name = "config", f"config-{line}.yml"
                nconf += 1
            elif re.match(r"^# [\w.-]+\.rules\.yml$", head):
                kind, name = "rules", f"rules-{line}.yml"
                nrules += 1
            else:
                continue
            path = os.path.join(work, name)
            with open(path, "w") as fh:
                fh.write(body)
            krc, kout, kerr = kt.run_capture([kelvin, "check", kind, path])
            prc, pout, perr = kt.run_capture([promtool, "check", kind, path])
            ok = krc == 0 and prc == 0
            print(f"{'ok ' if ok else 'BAD'} {kind:6s} docs/remote-write.md:{line} kelvin {krc} promtool {prc}")
            if not ok:
                failures.append(f"docs/remote-write.md:{line} ({kind}): kelvin {krc}: {(kout + kerr).strip()[:300]}"
                                f" | promtool {prc}: {(pout + perr).strip()[:300]}")
        if nconf < 6 or nrules < 1:
            failures.append(f"only {nconf} configurations and {nrules} rule files found in {doc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return kt.report_agreement(failures, nconf + nrules)


if __name__ == "__main__":
    sys.exit(main())
