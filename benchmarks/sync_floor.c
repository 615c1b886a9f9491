/* The least a window synchronisation can cost on this machine, with no
 * library at all: N forked processes exchanging flags in shared memory,
 * in the two shapes win_bench times. A fence needs every member to hear
 * from every other (here a counter all of them add to and wait on), a
 * PSCW ring epoch two flag exchanges per rank (post to the left
 * neighbour, wait for the right one's post, complete to the right, wait
 * for the left one's complete). A wait polls its flag and, when the
 * processes outnumber the CPUs they may run on, yields at every failed
 * poll: the process it waits for may need this very CPU, and a yield
 * is the cheapest hand-over (a futex wake costs far more).
 *
 * Its point: with 4 ranks on 2 cores every rank must run once per epoch,
 * so each core switches between its ranks at least twice, whatever the
 * library does. compare_win.sh prints these floors beside Open MPI's
 * times, so that a goal like "5x faster than MPI" can be checked against
 * what the machine allows.
 *
 * usage: sync_floor [-n PROCS] [-e EPOCHS] [-r REPS]
 * prints: floor,<shape>,<procs>,<median us per epoch>,<min>,<max>
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kLine = 64, kMaxProcs = 64, kMaxReps = 64 };

struct slot {
  _Atomic long value;
  char pad[kLine - sizeof(long)];
};

struct shared {
  struct slot counter;           /* fence: arrivals, all epochs */
  struct slot post[kMaxProcs];   /* PSCW: post count of each rank's window */
  struct slot done[kMaxProcs];   /* PSCW: completions received by each rank */
  double us[kMaxReps];
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int yield_on_miss;

static void await_at_least(_Atomic long* word, long want) {
  while (atomic_load_explicit(word, memory_order_acquire) < want)
    if (yield_on_miss) sched_yield();
}

static void fence_epochs(struct shared* s, int procs, long first, long epochs) {
  for (long e = first; e < first + epochs; ++e) {
    atomic_fetch_add_explicit(&s->counter.value, 1, memory_order_acq_rel);
    await_at_least(&s->counter.value, (e + 1) * procs);
  }
}

static void pscw_epochs(struct shared* s, int rank, int procs, long first, long epochs) {
  const int right = (rank + 1) % procs;
  for (long e = first; e < first + epochs; ++e) {
    atomic_store_explicit(&s->post[rank].value, e + 1, memory_order_release); /* expose to the left */
    await_at_least(&s->post[right].value, e + 1);                              /* start towards the right */
    atomic_fetch_add_explicit(&s->done[right].value, 1, memory_order_acq_rel); /* complete */
    await_at_least(&s->done[rank].value, e + 1);                               /* wait for the left */
  }
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void run(struct shared* s, const char* shape, int procs, long epochs, int reps) {
  atomic_store(&s->counter.value, 0);
  for (int r = 0; r < kMaxProcs; ++r) {
    atomic_store(&s->post[r].value, 0);
    atomic_store(&s->done[r].value, 0);
  }
  const int is_fence = shape[0] == 'f';
  for (int rank = 0; rank < procs; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      perror("sync_floor: fork");
      exit(1);
    }
    if (pid != 0) continue;
    long done_epochs = 0;
    for (int rep = -1; rep < reps; ++rep) { /* rep -1: warm-up */
      const double t0 = now();
      if (is_fence)
        fence_epochs(s, procs, done_epochs, epochs);
      else
        pscw_epochs(s, rank, procs, done_epochs, epochs);
      done_epochs += epochs;
      if (rank == 0 && rep >= 0) s->us[rep] = (now() - t0) / (double)epochs * 1e6;
    }
    _exit(0);
  }
  int status, failed = 0;
  for (int rank = 0; rank < procs; ++rank) {
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) {
    fprintf(stderr, "sync_floor: a process failed\n");
    exit(1);
  }
  qsort(s->us, (size_t)reps, sizeof s->us[0], compare);
  printf("floor,%s,%d,%.3f,%.3f,%.3f\n", shape, procs, s->us[reps / 2], s->us[0], s->us[reps - 1]);
}

int main(int argc, char** argv) {
  int procs = 2, reps = 9, opt;
  long epochs = 20000;
  while ((opt = getopt(argc, argv, "n:e:r:h")) != -1) {
    switch (opt) {
      case 'n': procs = atoi(optarg); break;
      case 'e': epochs = atol(optarg); break;
      case 'r': reps = atoi(optarg); break;
      default:
        fprintf(stderr, "usage: sync_floor [-n PROCS (2-%d)] [-e EPOCHS per rep] [-r REPS (1-%d)]\n", kMaxProcs, kMaxReps);
        return opt == 'h' ? 0 : 2;
    }
  }
  if (procs < 2 || procs > kMaxProcs || reps < 1 || reps > kMaxReps || epochs < 1) {
    fprintf(stderr, "sync_floor: -n must be 2-%d, -r 1-%d, -e at least 1\n", kMaxProcs, kMaxReps);
    return 2;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cpus = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 1;
  yield_on_miss = procs > cpus;
  struct shared* s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) {
    perror("sync_floor: mmap");
    return 1;
  }
  printf("# sync_floor: %d processes on %d CPUs, %s at every failed poll, %ld epochs x %d reps\n", procs, cpus,
         yield_on_miss ? "yield" : "no yield", epochs, reps);
  printf("impl,shape,procs,us,min_us,max_us\n");
  run(s, "fence", procs, epochs, reps);
  run(s, "pscw_ring", procs, epochs, reps);
  return 0;
}
