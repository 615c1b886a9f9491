#!/usr/bin/env bash
# ARMCI over raw verbs next to perftest on the same device, in one run of the
# Soft-RoCE VM (../shared/rxe-vm). Run from the build directory:
#   benchmarks/verbs_vm_bench.sh            # boots the VM and runs everything in it
# Soft-RoCE under an emulated CPU is slow and noisy; the ratios are what to
# read. ROUNDS (default 3) rounds, each: perftest's latencies, then ARMCI
# with the default settings under mpirun's default binding, with
# ARMCI_HELPER=none (the best setting for latency), and with --bind-to none
# (a free core for the helper). Also window epochs (win_bench: lock + 8 B put
# + unlock, exclusive and shared, and lock/unlock alone) against one
# ib_atomic_lat plus one ib_write_lat, the reference over verbs; the
# 8-byte put also against ib_write_bw posting one write at a time.
# Reported: the median of the rounds' medians [min-max].
# EXTRA_SETTING="label|mpirun args" adds one more column.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
script_dir=$top/benchmarks
source "$script_dir/bench_lib.sh"  # bench_vm_enter, perf_pair, lat_of, bw_of, us_per_msg_of
bench_vm_enter "$script_dir/verbs_vm_bench.sh" "ROUNDS ITERS EXTRA_SETTING" "$@"
iters=${ITERS:-2000}
rounds=${ROUNDS:-3}

# The settings compared, all over verbs between two ranks of this one host.
net=(-x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs -x ARMCI_VNODE_SIZE=1)
labels=(default helper=none bind-none)
args=("" "-x ARMCI_HELPER=none" "--bind-to none")
if [ -n "${EXTRA_SETTING:-}" ]; then
  labels+=("${EXTRA_SETTING%%|*}")
  args+=("${EXTRA_SETTING#*|}")
fi

# One figure per line in $out/figures: measure setting value.
note() { echo "$1 $2 $3" >> "$out/figures"; }
armci_runs() {  # round
  local i csv
  for i in "${!labels[@]}"; do
    echo "   ARMCI ${labels[$i]}"
    csv=$out/contig_${i}_$1.csv
    # shellcheck disable=SC2086
    timeout 600 mpirun -np 2 ${args[$i]} "${net[@]}" benchmarks/contig_bench --sizes 8,4K,64K \
      --ops put,put+fence,get -o 0 -r 5 -t 5 -c "$csv" > "$out/contig_${i}_$1.txt" 2>&1 ||
      { cat "$out/contig_${i}_$1.txt"; exit 1; }
    awk -F, -v s="${labels[$i]}" '$2 ~ /^(put|put\+fence|get)$/ && $3 ~ /^[0-9]+$/ {
        unit = $3 == 65536 ? "MB/s" : "us"; col = $3 == 65536 ? 5 : 4
        print $2 "_" $3 "_" unit, s, $col
        if ($2 == "put" && $3 == 8) print "put-vs-serial_8_us", s, $col }' "$csv" >> "$out/figures"
    # shellcheck disable=SC2086
    timeout 600 mpirun -np 2 ${args[$i]} "${net[@]}" benchmarks/rmw_bench -q -c "$out/rmw_${i}_$1.csv" \
      > "$out/rmw_${i}_$1.txt" 2>&1 || { cat "$out/rmw_${i}_$1.txt"; exit 1; }
    awk -F, -v s="${labels[$i]}" '$3 == "fetch_add_long" && $4 == "rank1" { print "fetch-add_8_us", s, $5 }' \
      "$out/rmw_${i}_$1.csv" >> "$out/figures"
    # Window epochs: an exclusive lock is one remote
    # compare-and-swap, the put and the unlock's release one more round
    # trip, so the reference is one atomic plus one write of perftest.
    # shellcheck disable=SC2086
    timeout 600 mpirun -np 2 ${args[$i]} "${net[@]}" benchmarks/win_bench \
      --cells lock_put_unlock_x,lock_put_unlock_s,lock_unlock -r 5 -c "$out/win_${i}_$1.csv" \
      > "$out/win_${i}_$1.txt" 2>&1 || { cat "$out/win_${i}_$1.txt"; exit 1; }
    awk -F, -v s="${labels[$i]}" '$1 == "libarmci" { print "win_" $2 "_us", s, $3 }' \
      "$out/win_${i}_$1.csv" >> "$out/figures"
  done
}

