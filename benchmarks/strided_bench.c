/*
 * strided_bench: bandwidth of a 2-D strided ARMCI_GetS / ARMCI_PutS from
 * rank 0 to rank 1 as the contiguous piece grows from 8 B to 64 KiB with the
 * total fixed (1 MiB by default), next to the contiguous transfer of the same
 * total and a strided memcpy of the same pattern within rank 0 (the bounds).
 * Medians of -r samples; the kinds of one piece size
 * are sampled in turn.
 *
 * Target: idle (default) waits in ARMCI_Barrier while rank 0 measures; busy
 * (-b) computes in a tight loop on private data without calling the library
 * until rank 0 puts a stop word into rank 1's ARMCI_Malloc memory (ARMCI_Put
 * + ARMCI_Fence). Rank 1 reads that word (volatile load) between compute
 * blocks of about 10 us. Every measurement phase starts with ARMCI_Barrier.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/strided_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/strided_bench.c benchmarks/harness*.c -larmci-openmpi -lm
 * Options: -r REPS (default 7), -t TOTAL bytes (default 1M), -p LIST piece
 * sizes (comma list, K/M suffixes; default 8,32,128,...,32K), -b busy target,
 * -s MS shortest sample (default 1), -T SECONDS most a busy target computes
 * in one phase (default 120), -c FILE (CSV).
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#define MAX_SIZES 32
#define SOURCE_GAP 8 /* the pieces are strided on both sides */
#define FILL 0xA5    /* what a check's destination holds before the transfer */

enum kind { K_GETS, K_PUTS, K_GET_CONTIG, K_PUT_CONTIG, K_MEMCPY_STRIDED, NKINDS };
static const char *kind_names[NKINDS] = {"gets", "puts", "get_contig", "put_contig", "memcpy_strided"};

/* A call, not a builtin: the compiler must not fold copies nobody reads. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

#include "bench_busy.h"

/* ------------------------------------------------------------ transfers */
/* The memcpy_strided row copies the strided pattern between two local
 * buffers, `local` and `spare`, whose page offsets differ as local's and
 * remote's do: the bound of a strided transfer within one node. */
static char *spare;

static double run(enum kind k, char *local, char *remote, long piece, long pieces, long iters) {
  int stride = (int)(piece + SOURCE_GAP);
  int count[2] = {(int)piece, (int)pieces};
  long total = piece * pieces;
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    int rc = 0;
    switch (k) {
      case K_GETS: rc = ARMCI_GetS(remote, &stride, local, &stride, count, 1, 1); break;
      case K_PUTS: rc = ARMCI_PutS(local, &stride, remote, &stride, count, 1, 1); break;
      case K_GET_CONTIG: rc = ARMCI_Get(remote, local, (int)total, 1); break;
      case K_PUT_CONTIG: rc = ARMCI_Put(local, remote, (int)total, 1); break;
      case K_MEMCPY_STRIDED:
        for (long p = 0; p < pieces; p++) memcpy_fn(spare + p * stride, local + p * stride, (size_t)piece);
        break;
      default: break;
    }
    if (rc != 0) die("%s returned %d", kind_names[k], rc);
  }
  if (k == K_PUTS || k == K_PUT_CONTIG) ARMCI_Fence(1);
  return now() - t0;
}

/* Compares got[from, to) with want; say names what. */
static void expect(const char *what, long piece, const char *got, const char *want, long from, long to) {
  for (long i = from; i < to; i++)
    if (got[i] != want[i])
      die("%s (piece %ld B): byte %ld is 0x%02x, expected 0x%02x", what, piece, i, (unsigned char)got[i],
          (unsigned char)want[i]);
}

static void expect_byte(const char *what, long piece, const char *got, char want, long from, long to) {
  for (long i = from; i < to; i++)
    if (got[i] != want)
      die("%s (piece %ld B): byte %ld is 0x%02x, expected 0x%02x", what, piece, i, (unsigned char)got[i],
          (unsigned char)want);
}

/* One untimed transfer of kind k with data the timed ones never move, checked
 * byte by byte, gaps included; afterwards rank 1's memory holds the image
 * again. `local` holds the image (every timed transfer moves image bytes to
 * where they already are); scratch and back are spare local buffers. */
