#!/usr/bin/env bash
# Runs benchmarks/strided_bench and benchmarks/vector_columns with every
# strided protocol of libarmci to a network peer (ARMCI_SHM=0, so the peer on
# this node goes through the network layer), with libarmci's default
# same-node path (ARMCI_SHM=1, protocol setting unset: "shm") and built against
# ARMCI-MPI, each with an idle and a busy target (-b), and prints per benchmark
# and op: MB/s by piece size for every (configuration, target), the busy
# target's compute share (tgt_cpu) beside its no-transfer baseline (tgt_base),
# ours / ARMCI-MPI at 64-byte pieces (fastest ARMCI_SHM=0 protocol, and shm),
# and ours / contiguous (same run) for pieces of 1 KiB and more. One round
# (RUNS=1) takes about a minute on the 2-core development machine.
#
# Exit status: 0; 1 when a build or a run failed (a data check included; the
# other runs still go on and are shown); 2 for bad arguments. A protocol the
# library rejects is reported as unavailable, not as a failure.
#
# usage: benchmarks/strided_protocols.sh [BUILD_DIR]
#   BUILD_DIR  the libarmci build tree (default: the current directory); our
#              binaries are BUILD_DIR/benchmarks/{strided_bench,vector_columns},
#              the ARMCI-MPI ones are built next to them as *_armci_mpi
# environment:
#   PROTOCOLS       ARMCI_STRIDED_PROTOCOL values to run (default "direct buffered
#                   host"); one the library does not know (it ends with an error
#                   naming the setting) is reported as unavailable and skipped
#   TARGETS         "idle busy" (default) or one of them
#   RUNS=N          run everything N times, alternating, and take the median of
#                   each cell across runs (default 1)
#   STRIDED_ARGS    strided_bench options (default: -r 9 -t 256K -p 8,64,256,1K,4K,16K,64K)
#   VECTOR_ARGS     vector_columns options (default: -r 9 -m 64,128 -C 4,16,64,256,1024)
#   BENCHES         "strided vector" (default) or one of them
#   NP              processes (default 2)
#   RUN_TIMEOUT     seconds one mpirun may take before it is killed (default 600)
#   MPIRUN, MPIRUN_FLAGS  launcher and its flags
#                   (default: mpirun --allow-run-as-root --oversubscribe)
#   MPICC, ARMCI_MPI_LIBS  how to build the ARMCI-MPI side (mpicc, -larmci-openmpi)
#   RESULTS_DIR     CSVs and logs (default BUILD_DIR/bench-results/strided)
#   NO_MAKE=1       do not run make for our binaries first
#   NO_ARMCI_MPI=1  leave ARMCI-MPI out
#   PLOT=0          no PNG charts (default: into RESULTS_DIR/plots)
# UCX's own variables pass through: UCX_TLS=tcp,self runs the network path
# over TCP instead of UCX's shared-memory transports.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init strided_protocols "$@"
[ ${#bench_args[@]} -eq 0 ] || { echo "strided_protocols: unexpected argument '${bench_args[0]}' (options go in STRIDED_ARGS / VECTOR_ARGS)" >&2; exit 2; }
results=${RESULTS_DIR:-$build_dir/bench-results/strided}
mkdir -p "$results"

run_timeout=${RUN_TIMEOUT:-600}
read -r -a protocols <<< "${PROTOCOLS-direct buffered host}"
read -r -a targets <<< "${TARGETS:-idle busy}"
read -r -a benches <<< "${BENCHES:-strided vector}"
read -r -a strided_args <<< "${STRIDED_ARGS:--r 9 -t 256K -p 8,64,256,1K,4K,16K,64K}"
read -r -a vector_args <<< "${VECTOR_ARGS:--r 9 -m 64,128 -C 4,16,64,256,1024}"
for t in "${targets[@]}"; do
  case $t in idle|busy) ;; *) echo "strided_protocols: TARGETS: '$t' is not idle or busy" >&2; exit 2 ;; esac
done
declare -A prog=([strided]=strided_bench [vector]=vector_columns)
for b in "${benches[@]}"; do
  [ -n "${prog[$b]:-}" ] || { echo "strided_protocols: BENCHES: '$b' is not strided or vector" >&2; exit 2; }