for ((round = 1; round <= rounds; round++)); do
  echo "== round $round of $rounds"
  perf_pair write_lat ib_write_lat -s 8 -n "$iters"
  perf_pair read_lat ib_read_lat -s 8 -n "$iters"
  perf_pair atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$iters"
  note put_8_us perftest "$(lat_of write_lat)"
  note put+fence_8_us perftest "$(lat_of write_lat)"
  # contig_bench's put row is a loop of posts from one rank, each paying
  # the whole of rdma_rxe's write (request, loopback response, ack,
  # completion) on the poster's vCPU; ib_write_lat's half round trip lets
  # the two sides' kernel work overlap on two vCPUs. The same loop in raw
  # verbs: one signalled inline write at a time, polled before the next.
  perf_pair write_serial ib_write_bw -s 8 -t 1 -Q 1 -I 8 -n "$iters"
  note put-vs-serial_8_us perftest "$(us_per_msg_of write_serial)"
  note get_8_us perftest "$(lat_of read_lat)"
  note fetch-add_8_us perftest "$(lat_of atomic_lat)"
  # One atomic and one write: what a lock epoch with one put cannot beat.
  both=$(awk -v a="$(lat_of atomic_lat)" -v w="$(lat_of write_lat)" 'BEGIN { print a + w }')
  note win_lock_put_unlock_x_us perftest "$both"
  note win_lock_put_unlock_s_us perftest "$both"
  note win_lock_unlock_us perftest "$(lat_of atomic_lat)"
  perf_pair write_lat ib_write_lat -s 4096 -n "$iters"
  perf_pair read_lat ib_read_lat -s 4096 -n "$iters"
  note put+fence_4096_us perftest "$(lat_of write_lat)"
  note get_4096_us perftest "$(lat_of read_lat)"
  perf_pair write_bw ib_write_bw -s 65536 -n 1000
  perf_pair read_bw ib_read_bw -s 65536 -n 1000
  note put_65536_MB/s perftest "$(bw_of write_bw)"
  note get_65536_MB/s perftest "$(bw_of read_bw)"
  armci_runs "$round"
done

# Median [min-max] of the rounds per measure and setting; ratio: the
# default over perftest (time), perftest over the default (bandwidth).
echo
echo "ARMCI over verbs ($rounds rounds; median [min-max]); the perftest rows of put are"
echo "ib_write_lat, of get ib_read_lat, of fetch-add ib_atomic_lat -A FETCH_AND_ADD; of the"
echo "window epochs (win_bench, ARMCI_Win_lock + 8 B put + unlock) ib_atomic_lat + ib_write_lat,"
echo "of lock_unlock ib_atomic_lat; of put-vs-serial (the put row again) ib_write_bw -s 8 -t 1 -Q 1 -I 8,"
echo "one signalled inline write at a time, in us per message"
awk -v settings="${labels[*]} perftest" '
  { v[$1, $2] = v[$1, $2] " " $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
  function summary(list,   a, k, i, j, t) {
    med = 0
    k = split(list, a, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] + 0 < a[j-1] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    if (k == 0) return "-"
    med = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    return sprintf("%.1f [%.1f-%.1f]", med, a[1], a[k])
  }
  END {
    ns = split(settings, s, " ")
    printf "%-20s", "measure"; for (i = 1; i <= ns; i++) printf " %20s", s[i]; printf " %8s\n", "ratio"
    for (m = 1; m <= n; m++) {
      printf "%-20s", order[m]
      for (i = 1; i <= ns; i++) { printf " %20s", summary(v[order[m], s[i]]); med_of[i] = med }
      ratio = "-"
      if (med_of[1] > 0 && med_of[ns] > 0)
        ratio = sprintf("%.2f", order[m] ~ /MB/ ? med_of[ns] / med_of[1] : med_of[1] / med_of[ns])
      printf " %8s\n", ratio
    }
  }' "$out/figures"
echo "--- last round: contig_bench over verbs, default settings"
cat "$out/contig_0_$rounds.txt"