static void check(enum kind k, char *local, char *remote, char *scratch, char *back, const char *image, long piece,
                  long pieces, long span) {
  const long stride = piece + SOURCE_GAP, total = piece * pieces;
  const long extent = (k == K_GETS || k == K_PUTS) ? (pieces - 1) * stride + piece : total;
  const long check_len = extent + SOURCE_GAP < span ? extent + SOURCE_GAP : span;
  (void)local;
  if (k == K_MEMCPY_STRIDED)
    return; /* the bound, not the library's */
  if (k == K_GETS || k == K_GET_CONTIG) {
    memset(scratch, FILL, (size_t)check_len);
    run(k, scratch, remote, piece, pieces, 1);
    if (k == K_GET_CONTIG) {
      expect("get_contig", piece, scratch, image, 0, total);
      expect_byte("get_contig wrote past its end", piece, scratch, (char)FILL, total, check_len);
    } else {
      for (long p = 0; p < pieces; p++) {
        expect("strided get", piece, scratch, image, p * stride, p * stride + piece);
        long gap_end = p * stride + stride < check_len ? p * stride + stride : check_len;
        expect_byte("strided get wrote into a gap", piece, scratch, (char)FILL, p * stride + piece, gap_end);
      }
    }
    return;
  }
  /* puts: new bytes (the image inverted) at the pieces, then read back */
  for (long i = 0; i < check_len; i++) scratch[i] = (char)~image[i];
  run(k, scratch, remote, piece, pieces, 1); /* ends with ARMCI_Fence */
  memset(back, FILL, (size_t)check_len);
  if (ARMCI_Get(remote, back, (int)check_len, 1) != 0) die("read-back get failed");
  if (k == K_PUT_CONTIG) {
    expect("put_contig", piece, back, scratch, 0, total);
    expect("put_contig wrote past its end", piece, back, image, total, check_len);
  } else {
    for (long p = 0; p < pieces; p++) {
      expect("strided put", piece, back, scratch, p * stride, p * stride + piece);
      long gap_end = p * stride + stride < check_len ? p * stride + stride : check_len;
      expect("strided put wrote into a gap", piece, back, image, p * stride + piece, gap_end);
    }
  }
  restore_target(remote, image, check_len);
}

/* ------------------------------------------------------------ settings */
static const struct bench_col columns[] = {
    CONFIG_COLUMNS,
    {"piece", "piece", COL_LONG, 8, 0, 0},
    {"pieces", "pieces", COL_LONG, 8, 0, 0},
    {"time_us", "time_us_median", COL_DOUBLE, 12, 2, 3},
    {"MB/s", "bw_MBps_median", COL_DOUBLE, 12, 1, 1},
    BUSY_COLUMNS,
};
static const struct bench_table table = BENCH_TABLE(columns);

static const char about[] =
    "Bandwidth of a 1-level strided ARMCI_GetS / ARMCI_PutS of TOTAL bytes from rank 0 to\n"
    "rank 1 by piece size, next to the contiguous transfer of the same bytes and a strided\n"
    "memcpy of the same pattern between two local buffers (memcpy_strided: the bound).";

/* The transfers of one piece size: measure_kinds's run. */
struct layout {
  char *local, *remote;
  long piece, pieces;
};

static double run_n(void *ctx, int k, long n) {
  const struct layout *L = ctx;
  return run((enum kind)k, L->local, L->remote, L->piece, L->pieces, n);
}