done
timeout_cmd=()
command -v timeout >/dev/null && timeout_cmd=(timeout --kill-after=10 "$run_timeout")

programs=()
for b in "${benches[@]}"; do programs+=("${prog[$b]}"); done
bench_make "${programs[@]}"

# Configurations: label, then the environment of our runs ("mpi": ARMCI-MPI).
configs=()
declare -A config_env=()
for p in "${protocols[@]}"; do
  configs+=("$p")
  config_env[$p]="ARMCI_SHM=0 ARMCI_STRIDED_PROTOCOL=$p"
done
configs+=(shm)
config_env[shm]="ARMCI_SHM=1"
if [ -z "${NO_ARMCI_MPI:-}" ]; then
  bench_build_armci_mpi "${programs[@]}"
  configs+=(armci-mpi)
  config_env[armci-mpi]=mpi
fi

declare -A unavailable=()
failures=0
warnings=0

# run_one bench config target run_index
run_one() {
  local bench=$1 config=$2 target=$3 idx=$4
  local name="${bench}.${config}.${target}.${idx}"
  local csv="$results/$name.csv" log="$results/$name.txt" bin args=() envs=()
  rm -f "$csv"
  if [ "$bench" = strided ]; then args=("${strided_args[@]}"); else args=("${vector_args[@]}"); fi
  [ "$target" = busy ] && args+=(-b)
  if [ "${config_env[$config]}" = mpi ]; then
    bin="$build_dir/benchmarks/${prog[$bench]}_armci_mpi"
  else
    bin="$build_dir/benchmarks/${prog[$bench]}"
    for e in ${config_env[$config]}; do envs+=(-x "$e"); done
  fi
  echo "== run $idx/$runs $bench $config $target: ${config_env[$config]/mpi/ARMCI-MPI} $mpirun_cmd -np $np $bin ${args[*]}"
  local rc=0
  # Only the settings of this configuration reach libarmci (none reach ARMCI-MPI).
  env -u ARMCI_SHM -u ARMCI_STRIDED_PROTOCOL -u ARMCI_STRIDED_BUFFERED_MAX -u ARMCI_STRIDED_HOST_MAX \
    "${timeout_cmd[@]}" "$mpirun_cmd" "${mpirun_flags[@]}" -np "$np" "${envs[@]}" "$bin" -c "$csv" "${args[@]}" \
    >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] && [ "${config_env[$config]}" != mpi ] && ! [ -s "$csv" ] &&
     grep -q "ARMCI_STRIDED_PROTOCOL" "$log"; then
    unavailable[$config]=$(grep -m1 "ARMCI_STRIDED_PROTOCOL" "$log")
    echo "   protocol $config is unavailable: ${unavailable[$config]}"
    rm -f "$csv"
    return 0
  fi
  if [ $rc -eq 4 ] && [ -s "$csv" ]; then
    # The benchmark finished, but in some phase the busy target stopped
    # computing before the stop word came (-T): those figures are not busy ones.
    echo "   warning: in $name the busy target gave up waiting for the stop word; see tgt_cpu '!' in $log"
    warnings=$((warnings + 1))
    rc=0
  fi
  if [ $rc -ne 0 ] || ! [ -s "$csv" ]; then
    tail -n 20 "$log" >&2
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      echo "strided_protocols: $name was killed after RUN_TIMEOUT=${run_timeout}s (log: $log)" >&2
    else
      echo "strided_protocols: $name failed with exit status $rc (log: $log)" >&2
    fi
    rm -f "$csv"
    failures=$((failures + 1))
    return 0
  fi
  bench_csvs+=("$csv")
  # Judge a run by how much of the CPU rank 0 had and how much the busy
  # target could compute with no transfers at all.
  awk -v name="$name" '
    /^# run:/ {
      print "   " $0
      for (i = 1; i <= NF; i++) if ($i == "cpu/wall") share = $(i + 1) + 0
      if (share < 0.9)
        printf "   warning: rank 0 of %s had the CPU %.0f%% of the time: other load was running\n", name, share * 100
    }
    /^# busy target:/ { sub(/^# /, ""); print "   " $0 }' "$log"
}

