#!/usr/bin/env bash
# Runs the verbs unit tests (the network contract suite's verbs instantiation
# and the verbs-only tests) and the multi-process suite over raw verbs inside
# the Soft-RoCE VM of ../shared/rxe-vm (a real kernel verbs stack: rdma_rxe),
# with and without the shared-memory path, then a stress run of mp_random
# and the peer-failure cases of tests/mp/faults-test.sh over verbs. Run from
# the build directory.
# The VM emulates its CPU, so the process counts stay small.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
vm=${RXE_VM_SCRIPT:-$top/../shared/rxe-vm/run-in-rxe-vm.sh}
if [ ! -x "$vm" ]; then
  echo "test-verbs-vm: $vm not found: the verbs tests need ../shared/rxe-vm beside the repository" >&2
  exit 1
fi
build=$(pwd)
[ -x tests/unit/unit_tests ] && [ -x tests/mp/run-mp-tests.sh ] || {
  echo "test-verbs-vm: run from a build directory after make check" >&2
  exit 1
}
export RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-1200}
# mpirun refuses the VM's default host name; the ARMCI_* modes are set by the runner.
exec "$vm" bash -c "
  set -u
  hostname armci-vm
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The emulated CPU is slow: twenty thousand operations in flight (the
  # host modes keep two hundred thousand).
  export MP_INFLIGHT=20000
  cd '$build'
  status=0
  ./tests/unit/unit_tests --gtest_filter='Verbs*:*NetworkContract*/verbs*:-VerbsPair.*' --gtest_brief=1 || status=1
  # The verbs layer across processes: three instances that swap addresses
  # and keys through files (test_verbs_network.cpp, pair mode).
  pair_dir=\$(mktemp -d)
  pids=
  for r in 0 1 2; do
    VERBS_PAIR_DIR=\$pair_dir VERBS_PAIR_RANK=\$r VERBS_PAIR_SIZE=3 timeout 600 \\
      ./tests/unit/unit_tests --gtest_filter='VerbsPair.*' --gtest_brief=1 > \$pair_dir/out.\$r 2>&1 &
    pids=\"\$pids \$!\"
  done
  for p in \$pids; do wait \$p || status=1; done
  for r in 0 1 2; do echo \"VerbsPair rank \$r:\"; cat \$pair_dir/out.\$r; done
  MP_MODES='verbs' MP_NPS='2 3' MP_MPI_NPS='2' MP_TIMEOUT=300 ./tests/mp/run-mp-tests.sh || status=1
  MP_MODES='verbs-buffered' MP_NPS='2' MP_TESTS='mp_basic mp_nonblocking mp_random mp_strided mp_aggregate mp_windows' \
    MP_TIMEOUT=300 ./tests/mp/run-mp-tests.sh || status=1
  MP_MODES='verbs-host' MP_NPS='2 3' MP_TESTS='mp_strided' MP_TIMEOUT=300 ./tests/mp/run-mp-tests.sh || status=1
  MP_MODES='verbs-mixed' MP_NPS='3' MP_MPI_NPS='3' MP_TESTS='mp_basic mp_acc mp_nonblocking mp_random mp_rmw mp_windows mp_with_mpi' \
    MP_TIMEOUT=300 ./tests/mp/run-mp-tests.sh || status=1
  # Stress (issue 15): mp_random with 20000 operations per rank over verbs
  # at np 2 (82 s at load 5), 10000 over verbs-mixed at np 3 (177 s at
  # load 15; at np 2 both ranks share one virtual node and verbs would
  # carry nothing); 10^6 per run, once, is in tests/mp/README.md.
  MP_RANDOM_OPS=20000 MP_MODES='verbs' MP_NPS='2' MP_TESTS='mp_random' MP_TIMEOUT=600 \
    ./tests/mp/run-mp-tests.sh || status=1
  MP_RANDOM_OPS=10000 MP_MODES='verbs-mixed' MP_NPS='3' MP_TESTS='mp_random' MP_TIMEOUT=600 \
    ./tests/mp/run-mp-tests.sh || status=1
  # Peer failure over verbs (issue 15): a rank killed while the others are
  # in Barrier, Lock or Wait, and ARMCI_ON_PEER_FAILURE=return (about 3.5 min).
  FAULTS_PARTS='2 4' FAULTS_MODES='verbs verbs-mixed' '$top/tests/mp/faults-test.sh' || status=1
  exit \$status
"
