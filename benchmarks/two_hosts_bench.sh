#!/usr/bin/env bash
# ARMCI between two hosts next to perftest between the same two devices, in
# one run: boots the two guests of scripts/test-two-hosts.sh (rxea, rxeb, each
# with its own kernel and Soft-RoCE rxe0 on a private link) and measures, from
# rxea to rxeb, perftest's ib_write_lat, ib_read_lat, ib_atomic_lat,
# ib_write_bw and ib_read_bw, then contig_bench (put+fence, get, put) and
# rmw_bench (fetch-and-add) with one rank per guest, over raw verbs and over
# UCX. Run from the build directory:
#   benchmarks/two_hosts_bench.sh       (or ../benchmarks/two_hosts_bench.sh)
# Prints a table (median and spread per measure) and writes
# two-hosts/two_hosts_bench.csv. Environment: NETWORKS (default "verbs ucx"),
# ITERS (perftest latency iterations, default 300), REPS (contig/rmw samples, 7).
# The guests emulate their CPUs (1 vCPU each, both on this machine's 2 cores):
# read the ratios, not the absolute numbers.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${TWO_HOSTS_B:-}" ]; then
  [ -x benchmarks/contig_bench ] && [ -x benchmarks/rmw_bench ] || {
    echo "two_hosts_bench: run from a build directory after make" >&2
    exit 1
  }
  TWO_HOSTS_CLOCK=tsc RXE_VM_ENV="${RXE_VM_ENV:-} NETWORKS ITERS REPS" exec "$top/scripts/test-two-hosts.sh" "$0"
fi

dev=rxe0 server_ip=10.99.0.2
iters=${ITERS:-300} reps=${REPS:-7}
out=$TWO_HOSTS_OUT/bench
mkdir -p "$out"
csv=$TWO_HOSTS_OUT/two_hosts_bench.csv
echo "measure,unit,impl,network,median,low,high,spread" > "$csv"

# Under TCG a loaded guest can calibrate its TSC wrongly, and then its clock
# (which every tool here times with) runs at a steady wrong rate. Files made in
# the shared directory get this machine's time, so compare the two clocks
# over the run.
clock_mark() {  # name: guest time beside the host's mtime of a new file
  rm -f "$out/clock.$1"
  date +%s.%N > "$out/clock.$1.guest"
  : > "$out/clock.$1"
}
clock_mark start

# perftest: the server on rxeb (over ssh), the client here. The client is
# retried while the server is still starting (connection refused).
perf_pair() {  # name tool args...
  local name=$1 tool=$2
  shift 2
  "$TWO_HOSTS_SSH" "$TWO_HOSTS_B" timeout 300 "$tool" -d "$dev" -x 1 "$@" > "$out/$name.srv" 2>&1 &
  local server=$!
  local try
  for try in $(seq 1 30); do
    timeout 300 "$tool" -d "$dev" -x 1 "$@" "$server_ip" > "$out/$name.cli" 2>&1 && break
    sleep 1
  done
  wait "$server"
}
# Latency rows: #bytes #iter t_min t_max t_typical t_avg t_stdev 99% 99.9%
perf_lat() {  # measure name
  awk -v m="$1" '$1 ~ /^[0-9]+$/ && NF >= 8 {printf "%s,us,perftest,verbs,%s,%s,%s,t_min..99%%\n", m, $5, $3, $8; exit}' "$out/$2.cli"
}
# Bandwidth rows: #bytes #iter BW_peak BW_average MsgRate (MB/s = 2^20 B/s)
perf_bw() {  # measure name
  awk -v m="$1" '$1 ~ /^[0-9]+$/ && NF >= 5 {printf "%s,MB/s,perftest,verbs,%.1f,,%.1f,-..peak\n", m, $4 * 1.048576, $3 * 1.048576; exit}' "$out/$2.cli"
}

echo "== perftest $(hostname) -> $TWO_HOSTS_B ($dev to $dev)"
for s in 8 4096; do
  perf_pair write_lat_$s ib_write_lat -s $s -n "$iters"
  perf_lat "write ${s} B" write_lat_$s >> "$csv"
  perf_pair read_lat_$s ib_read_lat -s $s -n "$iters"
  perf_lat "read ${s} B" read_lat_$s >> "$csv"
done
perf_pair atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$iters"
perf_lat "fetch-add 8 B" atomic_lat >> "$csv"
perf_pair write_bw ib_write_bw -s 65536 -n 500
perf_bw "write 64 KiB" write_bw >> "$csv"
perf_pair read_bw ib_read_bw -s 65536 -n 500
perf_bw "read 64 KiB" read_bw >> "$csv"

