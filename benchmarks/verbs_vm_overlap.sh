#!/usr/bin/env bash
# Overlap, target-busy, aggregation and strided-protocol benchmarks over raw
# verbs, in one run of the Soft-RoCE VM (../shared/rxe-vm), where the
# network (rdma_rxe in the guest kernel) moves the data. Run from the build
# directory after make:
#   benchmarks/verbs_vm_overlap.sh
# The VM emulates its CPU: absolute times are slow, percentages and ratios
# are what to read. PART=runs|floor|trace|overlap|contig|busy|aggregate|strided runs one
# part (trace: one job per op under `perf record -a -e sched:sched_switch`, each
# thread's time on each vCPU, benchmarks/sched_oncpu.py) (runs: OVERLAP_RUNS jobs of the default settings, median and spread,
# then the floor: benchmarks/overlap_floor, the same measurement over raw verbs with no library);
# STRIDED_PROTOCOLS and STRIDED_PIECES narrow the strided part.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${RXE_VM:-}" ]; then
  vm=${RXE_VM_SCRIPT:-$top/../shared/rxe-vm/run-in-rxe-vm.sh}
  export RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-1800}
  export RXE_VM_ENV="${RXE_VM_ENV:-} PART OVERLAP_RUNS OVERLAP_SIZES FLOOR_NEIGHBOURS STRIDED_PROTOCOLS STRIDED_TARGETS STRIDED_PIECES TRACE_OPS"
  exec "$vm" "$top/benchmarks/verbs_vm_overlap.sh" "$@"
fi

hostname armci-vm
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
part=${PART:-all}
net=(-x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs)
run() { timeout 900 mpirun -np 2 --bind-to none "$@" 2>&1 | grep -v '^#' | sed '/^impl,/,$d'; }

# Lines "op bytes pct" from several jobs -> per (op, bytes): the median of
# the jobs [min-max] and every job's figure.
median_of_runs() {
  awk '{ v[$1 " " $2] = v[$1 " " $2] " " $3; if (!(($1 " " $2) in seen)) { seen[$1 " " $2] = 1; order[++n] = $1 " " $2 } }
    END {
      printf "%-16s %9s %28s\n", "op", "bytes", "overlap_pct median [min-max]"
      for (m = 1; m <= n; m++) {
        k = split(v[order[m]], a, " ")
        for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] + 0 < a[j-1] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
        med = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        split(order[m], key, " ")
        runs_sorted = ""; for (i = 1; i <= k; i++) runs_sorted = runs_sorted " " a[i]
        printf "%-16s %9s %14.1f [%.1f-%.1f] (runs:%s)\n", key[1], key[2], med, a[1], a[k], runs_sorted
      }
    }' "$1"
}
runs=${OVERLAP_RUNS:-5}
if [ "$part" = all ] || [ "$part" = runs ]; then
  # The default protocol with a free core for the helper: OVERLAP_RUNS (default 5)
  # separate jobs, overlap_pct as median [min-max] of the jobs' medians.
  summary=$(mktemp)
  echo "=== overlap over verbs, default settings, --bind-to none, $runs runs"
  for ((i = 1; i <= runs; i++)); do
    csv=$(mktemp)
    timeout 900 mpirun -np 2 --bind-to none "${net[@]}" benchmarks/overlap_bench -o both \
      -s ${OVERLAP_SIZES:-16K,64K,256K,1M} -r 5 -m 20 -c "$csv" > /dev/null 2>&1 || { echo "run $i failed"; continue; }
    awk -F, '$1 == "libarmci" { print $4, $5, $10 }' "$csv" >> "$summary"
  done
  median_of_runs "$summary"
fi
if [ "$part" = all ] || [ "$part" = floor ] || [ "$part" = runs ]; then
  # The same measurement with no library, as many jobs: raw RDMA from a
  # poster thread on the other vCPU (block: eventfd and completion channel,
  # as the helper sleeps; spin: busy-polling). Its t_comm is posted by the
  # computing thread, as ARMCI_Wait does, so the hand-over counts here too.
  # FLOOR_NEIGHBOURS: a second process beside it, as the idle target rank
  # (none, yield: sched_yield in a loop, nap: 50 us sleeps).
  summary=$(mktemp)
  echo "=== the floor: overlap_floor, raw verbs, no library, $runs runs; op/poster/neighbour"
  for ((i = 1; i <= runs; i++)); do
    for neighbour in ${FLOOR_NEIGHBOURS:-none yield nap}; do
      posters=block
      [ "$neighbour" = none ] && posters=block,spin
      benchmarks/overlap_floor -s "${OVERLAP_SIZES:-16K,64K,256K,1M}" -r 15 -p $posters -n $neighbour |
        awk -F, -v n="$neighbour" '$1 == "floor" { print $2 "/" $3 "/" n, $4, $8 }' >> "$summary" ||
        echo "floor run $i ($neighbour) failed"
    done
  done
  median_of_runs "$summary"
