#!/usr/bin/env python3
"""Writes a benchmark's dated report: benchmarks/results/<date>-<machine>/.

    report.py --name NAME --dir DIR --command CMD CSV... [--plots PNG...]

copies the CSVs and the PNGs into DIR and writes DIR/NAME.md: per CSV a
Markdown table of the columns that vary, with the columns that hold one
value for the whole file, the date and the machine in the caption. The
report says what was measured where; benchmarks/README.md says how to run
it and points at the latest report.
"""
import argparse
import csv
import datetime
import os
import platform
import shutil


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s (%s, %d CPUs, Linux %s)" % (platform.node(), model or platform.machine(),
                                           os.cpu_count() or 0, platform.release())


def table(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    if len(rows) < 2:
        return "(no rows)\n", ""
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    fixed = [i for i in range(len(header)) if len({r[i] for r in body}) == 1]
    shown = [i for i in range(len(header)) if i not in fixed] or list(range(len(header)))
    same = ", ".join("%s=%s" % (header[i], body[0][i]) for i in fixed)
    out = ["| " + " | ".join(header[i] for i in shown) + " |", "|" + "---|" * len(shown)]
    out += ["| " + " | ".join(r[i] for i in shown) + " |" for r in body]
    return "\n".join(out) + "\n", same


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--command", default="")
    p.add_argument("--plots", nargs="*", default=[])
    p.add_argument("csvs", nargs="+")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    where = machine()
    lines = ["# %s" % a.name, "", "Command: `%s`" % a.command, ""]
    for path in a.csvs:
        base = os.path.basename(path)
        shutil.copy(path, os.path.join(a.dir, base))
        text, same = table(path)
        lines += ["Table: [%s](%s), %s, %s%s." % (base, base, when, where, "; " + same if same else ""), "", text]
    for png in a.plots:
        base = os.path.basename(png)
        shutil.copy(png, os.path.join(a.dir, base))
        lines += ["![%s](%s)" % (base, base), ""]
    with open(os.path.join(a.dir, a.name + ".md"), "w") as f:
        f.write("\n".join(lines))
    print("report: %s" % os.path.join(a.dir, a.name + ".md"))


if __name__ == "__main__":
    main()
