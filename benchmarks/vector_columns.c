/*
 * vector_columns: a block of columns of a row-major 2-D array, the access
 * pattern of a Global Arrays patch. Rank 1 holds M rows x 4096 ints (each row
 * 16 KiB); rank 0 gets (and puts) columns 0..C-1 of all M rows as ONE
 * transfer, dense on rank 0 (C*4 bytes per row, rows back to back):
 *
 *   gets / puts   ARMCI_GetS / ARMCI_PutS, 1 stride level: count = {C*4, M},
 *                 remote stride 16384, local stride C*4
 *   getv / putv   ARMCI_GetV / ARMCI_PutV with one armci_giov_t of M pointers
 *                 of C*4 bytes each
 *   get_contig / put_contig  ARMCI_Get / ARMCI_Put of the same C*4*M bytes,
 *                 contiguous on both sides: the bound
 *
 * for M in -m (default 64,128) and C in -C (default 4,8,...,2048). Reported:
 * median us per transfer, MB/s (1e6 B/s) and vs_contig = this MB/s / the
 * contiguous one's. Blocking calls, back to back; the put kinds end each
 * sample with one ARMCI_Fence; the six kinds of one (M, C) are sampled in
 * turn, samples of at least -s ms (default 1). Every kind is checked once,
 * untimed, after its measurement (columns, and that the rest of each row is
 * untouched).
 *
 * Target: idle in a barrier (default) or busy (-b): rank 1 computes without
 * calling the library until rank 0 puts a stop word into rank 1's
 * ARMCI_Malloc memory, as in strided_bench.
 *
 * One source, two builds:
 *   libarmci:  make builds benchmarks/vector_columns
 *   ARMCI-MPI: mpicc -O2 benchmarks/vector_columns.c benchmarks/harness*.c -larmci-openmpi -lm
 * Options: -m LIST, -C LIST, -r REPS (default 7), -s MS, -b, -T SECONDS (most
 * a busy target computes in one phase, default 120), -c FILE (CSV).
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#define COLS 4096 /* ints per row */
#define ROW_BYTES (COLS * (long)sizeof(int))
#define MAX_LIST 32

enum kind { K_GETS, K_GETV, K_GET_CONTIG, K_PUTS, K_PUTV, K_PUT_CONTIG, NKINDS };
static const char *kind_names[NKINDS] = {"gets", "getv", "get_contig", "puts", "putv", "put_contig"};
static int is_put(enum kind k) { return k >= K_PUTS; }
static int is_contig(enum kind k) { return k == K_GET_CONTIG || k == K_PUT_CONTIG; }

#include "bench_busy.h"

/* ------------------------------------------------------------ transfers */
struct layout {
  char *remote;     /* rank 1's array */
  int rows, cols;   /* M, C */
  void **remote_rows, **local_rows; /* M pointers each, for the giov */
};

/* The pointer arrays of the giov: row r of the block on each side. */
static void set_rows(struct layout *L, char *local) {
  for (int r = 0; r < L->rows; r++) {
    L->remote_rows[r] = L->remote + (long)r * ROW_BYTES;
    L->local_rows[r] = local + (long)r * L->cols * (long)sizeof(int);
  }
}

static double run(enum kind k, struct layout *L, char *local, long iters) {
  const int row = L->cols * (int)sizeof(int);
  int remote_stride = (int)ROW_BYTES, local_stride = row;
  int count[2] = {row, L->rows};
  const int bytes = row * L->rows;
  armci_giov_t iov;
  iov.bytes = row;
  iov.ptr_array_len = L->rows;
  set_rows(L, local);
  if (k == K_GETV) {
    iov.src_ptr_array = L->remote_rows;
    iov.dst_ptr_array = L->local_rows;
  } else {
    iov.src_ptr_array = L->local_rows;
    iov.dst_ptr_array = L->remote_rows;
  }
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    int rc = 0;
    switch (k) {
      case K_GETS: rc = ARMCI_GetS(L->remote, &remote_stride, local, &local_stride, count, 1, 1); break;
      case K_GETV: rc = ARMCI_GetV(&iov, 1, 1); break;
      case K_GET_CONTIG: rc = ARMCI_Get(L->remote, local, bytes, 1); break;
      case K_PUTS: rc = ARMCI_PutS(local, &local_stride, L->remote, &remote_stride, count, 1, 1); break;
      case K_PUTV: rc = ARMCI_PutV(&iov, 1, 1); break;
      case K_PUT_CONTIG: rc = ARMCI_Put(local, L->remote, bytes, 1); break;
      default: break;
    }
    if (rc != 0) die("%s returned %d", kind_names[k], rc);
  }
  if (is_put(k)) ARMCI_Fence(1);
  return now() - t0;
}

