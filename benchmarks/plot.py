#!/usr/bin/env python3
"""Turns the CSVs of the benchmarks in benchmarks/ into PNG charts.

usage: benchmarks/plot.py [-o OUTDIR] CSV_OR_DIR...

Every CSV the harness writes names its program (column `bench`), the process
count and rank 0's CPU binding; a directory stands for every *.csv in it
(files without a `bench` column, such as the merged compare.csv, are passed
over). Rows of one program are drawn together: one PNG per program, named
after it, in OUTDIR (default: the folder of the first input). CSVs whose
series (impl, path, mode, protocol, target) coincide are repeats of one
configuration (RUNS=N of the compare scripts): the median of each value is
drawn. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import csv
import math
import os
import statistics
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter  # noqa: E402

SERIES_COLUMNS = ("impl", "path", "mode", "protocol", "target")
IMPL_STYLE = {"libarmci": "-", "armci-mpi": "--"}
BINDING_WORDS = {"core": "each rank bound to one core (as mpirun binds by default)",
                 "none": "ranks not bound (--bind-to none)"}


def fmt_size(n, _pos=None):
    n = int(round(n))
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def read_inputs(paths):
    """{bench: [row dict, ...]}, every row with its file's name."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".csv"))
        else:
            files.append(p)
    by_bench = collections.defaultdict(list)
    for path in files:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows or "bench" not in rows[0]:
            print(f"plot: {path}: no 'bench' column (not a benchmark's own CSV), passed over")
            continue
        for r in rows:
            r["_file"] = path
            by_bench[r["bench"]].append(r)
    return by_bench


def series_of(row, on_x_axis=()):
    """The configuration a row belongs to; columns drawn on the x axis are not part of it."""
    return tuple("" if c in on_x_axis else row.get(c, "") for c in SERIES_COLUMNS)


def series_label(series, all_series):
    """The parts of a series name that differ between the series drawn."""
    parts = []
    for i, col in enumerate(SERIES_COLUMNS):
        values = {s[i] for s in all_series}
        if len(values) > 1 or col == "impl":
            v = series[i]
            if col != "impl" and v in ("mpi", "armci-mpi"):
                continue
            if v:
                parts.append(v)
    return " ".join(parts)


def ordered(series):
    """libarmci's series first, then the references."""
    return sorted(series, key=lambda s: (s[0] != "libarmci", s))


def medians(rows, key, value_cols):
    """{key(row): {col: median over the rows with that key}} in first-seen order."""
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    out = collections.OrderedDict()
    for k, rs in groups.items():
        out[k] = {}
        for c in value_cols:
            vals = [number(r.get(c)) for r in rs]
            vals = [v for v in vals if not math.isnan(v)]
            out[k][c] = statistics.median(vals) if vals else math.nan
    return out


def context(rows):
    """'2 processes, each rank bound to one core ...' from the rows."""
    nprocs = sorted({r.get("nprocs", "?") for r in rows})
    binds = sorted({r.get("binding", "?") for r in rows})
    bind_text = "; ".join(BINDING_WORDS.get(b, f"binding {b}") for b in binds)
    samples = sorted({r["samples"] for r in rows if r.get("samples")})
    text = f"{'/'.join(nprocs)} processes, {bind_text}"
    if samples:
        text += f"; medians of {'/'.join(samples)} samples"
    return text


