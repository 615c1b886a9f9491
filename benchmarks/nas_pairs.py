"""Pair ratios of NAS runs: mpi's time over each other variant's in the same
run index of the same CSV (nas_bench.sh, nas_two_hosts.sh: the variants of one
run index ran back to back), so a load that moved between runs moves both.
Several CSVs (guest boots) pool their cells; their pairs stay per CSV.

  python3 benchmarks/nas_pairs.py CSV [CSV...]

Per kernel, class, np and variant: runs, median and spread of the time, median
communication share, mpi's median over this one's, and the pair ratios'
median, spread and values in order."""
import csv
import statistics as st
import sys

cells = {}
for f in sys.argv[1:]:
    with open(f, newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["kernel"], r["class"], r["nprocs"], r["variant"])
            # NPB's own rows have no communication seconds.
            comm = float(r["comm_seconds"]) if r["comm_seconds"] else float("nan")
            cells.setdefault(key, {})[(f, int(r["run"]))] = (float(r["seconds"]), comm)
print("kernel class np variant   n  median    min-max       comm%  vs-mpi(medians)  "
      "pair ratios mpi/variant: median (min-max) each")
for key in sorted(cells):
    k, c, p, v = key
    d = cells[key]
    ts = [d[i][0] for i in sorted(d)]
    share = st.median(d[i][1] / d[i][0] for i in d)
    line = f"{k:6s} {c}  {p:>2} {v:9s} {len(ts):2d} {st.median(ts):7.3f} {min(ts):6.3f}-{max(ts):6.3f}  {100 * share:4.0f}%"
    ref = cells.get((k, c, p, "mpi"))
    if v != "mpi" and ref:
        pr = [ref[i][0] / d[i][0] for i in sorted(d) if i in ref]
        line += f"   {st.median(x[0] for x in ref.values()) / st.median(ts):5.2f}x"
        if pr:
            line += f"   {st.median(pr):5.2f}x ({min(pr):.2f}-{max(pr):.2f}) " + " ".join(f"{x:.2f}" for x in pr)
    print(line)