/* The value rank 1's array holds at (row, col); puts in a check write its negation. */
static int value(long row, long col) { return (int)(row * COLS + col + 1); }

static void bad(enum kind k, const struct layout *L, long row, long col, int got, int want) {
  die("%s (M %d, C %d): row %ld column %ld holds %d, expected %d", kind_names[k], L->rows, L->cols, row, col, got,
      want);
}

/* One untimed transfer of kind k with data the timed ones never move, checked
 * element by element (puts: read back whole rows, so columns past C are
 * checked to be untouched), then rank 1's array is restored. dense and flat
 * hold what the timed transfers move (the block's columns packed, and the
 * array's first bytes), so those leave rank 1's data as it was. */
static void check(enum kind k, struct layout *L, const int *image, int *scratch, int *back) {
  const long M = L->rows, C = L->cols, n = M * C;
  if (!is_put(k)) {
    for (long i = 0; i < n + 16; i++) scratch[i] = -0x5a5a5a5a;
    run(k, L, (char *)scratch, 1);
    for (long i = 0; i < n; i++) {
      long row = is_contig(k) ? i / COLS : i / C, col = is_contig(k) ? i % COLS : i % C;
      if (scratch[i] != value(row, col)) bad(k, L, row, col, scratch[i], value(row, col));
    }
    for (long i = n; i < n + 16; i++)
      if (scratch[i] != -0x5a5a5a5a) die("%s (M %ld, C %ld): wrote past the end of its destination", kind_names[k], M, C);
    return;
  }
  for (long i = 0; i < n; i++) {
    long row = is_contig(k) ? i / COLS : i / C, col = is_contig(k) ? i % COLS : i % C;
    scratch[i] = -value(row, col);
  }
  run(k, L, (char *)scratch, 1); /* ends with ARMCI_Fence */
  const long words = M * COLS;
  for (long i = 0; i < words; i++) back[i] = 0;
  if (ARMCI_Get(L->remote, back, (int)(words * (long)sizeof(int)), 1) != 0) die("read-back get failed");
  for (long row = 0; row < M; row++)
    for (long col = 0; col < COLS; col++) {
      int want = value(row, col);
      int written = is_contig(k) ? (row * COLS + col < n) : (col < C);
      if (written) want = -want;
      if (back[row * COLS + col] != want) bad(k, L, row, col, back[row * COLS + col], want);
    }
  restore_target(L->remote, image, words * (long)sizeof(int));
}

/* ------------------------------------------------------------ settings */
static const struct bench_col columns[] = {
    CONFIG_COLUMNS,
    {"rows", "rows", COL_LONG, 5, 0, 0},
    {"cols", "cols", COL_LONG, 5, 0, 0},
    {"bytes", "bytes", COL_LONG, 9, 0, 0},
    {"time_us", "time_us_median", COL_DOUBLE, 11, 2, 3},
    {"MB/s", "bw_MBps_median", COL_DOUBLE, 10, 1, 1},
    {"vs_contig", "vs_contig", COL_DOUBLE, 9, 3, 4},
    BUSY_COLUMNS,
};
static const struct bench_table table = BENCH_TABLE(columns);

static const char about[] =
    "Columns 0..C-1 of M rows of 4096 ints at rank 1 (a Global Arrays patch) to and from\n"
    "rank 0 as one strided, vector or contiguous transfer; see benchmarks/README.md.";

/* The transfers of one (M, C): measure_kinds's run. dense: the block's
 * columns packed, as a get leaves them; flat: the array's first bytes, what
 * the contiguous kinds move. */
struct phase_data {
  struct layout *L;
  char *dense, *flat;
};

static double run_n(void *ctx, int k, long n) {
  const struct phase_data *d = ctx;
  return run((enum kind)k, d->L, is_contig((enum kind)k) ? d->flat : d->dense, n);
}