fi
if [ "$part" = trace ]; then
  # Who takes which vCPU while rank 0 overlaps: every thread of both ranks
  # labelled (the first task is the rank's main thread).
  tmp=$(mktemp -d)
  cat > "$tmp/rank.sh" <<'W'
#!/bin/sh
dir=$1; shift
# Once the library's threads exist (ARMCI_Init), name them; a loop of shell
# builtins and one sleep a second, so that the labeller itself hardly runs.
r=$OMPI_COMM_WORLD_RANK
(while sleep 1; do
   set -- /proc/$$/task/*
   [ -d "$1" ] || exit 0
   [ $# -gt 1 ] || continue
   for t; do read -r c < "$t/comm"; [ "${t##*/}" = $$ ] && c=$c-main; echo "${t##*/} rank$r/$c"; done > "$dir/labels.$r"
   exit 0
 done) &
exec "$@"
W
  chmod +x "$tmp/rank.sh"
  for op in ${TRACE_OPS:-put get}; do
    echo "=== sched trace over verbs, $op ${OVERLAP_SIZES:-64K}, default settings, --bind-to none"
    rm -f "$tmp"/labels.*
    timeout 900 perf record -q -a -e sched:sched_switch -o "$tmp/p.data" -- mpirun -np 2 --bind-to none "${net[@]}" \
      "$tmp/rank.sh" "$tmp" benchmarks/overlap_bench -o "$op" -s "${OVERLAP_SIZES:-64K}" -r 5 -m 20 2>&1 | grep -E "^$op "
    perf script -i "$tmp/p.data" -F comm,tid,cpu,time,event,trace > "$tmp/p.txt" 2>/dev/null
    cat "$tmp"/labels.* > "$tmp/labels"
    python3 "$top/benchmarks/sched_oncpu.py" "$tmp/p.txt" "$tmp/labels"
  done
  rm -rf "$tmp"
fi
if [ "$part" = all ] || [ "$part" = overlap ]; then
  for protocol in direct buffered; do
    echo "=== overlap over verbs, ARMCI_PROTOCOL=$protocol, target idle"
    run "${net[@]}" -x ARMCI_PROTOCOL=$protocol benchmarks/overlap_bench -o both -s 4K,16K,64K,256K,1M -r 5 -m 20
  done
  echo "=== overlap over verbs, direct, target busy"
  run "${net[@]}" -x ARMCI_PROTOCOL=direct benchmarks/overlap_bench -o get -s 16K,256K,1M -r 5 -m 20 -t busy -T 300
fi
if [ "$part" = all ] || [ "$part" = contig ]; then
  # Where the contiguous auto threshold comes from: the pipeline against
  # direct (bounce buffers below 4 KiB, the registration cache above).
  for protocol in direct buffered; do
    echo "=== contig over verbs, ARMCI_PROTOCOL=$protocol"
    timeout 900 mpirun -np 2 --bind-to none "${net[@]}" -x ARMCI_PROTOCOL=$protocol benchmarks/contig_bench \
      -s 64K -o 0 -r 3 -t 20 2>&1 | grep -E '^==|^ +[0-9]'
  done
fi
if [ "$part" = all ] || [ "$part" = busy ]; then
  echo "=== target idle vs busy over verbs (direct)"
  run "${net[@]}" benchmarks/target_busy -s 64K,256K,1M -r 5 -m 20 -T 300
fi
if [ "$part" = all ] || [ "$part" = aggregate ]; then
  echo "=== 1000 puts/gets of 8 B over verbs: aggregate handle, separate Nb, blocking"
  run "${net[@]}" benchmarks/aggregate_bench -r 7
fi
if [ "$part" = all ] || [ "$part" = strided ]; then
  for protocol in ${STRIDED_PROTOCOLS:-direct buffered host}; do
    for target in ${STRIDED_TARGETS:-idle busy}; do
      flag=""
      [ "$target" = busy ] && flag="-b -T 300"
      echo "=== strided over verbs, ARMCI_STRIDED_PROTOCOL=$protocol, target $target"
      # shellcheck disable=SC2086
      run "${net[@]}" -x ARMCI_STRIDED_PROTOCOL=$protocol benchmarks/strided_bench -r 5 -t 256K -p ${STRIDED_PIECES:-8,64,512,4K,16K} $flag
    done
  done
fi
