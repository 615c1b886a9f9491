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
 *   ARMCI-MPI: mpicc -O2 benchmarks/vector_columns.c -larmci-openmpi
 * Options: -m LIST, -C LIST, -r REPS (default 7), -s MS, -b, -T SECONDS (most
 * a busy target computes in one phase, default 120), -c FILE (CSV).
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "vector_columns"
#include "bench_common.h"

#define COLS 4096 /* ints per row */
#define ROW_BYTES (COLS * (long)sizeof(int))
#define MAX_REPS 51
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
  if (ARMCI_Put((void *)image, L->remote, (int)(words * (long)sizeof(int)), 1) != 0) die("restore put failed");
  ARMCI_Fence(1);
}

/* ------------------------------------------------------------ settings */
static int parse_list(const char *text, long *out, long lo, long hi, const char *opt) {
  char buf[512];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", text);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char *end;
    long v = strtol(tok, &end, 10);
    if (end == tok || *end || v < lo || v > hi) die("%s: '%s' is not %ld..%ld", opt, tok, lo, hi);
    if (n == MAX_LIST) die("%s: more than %d values", opt, MAX_LIST);
    out[n++] = v;
  }
  if (n == 0) die("%s: empty list", opt);
  return n;
}

static const char *protocol_name(void) {
#ifdef ARMCI_MPI
  return "armci-mpi";
#else
  const char *p = getenv("ARMCI_STRIDED_PROTOCOL");
  return (p && *p) ? p : "auto";
#endif
}

static const char *path_name(void) {
#ifdef ARMCI_MPI
  return "mpi";
#else
  return (ARMCI_Uses_shm() && ARMCI_Same_node(1)) ? "shm" : "network";
#endif
}