int main(int argc, char **argv) {
  int reps = 7;
  double sample_s = 0.001;
  long rows_list[MAX_LIST] = {64, 128}, cols_list[MAX_LIST];
  int nrows = 2, ncols = 0;
  for (long c = 4; c <= 2048; c *= 2) cols_list[ncols++] = c;
  const char *csv_path = NULL;
  struct phase_ctl pc = {0};
  pc.limit_s = 120;
  const struct bench_opt opts[] = {
      {'m', "rows", OPT_LIST, rows_list, 1, 1024, "LIST", "row counts M, comma list", NULL, &nrows, MAX_LIST,
       NULL},
      {'C', "cols", OPT_LIST, cols_list, 1, COLS, "LIST", "column counts C, comma list", NULL, &ncols, MAX_LIST,
       NULL},
      BENCH_OPT_REPS('r', &reps, NULL),
      BENCH_OPT_SAMPLE_MS('s', &sample_s, NULL),
      BUSY_TARGET_OPTS(&pc),
      BENCH_OPT_CSV('c', &csv_path),
      BENCH_OPT_END};
  bench_begin(&argc, &argv, "vector_columns", opts, about, 2);

  const long max_rows = bench_largest(rows_list, nrows);
  const long words = max_rows * COLS, array_bytes = words * (long)sizeof(int);
  void **bases = bench_malloc_all((size_t)array_bytes, 0);
  phase_ctl_init(&pc);
  /* +16 words: guards after a get's destination */
  int *image = bench_malloc_local((size_t)array_bytes);
  int *dense = bench_malloc_local((size_t)array_bytes + 64);
  int *scratch = bench_malloc_local((size_t)array_bytes + 64);
  int *back = bench_malloc_local((size_t)array_bytes);
  int *flat = bench_malloc_local((size_t)array_bytes);
  void **ptrs = malloc(2 * sizeof(void *) * (size_t)max_rows);
  if (!ptrs) die("out of memory");
  for (long i = 0; i < words; i++) image[i] = value(i / COLS, i % COLS);
  target_holds(bases, image, (size_t)array_bytes);

  const double baseline = busy_baseline(&pc);
  const char *target = pc.busy ? "busy" : "idle", *protocol = strided_protocol(), *path = transfer_path();
  struct bench_run run_clock;
  bench_report_open(&run_clock, csv_path, &table, reps,
                    "path=%s protocol=%s target=%s reps=%d sample=%.1fms np=%d binding=%s; array rows of %ld B "
                    "(medians; MB/s = 1e6 B/s)",
                    path, protocol, target, reps, sample_s * 1e3, armci_msg_nproc(), bench_binding(), ROW_BYTES);
  print_busy_header(&pc, baseline, &table);

  for (int mi = 0; mi < nrows; mi++)
    for (int ci = 0; ci < ncols; ci++) {
      struct layout L = {bases[1], (int)rows_list[mi], (int)cols_list[ci], ptrs, ptrs + max_rows};
      const long M = L.rows, C = L.cols, bytes = M * C * (long)sizeof(int);
      double times[NKINDS];
      for (long r = 0; r < M; r++)
        for (long c = 0; c < C; c++) dense[r * C + c] = value(r, c);
      memcpy(flat, image, (size_t)bytes);
      /* One phase per (M, C): its six kinds measured in turn, then checked. */
      phase_begin(&pc);
      if (me == 0) {
        struct phase_data d = {&L, (char *)dense, (char *)flat};
        measure_kinds(NKINDS, reps, sample_s, run_n, &d, times);
        for (int k = 0; k < NKINDS; k++)
          check((enum kind)k, &L, image, scratch, back);
      }
      phase_end(&pc);
      if (me == 0) {
        const struct busy_cells bc = busy_cells(&pc, baseline);
        for (int k = 0; k < NKINDS; k++) {
          const double t = times[k], t_contig = times[is_put((enum kind)k) ? K_PUT_CONTIG : K_GET_CONTIG];
          bench_row(&table, kind_names[k], path, protocol, target, M, C, bytes, t * 1e6, (double)bytes / t / 1e6,
                    t_contig / t, bc.text, bc.share, bc.baseline);
        }
        fflush(stdout);
      }
    }

  if (me == 0) {
    bench_report_table(&run_clock, NULL, NULL,
                       "# vs_contig: MB/s over that of the contiguous Get/Put of the same bytes (the bound)\n");
    print_busy_note(&pc, "all six kinds of one M, C");
    printf("# all transfers checked\n");
    bench_csv_finish();
  }
  ARMCI_Barrier();
  free(ptrs);
  ARMCI_Free_local(flat);
  ARMCI_Free_local(back);
  ARMCI_Free_local(scratch);
  ARMCI_Free_local(dense);
  ARMCI_Free_local(image);
  return phases_end(&pc, bases);
}