int main(int argc, char **argv) {
  int reps = 7;
  double sample_s = 0.001;
  long total = 1L << 20;
  const char *csv_path = NULL;
  long piece_sizes[MAX_SIZES];
  int nsizes = 0;
  struct phase_ctl pc = {0};
  pc.limit_s = 120;
  const struct bench_opt opts[] = {
      BENCH_OPT_REPS('r', &reps, NULL),
      {'t', "total", OPT_BYTES, &total, 8, 1L << 30, "BYTES", "bytes per transfer", NULL, NULL, 0, NULL},
      {'p', "sizes", OPT_LIST, piece_sizes, 1, 1L << 30, "LIST",
       "piece sizes, comma list with K/M suffixes (default 8,32,...,64K up to TOTAL)", NULL, &nsizes,
       MAX_SIZES, NULL},
      BENCH_OPT_SAMPLE_MS('s', &sample_s, NULL),
      BUSY_TARGET_OPTS(&pc),
      BENCH_OPT_CSV('c', &csv_path),
      BENCH_OPT_END};
  bench_begin(&argc, &argv, "strided_bench", opts, about, 2);
  for (int s = 0; s < nsizes; s++)
    if (piece_sizes[s] > total) die("-p: piece size %ld is larger than TOTAL (%ld)", piece_sizes[s], total);
  if (nsizes == 0)
    for (long piece = 8; piece <= 65536 && piece <= total; piece *= 4) piece_sizes[nsizes++] = piece;

  /* Room for the widest layout (the smallest piece with its gap) plus a gap. */
  long min_piece = piece_sizes[0];
  for (int s = 1; s < nsizes; s++)
    if (piece_sizes[s] < min_piece) min_piece = piece_sizes[s];
  const long span = (total / min_piece) * (min_piece + SOURCE_GAP) + SOURCE_GAP + 4096;
  void **bases = bench_malloc_all((size_t)span, 0);
  phase_ctl_init(&pc);
  char *local = bench_malloc_local((size_t)span);
  char *scratch = bench_malloc_local((size_t)span);
  char *back = bench_malloc_local((size_t)span);
  char *image = bench_malloc_local((size_t)span); /* what rank 1's segment holds */
  char *spare_base = bench_malloc_local((size_t)span + 4096);
  spare = spare_base + (((uintptr_t)bases[1] - (uintptr_t)spare_base) & 4095);
  for (long i = 0; i < span; i++) image[i] = (char)(i * 7 + 3);
  memcpy(local, image, (size_t)span);
  target_holds(bases, image, (size_t)span);

  const double baseline = busy_baseline(&pc);
  const char *target = pc.busy ? "busy" : "idle";
  const char *protocol = strided_protocol(), *path = transfer_path();
  struct bench_run run_clock;
  bench_report_open(&run_clock, csv_path, &table, reps,
                    "path=%s protocol=%s target=%s total=%ld reps=%d sample=%.1fms np=%d binding=%s (medians; MB/s = "
                    "1e6 B/s)",
                    path, protocol, target, total, reps, sample_s * 1e3, armci_msg_nproc(), bench_binding());
  print_busy_header(&pc, baseline, &table);

  /* One phase per piece size: its kinds measured in turn, then checked. */
  for (int s = 0; s < nsizes; s++) {
    struct layout L = {local, bases[1], piece_sizes[s], total / piece_sizes[s]};
    const long moved = L.piece * L.pieces;
    double results[NKINDS];
    phase_begin(&pc);
    if (me == 0) {
      measure_kinds(NKINDS, reps, sample_s, run_n, &L, results);
      for (int k = 0; k < NKINDS; k++)
        check((enum kind)k, local, bases[1], scratch, back, image, L.piece, L.pieces, span);
    }
    phase_end(&pc);
    if (me == 0) {
      const struct busy_cells bc = busy_cells(&pc, baseline);
      for (int k = 0; k < NKINDS; k++)
        bench_row(&table, kind_names[k], path, protocol, target, L.piece, L.pieces, results[k] * 1e6,
                  (double)moved / results[k] / 1e6, bc.text, bc.share, bc.baseline);
      fflush(stdout);
    }
  }
  if (me == 0) {
    bench_run_print(&run_clock, NULL);
    print_busy_note(&pc, "all kinds of one piece size");
    printf("# all transfers checked (strided: pieces and gaps)\n");
    bench_csv_finish();
  }
  ARMCI_Barrier();
  ARMCI_Free_local(spare_base);
  ARMCI_Free_local(image);
  ARMCI_Free_local(back);
  ARMCI_Free_local(scratch);
  ARMCI_Free_local(local);
  return phases_end(&pc, bases);
}