for ((i = 1; i <= runs; i++)); do
  for bench in "${benches[@]}"; do
    for config in "${configs[@]}"; do
      for target in "${targets[@]}"; do
        [ -n "${unavailable[$config]:-}" ] && continue
        run_one "$bench" "$config" "$target" "$i"
      done
    done
  done
done

unavailable_list=""
for c in "${!unavailable[@]}"; do unavailable_list+="$c=${unavailable[$c]}"$'\n'; done

python3 - "$results" "$runs" "${configs[*]}" "${targets[*]}" "${benches[*]}" "$unavailable_list" <<'PY'
import csv, math, os, statistics, sys

results, runs = sys.argv[1], int(sys.argv[2])
configs, targets, benches = sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
unavailable = dict(line.split("=", 1) for line in sys.argv[6].splitlines() if "=" in line)
ours_network = [c for c in configs if c not in ("shm", "armci-mpi")]

def fmt_size(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)

def fmt(x, width=10, prec=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return f"{'-':>{width}}"
    return f"{x:{width}.{prec}f}"

# cells[(bench, config, target, op, key)] -> {run: (bw, share, baseline)}
cells, keys = {}, {b: [] for b in benches}
for bench in benches:
    for config in configs:
        for target in targets:
            for i in range(1, runs + 1):
                path = f"{results}/{bench}.{config}.{target}.{i}.csv"
                if not os.path.exists(path):
                    continue
                with open(path, newline="") as f:
                    for row in csv.DictReader(f):
                        if bench == "strided":
                            key = (int(row["piece"]),)
                        else:
                            key = (int(row["rows"]), int(row["cols"]))
                        if key not in keys[bench]:
                            keys[bench].append(key)
                        share = float(row["tgt_cpu_share"]) if row.get("tgt_cpu_share") else None
                        base = float(row["tgt_cpu_baseline"]) if row.get("tgt_cpu_baseline") else None
                        cells.setdefault((bench, config, target, row["op"], key), {})[i] = (
                            float(row["bw_MBps_median"]), share, base)

def bw(bench, config, target, op, key):
    v = cells.get((bench, config, target, op, key))
    return statistics.median(x[0] for x in v.values()) if v else None

def share(bench, config, target, op, key, col=1):
    v = [x[col] for x in cells.get((bench, config, target, op, key), {}).values() if x[col] is not None]
    return statistics.median(v) if v else None

def vs_contig(bench, config, target, op, contig, key):
    # median over runs of the ratio within each run (a kind and its bound are
    # sampled side by side, so the ratio is steadier than a ratio of medians)
    a = cells.get((bench, config, target, op, key), {})
    b = cells.get((bench, config, target, contig, key), {})
    v = [a[i][0] / b[i][0] for i in a if i in b and b[i][0] > 0]
    return statistics.median(v) if v else None

def over_keys(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def piece_bytes(bench, key):
    return key[0] if bench == "strided" else key[1] * 4

def key_label(bench, key):
    return f"{fmt_size(key[0]):>6}" if bench == "strided" else f"{key[0]:>4}x{key[1]:<5}"

def ratio(a, b):
    return a / b if a is not None and b else None

columns = [(c, t) for c in configs for t in targets if c not in unavailable]
colname = {("shm", t): f"shm/{t}" for t in targets}
def cname(c, t):
    return colname.get((c, t), f"{c}/{t}")[:14]

out_rows = []
for bench in benches:
    if not keys[bench]:
        continue
    key_head = "piece" if bench == "strided" else "MxC"
    kw = 8 if bench == "strided" else 10
    ops = (("gets", "get_contig"), ("puts", "put_contig")) if bench == "strided" else \
          (("gets", "get_contig"), ("getv", "get_contig"), ("puts", "put_contig"), ("putv", "put_contig"))
    what = {"strided": "strided_bench: ARMCI_GetS/PutS of 1-level strided pieces, MB/s",
            "vector": "vector_columns: C columns of M rows of 4096 ints (C*4-byte pieces), MB/s"}[bench]
    print(f"\n######## {what}; median over {runs} run(s)")
    for op, contig in ops:
        print(f"\n== {bench} {op} MB/s  (contig row: {contig} of the same bytes in that run)")
        print(f"{key_head:>{kw}} |" + "".join(f" {cname(c, t):>14}" for c, t in columns))
        for key in keys[bench]:
            print(f"{key_label(bench, key):>{kw}} |" + "".join(f" {fmt(bw(bench, c, t, op, key), 14)}" for c, t in columns))
            for c, t in columns:
                out_rows.append([bench, c, t, op, *(key if bench == "vector" else (None, None)),
                                 piece_bytes(bench, key), bw(bench, c, t, op, key), bw(bench, c, t, contig, key),
                                 vs_contig(bench, c, t, op, contig, key), share(bench, c, t, op, key),
                                 share(bench, c, t, op, key, 2)])
        if bench == "strided":
            print(f"{'contig':>{kw}} |" + "".join(
                f" {fmt(over_keys(bw(bench, c, t, contig, k) for k in keys[bench]), 14)}" for c, t in columns))
        if "busy" in targets:
            for label, col in (("tgt_cpu", 1), ("tgt_base", 2)):
                print(f"{label:>{kw}} |" + "".join(
                    f" {fmt(over_keys(share(bench, c, t, op, k, col) for k in keys[bench]), 14, 2)}"
                    if t == "busy" else f" {'':>14}" for c, t in columns))

    # ours / ARMCI-MPI where pieces are 64 bytes
    small = [k for k in keys[bench] if piece_bytes(bench, k) == 64]
    if "armci-mpi" in configs and small:
        print(f"\n== {bench}: ours / ARMCI-MPI at 64-byte pieces (MB/s ratio, >1: ours faster; "
              f"best = fastest of {', '.join(c for c in ours_network if c not in unavailable) or 'none'} with ARMCI_SHM=0)")
        print(f"{key_head:>{kw}} {'target':>6} {'op':>5} | {'best network':>22} {'/mpi':>6} | {'shm':>10} {'/mpi':>6} | {'armci-mpi':>10}")
        for key in small:
            for t in targets:
                for op, _ in ops:
                    m = bw(bench, "armci-mpi", t, op, key)
                    best = max(((bw(bench, c, t, op, key), c) for c in ours_network if c not in unavailable
                                and bw(bench, c, t, op, key) is not None), default=(None, "-"))
                    s = bw(bench, "shm", t, op, key)
                    print(f"{key_label(bench, key):>{kw}} {t:>6} {op:>5} | {best[1]:>11}{fmt(best[0], 11)} "
                          f"{fmt(ratio(best[0], m), 6, 2)} | {fmt(s, 10)} {fmt(ratio(s, m), 6, 2)} | {fmt(m, 10)}")

    # strided (or vector) / contiguous of the same bytes, pieces >= 1 KiB
    big = [k for k in keys[bench] if piece_bytes(bench, k) >= 1024]
    if big:
        print(f"\n== {bench}: ours / contiguous: MB/s over that of the contiguous transfer of the same bytes "
              f"in the same run (median over runs), pieces >= 1 KiB (1.00: as fast as contiguous)")
        print(f"{key_head:>{kw}} {'op':>5} |" + "".join(f" {cname(c, t):>14}" for c, t in columns))
        for key in big:
            for op, contig in ops:
                print(f"{key_label(bench, key):>{kw}} {op:>5} |" + "".join(
                    f" {fmt(vs_contig(bench, c, t, op, contig, key), 14, 2)}" for c, t in columns))

for c, why in unavailable.items():
    print(f"\nprotocol {c}: unavailable ({why.strip()})")
out = f"{results}/strided-protocols.csv"
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["bench", "config", "target", "op", "rows", "cols", "piece_bytes", "bw_MBps", "contig_bw_MBps",
                "vs_contig", "tgt_cpu_share", "tgt_cpu_baseline"])
    for r in out_rows:
        w.writerow(["" if x is None else (f"{x:.3f}" if isinstance(x, float) else x) for x in r])
print(f"\nruns: {runs}; CSVs and logs in {results}; merged table: {out}")
PY

bench_plot "$results/plots"

[ "$warnings" -eq 0 ] || echo "strided_protocols: $warnings run(s) had a busy target that gave up waiting (see above)" >&2
if [ "$failures" -gt 0 ]; then
  echo "strided_protocols: $failures run(s) failed; see the logs above" >&2
  exit 1
fi