# ARMCI: rank 0 here, rank 1 on the other guest.
# shellcheck disable=SC2086
one_per_host="--oversubscribe --host $TWO_HOSTS_A:1,$TWO_HOSTS_B:1 -np 2"
for net in ${NETWORKS:-verbs ucx}; do
  net_args=
  [ "$net" = ucx ] && net_args=$TWO_HOSTS_UCX_ARGS
  echo "== ARMCI over $net: rank 0 on $(hostname), rank 1 on $TWO_HOSTS_B"
  # shellcheck disable=SC2086
  timeout 900 mpirun $one_per_host $net_args -x ARMCI_NETWORK="$net" -x ARMCI_VERBOSE=1 benchmarks/contig_bench \
    --sizes 8,4096,65536 --ops put,put+fence,get -o 0 -r "$reps" -t 20 -c "$out/contig.$net.csv" \
    > "$out/contig.$net.txt" 2>&1 || { echo "contig_bench over $net failed:"; tail -n 20 "$out/contig.$net.txt"; }
  grep -q '2 node(s)' "$out/contig.$net.txt" || echo "contig_bench over $net: not on two nodes?"
  # shellcheck disable=SC2086
  timeout 900 mpirun $one_per_host $net_args -x ARMCI_NETWORK="$net" benchmarks/rmw_bench -r "$reps" -n 200 \
    -c "$out/rmw.$net.csv" > "$out/rmw.$net.txt" 2>&1 || { echo "rmw_bench over $net failed:"; tail -n 20 "$out/rmw.$net.txt"; }
  awk -F, -v net="$net" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    function row(m, unit, a, b, d) { printf "%s,%s,armci,%s,%s,%s,%s,q1..q3\n", m, unit, net, $c[a], $c[b], $c[d] }
    $c["op"] == "put+fence" && $c["size"] == 8 { row("write 8 B", "us", "lat_us_median", "lat_us_q1", "lat_us_q3") }
    $c["op"] == "put+fence" && $c["size"] == 4096 { row("write 4096 B", "us", "lat_us_median", "lat_us_q1", "lat_us_q3") }
    $c["op"] == "get" && $c["size"] == 8 { row("read 8 B", "us", "lat_us_median", "lat_us_q1", "lat_us_q3") }
    $c["op"] == "get" && $c["size"] == 4096 { row("read 4096 B", "us", "lat_us_median", "lat_us_q1", "lat_us_q3") }
    $c["op"] == "put" && $c["size"] == 65536 { row("write 64 KiB", "MB/s", "bw_MBps_median", "bw_MBps_q1", "bw_MBps_q3") }
    $c["op"] == "get" && $c["size"] == 65536 { row("read 64 KiB", "MB/s", "bw_MBps_median", "bw_MBps_q1", "bw_MBps_q3") }
  ' "$out/contig.$net.csv" >> "$csv" 2>/dev/null
  awk -F, -v net="$net" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["op"] == "fetch_add_long" && $c["target"] == "rank1" {
      printf "fetch-add 8 B,us,armci,%s,%s,%s,,min..\n", net, $c["lat_us_median"], $c["lat_us_min"] }
  ' "$out/rmw.$net.csv" >> "$csv" 2>/dev/null
done

clock_mark end
rate=$(awk -v g0="$(cat "$out/clock.start.guest")" -v g1="$(cat "$out/clock.end.guest")" \
  -v h0="$(stat -c %.9Y "$out/clock.start")" -v h1="$(stat -c %.9Y "$out/clock.end")" \
  'BEGIN { if (h1 > h0) printf "%.3f", (g1 - g0) / (h1 - h0); else print "?" }')

# The table: each measure, perftest beside ARMCI over each network.
echo
echo "$(hostname) -> $TWO_HOSTS_B, Soft-RoCE under QEMU TCG (1 vCPU per guest): medians [spread]"
echo "$(hostname)'s clock ran $rate times as fast as this machine's over the run; times below are in its seconds"
awk -F, -v nets="${NETWORKS:-verbs ucx}" '
  NR == 1 { next }
  { key = $3 == "perftest" ? "perftest" : "armci-" $4
    if (!($1 in unit)) { order[++n] = $1; unit[$1] = $2 }
    v[$1, key] = $5; lo[$1, key] = $6; hi[$1, key] = $7 }
  END {
    k = split("perftest " nets, cols, " ")
    for (i = 2; i <= k; i++) cols[i] = "armci-" cols[i]
    printf "%-16s %-5s", "measure", "unit"
    for (i = 1; i <= k; i++) printf " %24s", cols[i]
    for (i = 2; i <= k; i++) printf " %8s", cols[i] "/pt"
    printf "\n"
    for (r = 1; r <= n; r++) {
      m = order[r]; printf "%-16s %-5s", m, unit[m]
      for (i = 1; i <= k; i++) {
        c = cols[i]
        cell = ((m, c) in v) ? sprintf("%.1f [%s..%s]", v[m, c], lo[m, c] == "" ? "-" : sprintf("%.1f", lo[m, c]), hi[m, c] == "" ? "-" : sprintf("%.1f", hi[m, c])) : "-"
        printf " %24s", cell
      }
      for (i = 2; i <= k; i++) {
        c = cols[i]
        printf " %8s", (((m, c) in v) && v[m, "perftest"] > 0) ? sprintf("%.2f", v[m, c] / v[m, "perftest"]) : "-"
      }
      printf "\n"
    }
  }' "$csv"
echo "CSV: $csv (spread: perftest latency t_min..99th percentile, bandwidth average..peak;"
echo "     contig_bench q1..q3 of its samples; rmw_bench min)"
echo "guest clock rate,ratio,guest,-,$rate,,,guest s per host s" >> "$csv"