def plain_log_y(ax):
    """A log y axis labelled 0.1, 1, 10 rather than powers of ten."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))


def log_size_axis(ax, label="bytes per operation"):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(fmt_size))
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


def finish(fig, title, subtitle, out_path):
    # About 12 characters of an 11-point title per inch of figure.
    width = max(40, int(fig.get_figwidth() * 12))
    text = "\n".join(textwrap.fill(t, width) for t in (title, subtitle))
    fig.suptitle(text, fontsize=11)
    lines = text.count("\n") + 1
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.15 + 0.2 * lines) / fig.get_figheight()))
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    print(f"plot: wrote {out_path}")


def line(ax, xs, ys, label, color, style="-", lo=None, hi=None, marker="o"):
    pts = [(x, y) for x, y in zip(xs, ys) if not math.isnan(y)]
    if not pts:
        return
    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, marker=marker,
            markersize=3, linewidth=1.4, label=label)
    if lo is not None and hi is not None:
        band = [(x, a, b) for x, a, b in zip(xs, lo, hi) if not (math.isnan(a) or math.isnan(b))]
        if band:
            ax.fill_between([b[0] for b in band], [b[1] for b in band], [b[2] for b in band],
                            color=color, alpha=0.15, linewidth=0)


# ---------------------------------------------------------------- contig_bench

def plot_contig(rows, out_dir):
    cols = ("lat_us_median", "bw_MBps_median", "lat_us_q1", "lat_us_q3", "bw_MBps_q1", "bw_MBps_q3")
    cells = medians(rows, lambda r: (series_of(r), r["op"], int(r["size"])), cols)
    all_series = ordered({k[0] for k in cells})
    ours = [s for s in all_series if s[0] == "libarmci"]
    theirs = [s for s in all_series if s[0] == "armci-mpi"]
    ops = [op for op in ("put", "get", "acc", "put+fence") if any(k[1] == op for k in cells)]
    colors = dict(zip(ops, ("tab:blue", "tab:orange", "tab:green", "tab:purple")))
    sizes = sorted({k[2] for k in cells})

    def get(series, op, col):
        return [cells.get((series, op, s), {}).get(col, math.nan) for s in sizes]

    compare = bool(ours and theirs)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    (ax_lat, ax_bw), (ax_ratio, ax_frac) = axes
    # The one-core memcpy of the same size, from our run (the reference).
    ref = ours[0] if ours else all_series[0]
    memcpy_time = get(ref, "memcpy", "lat_us_median")
    memcpy_bw = get(ref, "memcpy", "bw_MBps_median")
    for series in all_series:
        style = IMPL_STYLE.get(series[0], ":")
        name = series_label(series, all_series)
        for op in ops:
            line(ax_lat, sizes, get(series, op, "lat_us_median"), f"{op} {name}", colors[op], style,
                 get(series, op, "lat_us_q1"), get(series, op, "lat_us_q3"))
            line(ax_bw, sizes, get(series, op, "bw_MBps_median"), f"{op} {name}", colors[op], style,
                 get(series, op, "bw_MBps_q1"), get(series, op, "bw_MBps_q3"))
            frac = [b / m if m > 0 else math.nan for b, m in zip(get(series, op, "bw_MBps_median"), memcpy_bw)]
            line(ax_frac, sizes, frac, f"{op} {name}", colors[op], style)
    line(ax_lat, sizes, memcpy_time, "memcpy (one core)", "black", ":", marker="")
    line(ax_bw, sizes, memcpy_bw, "memcpy (one core)", "black", ":", marker="")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("µs per blocking operation (median)")
    ax_lat.set_title("latency: blocking Put / Get / Acc (log-log)")
    ax_bw.set_yscale("log")
    ax_bw.set_ylabel("MB/s (10^6 B/s), windows of nonblocking ops")
    ax_bw.set_title("bandwidth: windows of NbPut / NbGet / NbAcc + Wait")
    plain_log_y(ax_frac)
    ax_frac.set_ylabel("bandwidth / one-core memcpy bandwidth")
    ax_frac.set_title("fraction of a one-core memcpy of the same size")
    ax_frac.axhline(1.0, color="black", linewidth=0.8)
    if compare:
        for op in ops:
            for s_ours in ours:
                lo = get(s_ours, op, "lat_us_median")
                lm = get(theirs[0], op, "lat_us_median")
                bo = get(s_ours, op, "bw_MBps_median")
                bm = get(theirs[0], op, "bw_MBps_median")
                line(ax_ratio, sizes, [m / o if o > 0 else math.nan for o, m in zip(lo, lm)],
                     f"{op} latency", colors[op], "-")
                line(ax_ratio, sizes, [o / m if m > 0 else math.nan for o, m in zip(bo, bm)],
                     f"{op} bandwidth", colors[op], "-.", marker="s")
        plain_log_y(ax_ratio)
        ax_ratio.axhline(1.0, color="black", linewidth=0.8)
        ax_ratio.set_ylabel("ARMCI-MPI time / libarmci time")
        ax_ratio.set_title("libarmci against ARMCI-MPI (above 1: libarmci faster)")
    else:
        ax_ratio.axis("off")
        ax_ratio.text(0.5, 0.5, "no ARMCI-MPI run in these CSVs:\nno ratio to draw", ha="center",
                      va="center", transform=ax_ratio.transAxes)
    for ax in (ax_lat, ax_bw, ax_ratio, ax_frac):
        if ax.has_data():
            log_size_axis(ax)
            ax.legend(fontsize=7, ncol=2)
    subtitle = (f"{context(rows)}, shaded: quartiles; solid: libarmci, dashed: ARMCI-MPI, "
                "dotted: one-core memcpy")
    finish(fig, "contig_bench: contiguous ARMCI put/get/acc from rank 0 to rank 1", subtitle,
           os.path.join(out_dir, "contig_bench.png"))


# ------------------------------------------------ strided_bench, vector_columns

def plot_strided(rows, out_dir):
    cells = medians(rows, lambda r: (series_of(r), r["op"], int(r["piece"])), ("bw_MBps_median",))
    all_series = ordered({k[0] for k in cells})
    pieces = sorted({k[2] for k in cells})
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    cmap = plt.get_cmap("tab10")
    for ax, (op, contig) in zip(axes, (("gets", "get_contig"), ("puts", "put_contig"))):
        for i, series in enumerate(all_series):
            bw = [cells.get((series, op, p), {}).get("bw_MBps_median", math.nan) for p in pieces]
            bound = [cells.get((series, contig, p), {}).get("bw_MBps_median", math.nan) for p in pieces]
            name = series_label(series, all_series)
            line(ax, pieces, bw, name, cmap(i % 10), "-")
            line(ax, pieces, bound, f"{name} contiguous bound", cmap(i % 10), ":", marker="")
        ax.set_yscale("log")
        ax.set_ylabel("MB/s (median)")
        ax.set_title(f"ARMCI_{op[:3].capitalize()}S of 1-level strided pieces")
        log_size_axis(ax, "piece size (bytes), total fixed")
        ax.legend(fontsize=7)
    finish(fig, "strided_bench: strided transfer bandwidth by piece size (dotted: the same bytes contiguous)",
           context(rows), os.path.join(out_dir, "strided_bench.png"))


def plot_vector(rows, out_dir):
    cells = medians(rows, lambda r: (series_of(r), r["op"], int(r["rows"]), int(r["cols"])),
                    ("bw_MBps_median",))
    all_series = ordered({k[0] for k in cells})
    row_counts = sorted({k[2] for k in cells})
    cols = sorted({k[3] for k in cells})
    fig, axes = plt.subplots(1, len(row_counts), figsize=(max(10, 6.5 * len(row_counts)), 5.5), squeeze=False)
    colors = {"gets": "tab:blue", "getv": "tab:cyan", "get_contig": "tab:gray",
              "puts": "tab:orange", "putv": "tab:red", "put_contig": "black"}
    styles = ["-", "--", "-.", ":"]
    for ax, m in zip(axes[0], row_counts):
        for i, series in enumerate(all_series):
            for op, color in colors.items():
                bw = [cells.get((series, op, m, c), {}).get("bw_MBps_median", math.nan) for c in cols]
                line(ax, cols, bw, f"{op} {series_label(series, all_series)}", color, styles[i % 4])
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_yscale("log")
        ax.set_xlabel("columns C (4-byte ints) of each 16 KiB row")
        ax.set_ylabel("MB/s (median)")
        ax.set_title(f"M = {m} rows")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    finish(fig, "vector_columns: C columns of M rows (a Global Arrays patch), strided, vector, contiguous",
           context(rows), os.path.join(out_dir, "vector_columns.png"))


# --------------------------------------------------- overlap_bench, target_busy

def plot_overlap(rows, out_dir):
    rows = [r for r in rows if abs(number(r.get("c_frac")) - 1) < 1e-9]
    cells = medians(rows, lambda r: (series_of(r), r["op"], int(r["bytes"])),
                    ("t_comm_us", "t_total_us", "overlap_pct"))
    all_series = ordered({k[0] for k in cells})
    sizes = sorted({k[2] for k in cells})
    fig, (ax_t, ax_o) = plt.subplots(1, 2, figsize=(13, 5.5))
    cmap = plt.get_cmap("tab10")
    for i, series in enumerate(all_series):
        for op, style in (("get", "-"), ("put", "--")):
            get = lambda col: [cells.get((series, op, s), {}).get(col, math.nan) for s in sizes]  # noqa: E731
            name = f"{op} {series_label(series, all_series)}"
            line(ax_t, sizes, get("t_comm_us"), name, cmap(i % 10), style)
            line(ax_o, sizes, get("overlap_pct"), name, cmap(i % 10), style)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("t_comm: Nb + Wait (+ Fence), µs")
    ax_t.set_title("time of one transfer with nothing to overlap")
    ax_o.set_ylim(-5, 105)
    ax_o.set_ylabel("overlap %: share of the shorter part hidden")
    ax_o.set_title("overlap with compute C = t_comm")
    for ax in (ax_t, ax_o):
        log_size_axis(ax)
        ax.legend(fontsize=7)
    finish(fig, "overlap_bench: nonblocking get/put behind the origin's computation", context(rows),
           os.path.join(out_dir, "overlap_bench.png"))


def plot_target_busy(rows, out_dir):
    cells = medians(rows, lambda r: (series_of(r), r["op"], int(r["bytes"])),
                    ("idle_MBps", "busy_MBps", "busy_over_idle"))
    all_series = ordered({k[0] for k in cells})
    sizes = sorted({k[2] for k in cells})
    ops = [op for op in ("get", "put", "nbget", "nbput") if any(k[1] == op for k in cells)]
    colors = dict(zip(ops, ("tab:blue", "tab:orange", "tab:cyan", "tab:red")))
    styles = ["-", "--", "-.", ":"]
    fig, (ax_bw, ax_r) = plt.subplots(1, 2, figsize=(13, 5.5))
    for i, series in enumerate(all_series):
        for op in ops:
            get = lambda col: [cells.get((series, op, s), {}).get(col, math.nan) for s in sizes]  # noqa: E731
            name = f"{op} {series_label(series, all_series)}"
            line(ax_bw, sizes, get("busy_MBps"), name, colors[op], styles[i % 4])
            line(ax_r, sizes, get("busy_over_idle"), name, colors[op], styles[i % 4])
    ax_bw.set_yscale("log")
    ax_bw.set_ylabel("MB/s with the target busy (median)")
    ax_bw.set_title("bandwidth while the target computes without library calls")
    ax_r.axhline(1.0, color="black", linewidth=0.8)
    ax_r.set_ylabel("busy / idle bandwidth")
    ax_r.set_title("the target's computing costs the origin (1: nothing)")
    for ax in (ax_bw, ax_r):
        log_size_axis(ax)
        ax.legend(fontsize=7, ncol=2)
    finish(fig, "target_busy: get/put bandwidth with the target idle and busy", context(rows),
           os.path.join(out_dir, "target_busy.png"))


# ------------------------------------------------------------------ bar charts

def bars(rows, out_dir, name, title, group_cols, value_col, ylabel, log=False):
    """Grouped bars: one group per value of group_cols, one bar per series."""
    cells = medians(rows, lambda r: (series_of(r, group_cols), tuple(r[c] for c in group_cols)),
                    (value_col,))
    all_series = ordered({k[0] for k in cells})
    groups = list(collections.OrderedDict((k[1], None) for k in cells))
    width = 0.8 / max(1, len(all_series))
    fig, ax = plt.subplots(figsize=(min(16, max(10, 0.35 * len(groups) * len(all_series) + 3)), 5.5))
    cmap = plt.get_cmap("tab10")
    for i, series in enumerate(all_series):
        xs = [g + (i - (len(all_series) - 1) / 2) * width for g in range(len(groups))]
        ys = [cells.get((series, grp), {}).get(value_col, math.nan) for grp in groups]
        ax.bar(xs, ys, width, label=series_label(series, all_series), color=cmap(i % 10))
    ax.set_xticks(range(len(groups)))
    # A bare number (a rank) says what it is.
    ax.set_xticklabels([" ".join(f"{c} {v}" if v.isdigit() else v for c, v in zip(group_cols, g))
                        for g in groups], rotation=30,
                       ha="right", fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    finish(fig, title, context(rows), os.path.join(out_dir, f"{name}.png"))


def plot_ga(rows, out_dir):
    """Six panels (contiguous / 2-D by get / put / acc): MB/s of each
    implementation and of the limit (memcpy or scale-and-add) by patch bytes."""
    cols = ("bw_MBps_median", "limit_MBps_median")
    cells = medians(rows, lambda r: (series_of(r), r["shape"], r["op"], int(r["size"])), cols)
    all_series = ordered({k[0] for k in cells})
    sizes = sorted({k[3] for k in cells})
    fig, axes = plt.subplots(2, 3, figsize=(15, 9), sharey=True)
    cmap = plt.get_cmap("tab10")
    for r, shape in enumerate(("contig", "2d")):
        for c, op in enumerate(("get", "put", "acc")):
            ax = axes[r][c]
            for i, series in enumerate(all_series):
                bw = [cells.get((series, shape, op, s), {}).get("bw_MBps_median", math.nan) for s in sizes]
                line(ax, sizes, bw, series_label(series, all_series), cmap(i % 10), IMPL_STYLE.get(series[0], ":"))
            ref = all_series[0]
            limit = [cells.get((ref, shape, op, s), {}).get("limit_MBps_median", math.nan) for s in sizes]
            line(ax, sizes, limit, "limit (one process)", "black", ":", marker="")
            ax.set_yscale("log")
            ax.set_title(f"{'contiguous' if shape == 'contig' else '2-D patch'} {op}")
            log_size_axis(ax, "patch bytes")
            if c == 0:
                ax.set_ylabel("MB/s (median)")
            ax.legend(fontsize=7)
    finish(fig, "ga_bench: GA perf2's patterns (cold remote block, warm local buffer); dotted: memcpy or "
           "scale-and-add of the same pattern", context(rows), os.path.join(out_dir, "ga_bench.png"))


PLOTTERS = {
    "contig_bench": plot_contig,
    "strided_bench": plot_strided,
    "ga_bench": plot_ga,
    "vector_columns": plot_vector,
    "overlap_bench": plot_overlap,
    "target_busy": plot_target_busy,
    "aggregate_bench": lambda rows, out: bars(
        rows, out, "aggregate_bench", "aggregate_bench: N 8-byte puts/gets, three ways",
        ("op", "way"), "per_op_us", "µs per operation (median)", log=True),
    "rmw_bench": lambda rows, out: bars(
        rows, out, "rmw_bench", "rmw_bench: ARMCI_Rmw and mutex latency",
        ("op", "target"), "lat_us_median", "µs per operation (median)", log=True),
    "gups": lambda rows, out: bars(
        rows, out, "gups", "gups: RandomAccess updates over ARMCI", ("variant",), "gups",
        "GUPS (10^9 updates/s, all ranks)", log=True),
    "helper_cost": lambda rows, out: bars(
        rows, out, "helper_cost", "helper_cost: compute rate under the library's helper settings",
        ("mode", "helper", "rank"), "gflops_median", "kernel Gflop/s (median), by mode, helper, rank"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="CSV files or folders of them")
    ap.add_argument("-o", "--out-dir", help="where the PNGs go (default: the first input's folder)")
    args = ap.parse_args()
    first = args.inputs[0]
    out_dir = args.out_dir or (first if os.path.isdir(first) else os.path.dirname(first) or ".")
    os.makedirs(out_dir, exist_ok=True)
    by_bench = read_inputs(args.inputs)
    if not by_bench:
        sys.exit("plot: no benchmark CSV among the inputs")
    for bench, rows in by_bench.items():
        plotter = PLOTTERS.get(bench)
        if plotter is None:
            print(f"plot: no chart for '{bench}' yet, passed over")
            continue
        plotter(rows, out_dir)


if __name__ == "__main__":
    main()
