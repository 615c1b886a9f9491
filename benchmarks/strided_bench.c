/*
 * strided_bench: bandwidth of a 2-D strided ARMCI_GetS / ARMCI_PutS from
 * rank 0 to rank 1 as the contiguous piece grows from 8 B to 64 KiB with the
 * total fixed (1 MiB by default), next to the contiguous transfer of the same
 * total as the bound. The target is idle in a barrier. Medians of -r samples.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/strided_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/strided_bench.c -larmci-openmpi
 * Options: -r REPS (default 7), -t TOTAL bytes (default 1 MiB), -c FILE (CSV).
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "strided_bench"
#include "bench_common.h"

#define MAX_REPS 51
#define SOURCE_GAP 8 /* the pieces are strided on both sides */

enum kind { K_GETS, K_PUTS, K_GET_CONTIG, K_PUT_CONTIG, NKINDS };
static const char *kind_names[NKINDS] = {"gets", "puts", "get_contig", "put_contig"};

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
      default: break;
    }
    if (rc != 0) die("%s returned %d", kind_names[k], rc);
  }
  if (k == K_PUTS || k == K_PUT_CONTIG) ARMCI_Fence(1);
  return now() - t0;
}

/* Checks one sample's data: every piece of the strided get at its place. */
static void check_gets(const char *local, const char *remote_image, long piece, long pieces) {
  long stride = piece + SOURCE_GAP;
  for (long p = 0; p < pieces; p++)
    if (memcmp(local + p * stride, remote_image + p * stride, (size_t)piece) != 0)
      die("strided get: piece %ld of %ld bytes differs", p, piece);
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  int np = armci_msg_nproc();
  int reps = 7;
  long total = 1L << 20;
  const char *csv_path = NULL;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-r") && a + 1 < argc) reps = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-t") && a + 1 < argc) total = atol(argv[++a]);
    else if (!strcmp(argv[a], "-c") && a + 1 < argc) csv_path = argv[++a];
    else die("unknown option %s (use -r REPS, -t TOTAL, -c FILE)", argv[a]);
  }
  if (np < 2) die("run with at least 2 processes");
  if (reps < 1 || reps > MAX_REPS) die("-r must be 1..%d", MAX_REPS);

  /* Room for the widest layout: pieces of 8 B with an 8 B gap double the total. */
  const long span = 2 * total + 65536;
  void **bases = malloc(sizeof(void *) * (size_t)np);
  ARMCI_Malloc(bases, span);
  char *local = ARMCI_Malloc_local(span);
  char *image = malloc((size_t)span); /* what rank 1's segment holds */
  for (long i = 0; i < span; i++) image[i] = (char)(i * 7 + 3);
  if (me == 1) {
    access_begin(bases[1]);
    memcpy(bases[1], image, (size_t)span);
    access_end(bases[1]);
  }
  ARMCI_Barrier();

  FILE *csv = stdout;
  if (me == 0) {
    if (csv_path && !(csv = fopen(csv_path, "w"))) die("cannot write %s", csv_path);
    printf("# strided_bench impl=%s total=%ld reps=%d (medians; MB/s = 1e6 B/s)\n", IMPL_NAME, total, reps);
    printf("%-11s %8s %8s %12s %12s\n", "op", "piece", "pieces", "time_us", "MB/s");
  }
  double results[NKINDS][32];
  long piece_sizes[32];
  int nsizes = 0;
  for (long piece = 8; piece <= 65536 && piece <= total; piece *= 4) piece_sizes[nsizes++] = piece;

  for (int s = 0; s < nsizes; s++) {
    const long piece = piece_sizes[s], pieces = total / piece;
    for (int k = 0; k < NKINDS; k++) {
      double samples[MAX_REPS];
      if (me == 0) {
        long iters = 1;
        while (run((enum kind)k, local, bases[1], piece, pieces, iters) < 0.005 && iters < (1L << 20)) iters *= 2;
        for (int r = 0; r < reps; r++) samples[r] = run((enum kind)k, local, bases[1], piece, pieces, iters) / (double)iters;
        if (k == K_GETS) {
          memset(local, 0, (size_t)span);
          run(K_GETS, local, bases[1], piece, pieces, 1);
          check_gets(local, image, piece, pieces);
        }
        results[k][s] = median(samples, reps);
        printf("%-11s %8ld %8ld %12.2f %12.1f\n", kind_names[k], piece, pieces, results[k][s] * 1e6,
               (double)total / results[k][s] / 1e6);
        fflush(stdout);
      }
      ARMCI_Barrier();
    }
  }
  if (me == 0) {
    if (csv == stdout) printf("# CSV\n");
    fprintf(csv, "impl,op,piece,pieces,time_us_median,bw_MBps_median\n");
    for (int s = 0; s < nsizes; s++)
      for (int k = 0; k < NKINDS; k++)
        fprintf(csv, "%s,%s,%ld,%ld,%.3f,%.1f\n", IMPL_NAME, kind_names[k], piece_sizes[s], total / piece_sizes[s],
                results[k][s] * 1e6, (double)total / results[k][s] / 1e6);
    if (csv != stdout) fclose(csv);
  }
  ARMCI_Barrier();
  ARMCI_Free_local(local);
  ARMCI_Free(bases[me]);
  free(bases);
  free(image);
  bench_end();
  return 0;
}
