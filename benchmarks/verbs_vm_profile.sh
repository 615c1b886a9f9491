#!/usr/bin/env bash
# Where an 8-byte verbs operation's time goes in the Soft-RoCE VM:
# boots the VM once, records `perf record -a -e cpu-clock -g` over
# contig_bench's 8 B put and get rows and over rmw_bench (fetch-add), both
# ranks over verbs under mpirun's default binding, and prints each run's
# samples split by shared object, then by symbol. Also the floor of a put
# that returns after posting: ib_write_bw -s 8 with a deep queue and CQ
# moderation, read as microseconds per message (1 / message rate).
# Run from the build directory:
#   ../benchmarks/verbs_vm_profile.sh
# PROFILE (default "put get rmw") picks the profiled runs; TOP (default 40)
# the number of symbol rows.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
script_dir=$top/benchmarks
source "$script_dir/bench_lib.sh"  # bench_vm_enter, perf_pair, us_per_msg_of
bench_vm_enter "$script_dir/verbs_vm_profile.sh" "PROFILE TOP" "$@"
net=(-x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs -x ARMCI_VNODE_SIZE=1)
rows=${TOP:-40}

echo "== floor: ib_write_bw -s 8, 128 deep, one completion per 16 writes"
perf_pair floor ib_write_bw -s 8 -t 128 -Q 16 -n 20000 -I 8
echo "   $(us_per_msg_of floor) us per 8 B write"
echo "== one signalled write at a time: ib_write_bw -s 8 -t 1 -Q 1"
perf_pair serial ib_write_bw -s 8 -t 1 -Q 1 -n 5000 -I 8
echo "   $(us_per_msg_of serial) us per 8 B write"

report() {  # name comm command...
  local name=$1 comm=$2; shift 2
  perf record -q -a -g -e cpu-clock -o "$out/$name.data" -- "$@" > "$out/$name.txt" 2>&1 ||
    { cat "$out/$name.txt"; exit 1; }
  grep -E '^ +(8|[a-z_]+ +rank1)' "$out/$name.txt" | head -5 || true
  echo "-- $name: samples by process and shared object (self time, all CPUs; swapper is idle)"
  perf report -i "$out/$name.data" --no-children --sort pid,dso --stdio -g none 2>/dev/null |
    grep -E '^ +[0-9]' | head -25 || true
  echo "-- $name: the benchmark's processes by symbol (self time, all CPUs)"
  perf report -i "$out/$name.data" --no-children --comms "$comm" --sort pid,dso,sym --stdio \
    -g none 2>/dev/null | grep -E '^ +[0-9]' | head -"$rows" || true
}

for run in ${PROFILE:-put get rmw}; do
  case $run in
    put|get)
      echo "== $run 8 B: contig_bench"
      report "$run" contig_bench timeout 600 mpirun -np 2 "${net[@]}" benchmarks/contig_bench --sizes 8 \
        --ops "$run" -o 0 -r 5 -t 300 ;;
    rmw)
      echo "== fetch-add: rmw_bench"
      report rmw rmw_bench timeout 600 mpirun -np 2 "${net[@]}" benchmarks/rmw_bench -r 5 -t 300 -n 500 ;;
  esac
done
