#!/usr/bin/env bash
# ARMCI over raw verbs next to perftest on the same device, in one run of the
# Soft-RoCE VM (../shared/rxe-vm). Run from the build directory:
#   benchmarks/verbs_vm_bench.sh            # boots the VM and runs everything in it
# Soft-RoCE under an emulated CPU is slow; the ratios are what to read.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${RXE_VM:-}" ]; then
  vm=${RXE_VM_SCRIPT:-$top/../shared/rxe-vm/run-in-rxe-vm.sh}
  exec "$vm" "$top/benchmarks/verbs_vm_bench.sh" "$@"
fi

hostname armci-vm
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dev=${RXE_VM_DEV:-rxe0} ip=${RXE_VM_IP:-10.99.0.1}
iters=${ITERS:-2000}
out=$(mktemp -d)

# perftest: server in the background, client against it; the client prints the table.
perf_pair() {  # name tool args...
  local name=$1 tool=$2; shift 2
  "$tool" -d "$dev" -x 1 "$@" > "$out/$name.srv" 2>&1 &
  local server=$!
  sleep 1  # the server must listen before the client connects
  timeout 300 "$tool" -d "$dev" -x 1 "$@" "$ip" > "$out/$name.cli" 2>&1 || true
  wait "$server" || true
}
lat_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 6 {print $5; exit}' "$out/$1.cli"; }   # t_typical
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 {print $4; exit}' "$out/$1.cli"; }    # BW average MB/s

for s in 8 4096; do
  perf_pair write_lat_$s ib_write_lat -s $s -n $iters
  perf_pair read_lat_$s ib_read_lat -s $s -n $iters
done
perf_pair atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n $iters
perf_pair write_bw ib_write_bw -s 65536 -n 1000
perf_pair read_bw ib_read_bw -s 65536 -n 1000

mpirun -np 2 -x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs benchmarks/contig_bench -q -o 0 -s 65536 \
  -c "$out/armci.csv" > "$out/armci.txt" 2>&1 || { cat "$out/armci.txt"; exit 1; }
# The best setting beside the default (issue 16): no helper thread at all.
mpirun -np 2 -x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs -x ARMCI_HELPER=none benchmarks/contig_bench -q -o 0 -s 65536 \
  -c "$out/armci_none.csv" > "$out/armci_none.txt" 2>&1 || { cat "$out/armci_none.txt"; exit 1; }
if [ -x benchmarks/rmw_bench ]; then
  mpirun -np 2 -x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs benchmarks/rmw_bench > "$out/rmw.txt" 2>&1 || cat "$out/rmw.txt"
fi
armci() {  # op size column(lat=4,bw=5) [csv]
  awk -F, -v op="$1" -v size="$2" -v col="$3" '$2 == op && $3 == size {print $col}' "${4:-$out/armci.csv}"
}
# Both under mpirun's default binding: "armci" with the default helper,
# "helper=none" without it.
printf '%-22s %12s %12s %12s %8s\n' "measure" "armci" "helper=none" "perftest" "ratio"
row() {  # label "op size column" perftest-figure
  local mine none
  mine=$(armci $2) none=$(armci $2 "$out/armci_none.csv")
  printf '%-22s %12s %12s %12s %8s\n' "$1" "$mine" "$none" "$3" "$(awk -v a="$mine" -v b="$3" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }')"
}
row "put+fence 8 B (us)" "put+fence 8 4" "$(lat_of write_lat_8)"
row "get 8 B (us)" "get 8 4" "$(lat_of read_lat_8)"
row "put+fence 4 KiB (us)" "put+fence 4096 4" "$(lat_of write_lat_4096)"
row "get 4 KiB (us)" "get 4096 4" "$(lat_of read_lat_4096)"
row "put 64 KiB (MB/s)" "put 65536 5" "$(bw_of write_bw)"
row "get 64 KiB (MB/s)" "get 65536 5" "$(bw_of read_bw)"
echo "perftest fetch-and-add latency (us): $(lat_of atomic_lat)"
[ -f "$out/rmw.txt" ] && { echo "--- rmw_bench over verbs"; cat "$out/rmw.txt"; }
echo "--- contig_bench over verbs"; cat "$out/armci.txt"
