#!/usr/bin/env python3
"""Chart of benchmarks/nas_bench.sh's CSV: one PNG per kernel and class,
median time of each variant (and network) per process count, whiskers from
the fastest to the slowest run.

usage: benchmarks/nas_plot.py [-o OUTDIR] nas.csv
"""
import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (the shared figure helpers; selects the Agg backend)

plt = plot.plt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("-o", "--out-dir", default=None)
    ap.add_argument("--name", default="nas", help="file name prefix of the PNGs (default nas)")
    ap.add_argument("--note", default="mpirun's default binding, machine shared with other jobs",
                    help="what the subtitle says after the run count")
    args = ap.parse_args()
    out_dir = args.out_dir or os.path.dirname(args.csv) or "."
    os.makedirs(out_dir, exist_ok=True)
    rows = list(plot.csv.DictReader(open(args.csv)))
    groups = collections.defaultdict(list)
    for r in rows:
        kernel = "cg" if r["kernel"] == "cg_f" else r["kernel"]
        groups[(kernel, r["class"])].append(r)
    for (kernel, cls), rs in sorted(groups.items()):
        times = collections.defaultdict(list)
        for r in rs:
            label = r["variant"] + ("" if r["net"] == "-" else f" ({r['net']})")
            if r["kernel"] == "cg_f":
                label = "Fortran " + label
            times[(label, int(r["nprocs"]))].append(float(r["seconds"]))
        labels = list(dict.fromkeys(k[0] for k in times))
        nps = sorted({k[1] for k in times})
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(nps) * len(labels) / 2), 4.2))
        width = 0.8 / len(labels)
        for i, label in enumerate(labels):
            xs, med, lo, hi = [], [], [], []
            for j, n in enumerate(nps):
                ts = times.get((label, n))
                if not ts:
                    continue
                m = statistics.median(ts)
                xs.append(j + (i - (len(labels) - 1) / 2) * width)
                med.append(m)
                lo.append(m - min(ts))
                hi.append(max(ts) - m)
            ax.bar(xs, med, width, yerr=[lo, hi], capsize=2, label=label)
        ax.set_xticks(range(len(nps)))
        ax.set_xticklabels([f"{n} process{'es' if n > 1 else ''}" for n in nps])
        ax.set_ylabel("seconds (median; whiskers: min-max)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        runs = max(len(v) for v in times.values())
        plot.finish(fig, f"NAS {kernel.upper()} class {cls}: time per variant (lower is better)",
                    f"{runs} runs per bar, {args.note}",
                    os.path.join(out_dir, f"{args.name}-{kernel}-{cls}.png"))


if __name__ == "__main__":
    main()