static double load_average(void) {
  double v = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  const int np = armci_msg_nproc();
  int reps = 7;
  double sample_s = 0.001;
  long rows_list[MAX_LIST] = {64, 128}, cols_list[MAX_LIST];
  int nrows = 2, ncols = 0;
  for (long c = 4; c <= 2048; c *= 2) cols_list[ncols++] = c;
  const char *csv_path = NULL;
  struct phase_ctl pc = {0};
  pc.limit_s = 120;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-r") && a + 1 < argc) reps = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-m") && a + 1 < argc) nrows = parse_list(argv[++a], rows_list, 1, 1024, "-m");
    else if (!strcmp(argv[a], "-C") && a + 1 < argc) ncols = parse_list(argv[++a], cols_list, 1, COLS, "-C");
    else if (!strcmp(argv[a], "-c") && a + 1 < argc) csv_path = argv[++a];
    else if (!strcmp(argv[a], "-T") && a + 1 < argc) pc.limit_s = atof(argv[++a]);
    else if (!strcmp(argv[a], "-s") && a + 1 < argc) sample_s = atof(argv[++a]) * 1e-3;
    else if (!strcmp(argv[a], "-b")) pc.busy = 1;
    else die("unknown option %s (use -m ROWS, -C COLUMNS, -r REPS, -s MS, -b, -T SECONDS, -c FILE)", argv[a]);
  }
  if (np < 2) die("run with at least 2 processes");
  if (reps < 1 || reps > MAX_REPS) die("-r must be 1..%d", MAX_REPS);
  if (!(pc.limit_s > 0)) die("-T must be positive");
  if (!(sample_s > 0)) die("-s must be positive");

  long max_rows = 0;
  for (int i = 0; i < nrows; i++)
    if (rows_list[i] > max_rows) max_rows = rows_list[i];
  const long words = max_rows * COLS, array_bytes = words * (long)sizeof(int);

  calibrate_compute();
  void **bases = malloc(sizeof(void *) * (size_t)np);
  pc.ctl = malloc(sizeof(char *) * (size_t)np);
  ARMCI_Malloc(bases, array_bytes);
  ARMCI_Malloc((void **)pc.ctl, CTL_BYTES);
  /* +16 words: guards after a get's destination */
  int *image = ARMCI_Malloc_local(array_bytes);
  int *dense = ARMCI_Malloc_local(array_bytes + 64);
  int *scratch = ARMCI_Malloc_local(array_bytes + 64);
  int *back = ARMCI_Malloc_local(array_bytes);
  int *flat = ARMCI_Malloc_local(array_bytes);
  pc.stop_src = ARMCI_Malloc_local(sizeof(long));
  void **ptrs = malloc(2 * sizeof(void *) * (size_t)max_rows);
  if (!bases || !pc.ctl || !image || !dense || !scratch || !back || !flat || !pc.stop_src || !ptrs) die("out of memory");
  for (long i = 0; i < words; i++) image[i] = value(i / COLS, i % COLS);
  access_begin(pc.ctl[me]);
  memset(pc.ctl[me], 0, CTL_BYTES);
  access_end(pc.ctl[me]);
  if (me == 1) {
    access_begin(bases[1]);
    memcpy(bases[1], image, (size_t)array_bytes);
    access_end(bases[1]);
  }
  ARMCI_Barrier();

  double baseline = -1;
  if (pc.busy) {
    phase_begin(&pc);
    if (me == 0)
      for (double t0 = now(); now() - t0 < 0.05;) {
      }
    phase_end(&pc);
    baseline = pc.tgt_share;
  }

  const char *target = pc.busy ? "busy" : "idle", *protocol = protocol_name(), *path = path_name();
  FILE *csv = stdout;
  const double t_start = now(), cpu_start = cpu_now(), load_before = load_average();
  if (me == 0) {
    if (csv_path && !(csv = fopen(csv_path, "w"))) die("cannot write %s", csv_path);
    printf("# vector_columns impl=%s path=%s protocol=%s target=%s reps=%d sample=%.1fms np=%d; array rows of "
           "%ld B (medians; MB/s = 1e6 B/s)\n",
           IMPL_NAME, path, protocol, target, reps, sample_s * 1e3, np, ROW_BYTES);
    if (pc.busy)
      printf("# busy target: compute blocks of %ld iterations (%.1f us on an idle core); tgt_cpu with no "
             "transfers (rank 0 spinning 50 ms): %.2f\n",
             block_iters, block_seconds * 1e6, baseline);
    printf("%-11s %-7s %-9s %-6s %5s %5s %9s %11s %10s %9s %8s\n", "op", "path", "protocol", "target", "rows", "cols",
           "bytes", "time_us", "MB/s", "vs_contig", "tgt_cpu");
  }
  const int ncells = nrows * ncols;
  double *times = calloc((size_t)ncells * NKINDS, sizeof(double));
  double *shares = calloc((size_t)ncells, sizeof(double));
  if (!times || !shares) die("out of memory");

  for (int mi = 0; mi < nrows; mi++)
    for (int ci = 0; ci < ncols; ci++) {
      const int cell = mi * ncols + ci;
      struct layout L = {bases[1], (int)rows_list[mi], (int)cols_list[ci], ptrs, ptrs + max_rows};
      const long M = L.rows, C = L.cols, bytes = M * C * (long)sizeof(int);
      /* dense: the block's columns packed, as a get leaves them */
      for (long r = 0; r < M; r++)
        for (long c = 0; c < C; c++) dense[r * C + c] = value(r, c);
      /* the contiguous kinds move the array's first bytes: image */
      memcpy(flat, image, (size_t)bytes);
      /* One phase per (M, C): the six kinds are calibrated, then each of the
       * -r passes takes one sample of every kind (bursts of other load spoil
       * one sample of each, and a kind is measured beside its bound). */
      phase_begin(&pc);
      if (me == 0) {
        long iters[NKINDS];
        double samples[NKINDS][MAX_REPS];
        for (int k = 0; k < NKINDS; k++) {
          char *local = is_contig((enum kind)k) ? (char *)flat : (char *)dense;
          iters[k] = 1;
          while (run((enum kind)k, &L, local, iters[k]) < sample_s && iters[k] < (1L << 20)) iters[k] *= 2;
        }
        for (int r = 0; r < reps; r++)
          for (int k = 0; k < NKINDS; k++) {
            char *local = is_contig((enum kind)k) ? (char *)flat : (char *)dense;
            samples[k][r] = run((enum kind)k, &L, local, iters[k]) / (double)iters[k];
          }
        for (int k = 0; k < NKINDS; k++) {
          times[cell * NKINDS + k] = median(samples[k], reps);
          check((enum kind)k, &L, image, scratch, back);
        }
      }
      phase_end(&pc);
      shares[cell] = pc.busy ? pc.tgt_share : -1;
      if (me == 0)
        for (int k = 0; k < NKINDS; k++) {
          const double t = times[cell * NKINDS + k];
          const double t_contig = times[cell * NKINDS + (is_put((enum kind)k) ? K_PUT_CONTIG : K_GET_CONTIG)];
          char share_txt[32] = "-";
          if (pc.busy) snprintf(share_txt, sizeof share_txt, "%.2f", shares[cell]);
          printf("%-11s %-7s %-9s %-6s %5ld %5ld %9ld %11.2f %10.1f %9.3f %8s\n", kind_names[k], path, protocol,
                 target, M, C, bytes, t * 1e6, (double)bytes / t / 1e6, t_contig / t, share_txt);
          fflush(stdout);
        }
    }

  if (me == 0) {
    const double wall = now() - t_start, cpu = cpu_now() - cpu_start;
    printf("# run: %.1f s; rank 0 cpu/wall %.2f; load average %.2f before, %.2f after\n", wall,
           wall > 0 ? cpu / wall : 0.0, load_before, load_average());
    printf("# vs_contig: MB/s over that of the contiguous Get/Put of the same bytes (the bound)\n");
    if (pc.busy)
      printf("# tgt_cpu: share of the phase (all six kinds of one M, C) rank 1 spent in compute blocks, at their "
             "idle speed%s\n",
             pc.any_timed_out ? "; THE TARGET GAVE UP WAITING FOR THE STOP WORD in some phase (-T)" : "");
    printf("# all transfers checked\n");
    if (csv == stdout) printf("# CSV\n");
    fprintf(csv, "impl,path,protocol,target,op,rows,cols,bytes,time_us_median,bw_MBps_median,vs_contig,"
                 "tgt_cpu_share,tgt_cpu_baseline\n");
    for (int mi = 0; mi < nrows; mi++)
      for (int ci = 0; ci < ncols; ci++)
        for (int k = 0; k < NKINDS; k++) {
          const int cell = mi * ncols + ci;
          const long bytes = rows_list[mi] * cols_list[ci] * (long)sizeof(int);
          const double t = times[cell * NKINDS + k];
          const double t_contig = times[cell * NKINDS + (is_put((enum kind)k) ? K_PUT_CONTIG : K_GET_CONTIG)];
          fprintf(csv, "%s,%s,%s,%s,%s,%ld,%ld,%ld,%.3f,%.1f,%.4f,", IMPL_NAME, path, protocol, target, kind_names[k],
                  rows_list[mi], cols_list[ci], bytes, t * 1e6, (double)bytes / t / 1e6, t_contig / t);
          if (pc.busy) fprintf(csv, "%.3f,%.3f\n", shares[cell], baseline);
          else fprintf(csv, ",\n");
        }
    if (csv != stdout) fclose(csv);
  }
  ARMCI_Barrier();
  free(times);
  free(shares);
  free(ptrs);
  ARMCI_Free_local(pc.stop_src);
  ARMCI_Free_local(flat);
  ARMCI_Free_local(back);
  ARMCI_Free_local(scratch);
  ARMCI_Free_local(dense);
  ARMCI_Free_local(image);
  ARMCI_Free(pc.ctl[me]);
  ARMCI_Free(bases[me]);
  free(pc.ctl);
  free(bases);
  bench_end();
  return pc.any_timed_out ? 4 : 0;
}
