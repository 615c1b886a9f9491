/*
 * msg_bench: the armci_msg collectives beside Open MPI's, in one run and on
 * the same processes: armci_msg_barrier vs MPI_Barrier, armci_msg_bcast vs
 * MPI_Bcast, armci_msg_dgop(+) vs MPI_Allreduce(MPI_SUM) on doubles, 8 B to
 * 1 MiB. The two are measured in alternating samples of every cell, so load
 * from elsewhere hits both alike; the table gives each one's median time per
 * call (rank 0's clock, between two MPI barriers) with quartiles, and MPI's
 * time over ours (> 1: ours is faster). Every result is checked.
 *
 * libarmci only (ARMCI-MPI's armci_msg calls are MPI's own). Options: see
 * --help; benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "harness.h"

enum op { OP_BARRIER, OP_BCAST, OP_DGOP, NOPS };
static const char *op_names[NOPS] = {"barrier", "bcast", "dgop"};
enum impl { IMPL_ARMCI, IMPL_MPI, NIMPLS };

static struct bench_sizes sizes = {{8, 64, 512, 4096, 32768, 262144, 1048576}, 7};
static struct bench_pass_options opt = {.reps = 9, .warmup = 1, .sample_s = 0.02};

struct cell {
  enum op op;
  long bytes;
  long iters;
  double samples[NIMPLS][BENCH_MAX_REPS];
};
static struct cell cells[1 + 2 * 32];
static int ncells;
static double *buffer, *reference;

static void one_call(enum op op, enum impl impl, long bytes) {
  const int n = (int)(bytes / (long)sizeof(double));
  switch (op) {
    case OP_BARRIER:
      if (impl == IMPL_ARMCI) armci_msg_barrier();
      else MPI_Barrier(MPI_COMM_WORLD);
      break;
    case OP_BCAST:
      if (impl == IMPL_ARMCI) armci_msg_bcast(buffer, (int)bytes, 0);
      else MPI_Bcast(buffer, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
      break;
    case OP_DGOP:
      if (impl == IMPL_ARMCI) armci_msg_dgop(buffer, n, "+");
      else MPI_Allreduce(MPI_IN_PLACE, buffer, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    default: break;
  }
}

/* Seconds per call at rank 0 (every rank returns rank 0's figure, so all
 * take the same calibration decisions). */
static double timed(const struct cell *c, enum impl impl, long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  for (long i = 0; i < iters; i++) one_call(c->op, impl, c->bytes);
  double t = now() - t0;
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

struct calib_ctx {
  const struct cell *c;
};
static double run_both(void *ctx, long n) {
  const struct cell *c = ((struct calib_ctx *)ctx)->c;
  double a = timed(c, IMPL_ARMCI, n), b = timed(c, IMPL_MPI, n);
  return a > b ? a : b;
}

/* The reductions and broadcasts are checked once per cell, outside the
 * timed loops: values every rank can compute. */
static void check_cell(const struct cell *c, enum impl impl) {
  const long n = c->bytes / (long)sizeof(double);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (long i = 0; i < n; i++) buffer[i] = me == 0 || c->op == OP_DGOP ? (double)(i % 7 + me) : -1.0;
  one_call(c->op, impl, c->bytes);
  for (long i = 0; i < n; i++) {
    double expect = c->op == OP_DGOP ? (double)(np * (i % 7) + np * (np - 1) / 2) : (double)(i % 7);
    if (c->op != OP_BARRIER && buffer[i] != expect)
      die("%s (%s) of %ld bytes: element %ld is %g, expected %g", op_names[c->op],
          impl == IMPL_ARMCI ? "armci" : "mpi", c->bytes, i, buffer[i], expect);
  }
}

static void pass_fn(void *ctx, int pass) {
  (void)ctx;
  for (int k = 0; k < ncells; k++) {
    struct cell *c = &cells[k];
    if (pass == 0) {
      check_cell(c, IMPL_ARMCI);
      check_cell(c, IMPL_MPI);
      struct calib_ctx cc = {c};
      struct bench_calibration cal = {opt.sample_s, 0.25, 1, 1, 1, 1L << 22};
      c->iters = bench_calibrate(&cal, run_both, &cc) / 2;
      if (c->iters < 1) c->iters = 1;
      continue;
    }
    /* Alternate which goes first, so neither always follows the other. */
    for (int j = 0; j < NIMPLS; j++) {
      const enum impl impl = (enum impl)((j + pass) % NIMPLS);
      c->samples[impl][pass - 1] = timed(c, impl, c->iters) / (double)c->iters;
    }
  }
}

static const struct bench_col cols[] = {
    {"op", "op", COL_STR, -8, 0, 0},
    {"bytes", "bytes", COL_LONG, 8, 0, 0},
    BENCH_COLS_OURS_VS_MPI(10, 2),
};
static const struct bench_table table = BENCH_TABLE(cols);

/* Rank 0: ours and MPI's time per call, their quartiles and MPI over ours. */
static void report_row(int k) {
  const struct cell *c = &cells[k];
  const struct bench_figure a = bench_figure(c->samples[IMPL_ARMCI], opt.reps, 1e6, 2),
                            m = bench_figure(c->samples[IMPL_MPI], opt.reps, 1e6, 2);
  bench_row(&table, op_names[c->op], c->bytes, a.median, a.spread, m.median, m.spread, m.median / a.median, a.q1,
            a.q3, m.q1, m.q3);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct bench_opt opts[] = {
      BENCH_OPTS_PASSES(&opt),
      BENCH_OPT_SIZE_LIST('s', &sizes, 8, 1 << 26),
      BENCH_OPT_END,
  };
  bench_begin(&argc, &argv, "msg_bench", opts,
              "armci_msg_barrier/bcast/dgop against MPI_Barrier/Bcast/Allreduce, alternating\n"
              "samples in one run; time per call at rank 0 (median, quartiles), MPI over ours.",
              2);
  long largest = 8;
  cells[ncells++] = (struct cell){OP_BARRIER, 0, 0, {{0}}};
  for (int s = 0; s < sizes.count; s++) {
    const long bytes = sizes.bytes[s] / (long)sizeof(double) * (long)sizeof(double);
    if (bytes <= 0) continue;
    cells[ncells++] = (struct cell){OP_BCAST, bytes, 0, {{0}}};
    cells[ncells++] = (struct cell){OP_DGOP, bytes, 0, {{0}}};
    if (bytes > largest) largest = bytes;
  }
  buffer = malloc((size_t)largest);
  reference = malloc((size_t)largest);
  const struct bench_measurement m = {&table, &opt, pass_fn, ncells, report_row, NULL};
  bench_measure(&m, NULL);
  bench_csv_finish();
  free(buffer);
  free(reference);
  bench_end();
  MPI_Finalize();
  return 0;
}
