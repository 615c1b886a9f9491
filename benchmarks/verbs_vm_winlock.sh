#!/usr/bin/env bash
# Window lock epochs over raw verbs next to perftest, in one run of the
# Soft-RoCE VM (../shared/rxe-vm): the reference (one ib_atomic_lat
# plus one ib_write_lat per lock + 8 B put + unlock, one atomic per
# lock/unlock) against win_bench with every rank locking its neighbour
# ("both", what verbs_vm_bench.sh measures) and with one origin per target
# (--one-way, the shape of perftest's pairs), and rmw_bench's fetch-add.
# Run from the build directory:
#   benchmarks/verbs_vm_winlock.sh
# ROUNDS (default 3) rounds; OLD_BUILD=dir adds that build's win_bench
# (both ways) to every round, alternated with this one. Reported: the median
# of the rounds' medians [min-max] and its ratio to perftest.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
script_dir=$top/benchmarks
source "$script_dir/bench_lib.sh"  # bench_vm_enter, perf_pair, lat_of, bw_of
bench_vm_enter "$script_dir/verbs_vm_winlock.sh" "ROUNDS ITERS OLD_BUILD" "$@"
iters=${ITERS:-2000}
rounds=${ROUNDS:-3}

note() { echo "$1 $2 $3" >> "$out/figures"; }

net=(-x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs -x ARMCI_VNODE_SIZE=1)
cells=lock_put_unlock_x,lock_put_unlock_s,lock_unlock
win() {  # label build "mpirun args" win_bench args...
  local label=$1 build=$2 csv; local -a mpx=($3); shift 3
  csv=$out/win_${label}_$round.csv
  timeout 600 mpirun -np 2 "${mpx[@]}" "${net[@]}" "$build/benchmarks/win_bench" --cells "$cells" -r 5 -c "$csv" "$@" \
    > "$out/win_${label}_$round.txt" 2>&1 || { cat "$out/win_${label}_$round.txt"; exit 1; }
  awk -F, -v s="$label" '$1 == "libarmci" { print $2, s, $3 }' "$csv" >> "$out/figures"
}

for ((round = 1; round <= rounds; round++)); do
  echo "== round $round of $rounds"
  perf_pair write_lat ib_write_lat -s 8 -n "$iters"
  perf_pair atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$iters"
  a=$(lat_of atomic_lat) w=$(lat_of write_lat)
  both=$(awk -v a="$a" -v w="$w" 'BEGIN { print a + w }')
  note lock_put_unlock_x perftest "$both"
  note lock_put_unlock_s perftest "$both"
  note lock_unlock perftest "$a"
  note fetch_add perftest "$a"
  timeout 600 mpirun -np 2 "${net[@]}" benchmarks/rmw_bench -q -c "$out/rmw_$round.csv" > "$out/rmw_$round.txt" 2>&1 ||
    { cat "$out/rmw_$round.txt"; exit 1; }
  awk -F, '$3 == "fetch_add_long" && $4 == "rank1" { print "fetch_add one-way", $5 }' "$out/rmw_$round.csv" >> "$out/figures"
  if [ -n "${OLD_BUILD:-}" ] && ((round % 2 == 0)); then win old-both "$OLD_BUILD" ""; fi
  # The helper's two settings swap places every round: a host whose speed
  # drifts during a run (other jobs, a vCPU descheduled) otherwise always
  # favours the one measured first.
  if ((round % 2 == 1)); then
    win one-way . "" --one-way
    win both . ""
    win one-way-helper=none . "-x ARMCI_HELPER=none" --one-way
  else
    win one-way-helper=none . "-x ARMCI_HELPER=none" --one-way
    win both . ""
    win one-way . "" --one-way
  fi
  if [ -n "${OLD_BUILD:-}" ] && ((round % 2 == 1)); then win old-both "$OLD_BUILD" ""; fi
done

echo
echo "--- figures (measure setting us), every round:"; cat "$out/figures"
echo "window epochs over verbs ($rounds rounds; median [min-max] us; ratio: median over perftest's)"
echo "perftest: lock_put_unlock = ib_atomic_lat -A FETCH_AND_ADD + ib_write_lat -s 8; lock_unlock, fetch_add = ib_atomic_lat"
awk '
  { k = $1 SUBSEP $2; v[k] = v[k] " " $3; if (!(($1) in seen)) { seen[$1] = 1; rows[++n] = $1 }
    if (!(($2) in sseen)) { sseen[$2] = 1; sets[++ns] = $2 } }
  function summary(list,   a, k, i, j, t) {
    k = split(list, a, " ")
    if (k == 0) { med = 0; return "-" }
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] + 0 < a[j-1] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    med = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    return sprintf("%.1f [%.1f-%.1f]", med, a[1], a[k])
  }
  END {
    for (r = 1; r <= n; r++) {
      summary(v[rows[r], "perftest"]); ref = med
      for (s = 1; s <= ns; s++) {
        if (v[rows[r], sets[s]] == "") continue
        text = summary(v[rows[r], sets[s]])
        printf "%-18s %-22s %-24s %s\n", rows[r], sets[s], text, (ref > 0 ? sprintf("%.2f", med / ref) : "-")
      }
    }
  }' "$out/figures"
