/*
 * strided_bench: bandwidth of a 2-D strided ARMCI_GetS / ARMCI_PutS from
 * rank 0 to rank 1 as the contiguous piece grows from 8 B to 64 KiB with the
 * total fixed (1 MiB by default), next to the contiguous transfer of the same
 * total as the bound. Medians of -r samples; the four kinds of one piece size
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
 *   ARMCI-MPI: mpicc -O2 benchmarks/strided_bench.c -larmci-openmpi
 * Options: -r REPS (default 7), -t TOTAL bytes (default 1M), -p LIST piece
 * sizes (comma list, K/M suffixes; default 8,32,128,...,32K), -b busy target,
 * -s MS shortest sample (default 1), -T SECONDS most a busy target computes
 * in one phase (default 120), -c FILE (CSV).
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "strided_bench"
#include "bench_common.h"

#define MAX_REPS 51
#define MAX_SIZES 32
#define SOURCE_GAP 8 /* the pieces are strided on both sides */
#define FILL 0xA5    /* what a check's destination holds before the transfer */

enum kind { K_GETS, K_PUTS, K_GET_CONTIG, K_PUT_CONTIG, NKINDS };
static const char *kind_names[NKINDS] = {"gets", "puts", "get_contig", "put_contig"};

#include "bench_busy.h"

/* ------------------------------------------------------------ transfers */
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
  /* restore rank 1's bytes */
  if (ARMCI_Put((void *)image, remote, (int)check_len, 1) != 0) die("restore put failed");
  ARMCI_Fence(1);
}

/* ------------------------------------------------------------ settings */
static long parse_size(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || errno) return -1;
  if (*end == 'k' || *end == 'K') v <<= 10, end++;
  else if (*end == 'm' || *end == 'M') v <<= 20, end++;
  return *end ? -1 : v;
}

static const char *protocol_name(void) {
#ifdef ARMCI_MPI
  return "armci-mpi";
#else
  const char *p = getenv("ARMCI_STRIDED_PROTOCOL");
  return (p && *p) ? p : "auto";
#endif
}

/* How rank 0 reaches rank 1: shm (same node, shared memory), network, mpi. */
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
  int np = armci_msg_nproc();
  int reps = 7;
  double sample_s = 0.001;
  long total = 1L << 20;
  const char *csv_path = NULL, *piece_list = NULL;
  struct phase_ctl pc = {0};
  pc.limit_s = 120;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-r") && a + 1 < argc) reps = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-t") && a + 1 < argc) total = parse_size(argv[++a]);
    else if (!strcmp(argv[a], "-c") && a + 1 < argc) csv_path = argv[++a];
    else if (!strcmp(argv[a], "-p") && a + 1 < argc) piece_list = argv[++a];
    else if (!strcmp(argv[a], "-T") && a + 1 < argc) pc.limit_s = atof(argv[++a]);
    else if (!strcmp(argv[a], "-s") && a + 1 < argc) sample_s = atof(argv[++a]) * 1e-3;
    else if (!strcmp(argv[a], "-b")) pc.busy = 1;
    else die("unknown option %s (use -r REPS, -t TOTAL, -p LIST, -s MS, -b, -T SECONDS, -c FILE)", argv[a]);
  }
  if (np < 2) die("run with at least 2 processes");
  if (reps < 1 || reps > MAX_REPS) die("-r must be 1..%d", MAX_REPS);
  if (total < 8 || total > (1L << 30)) die("-t must be 8 B..1 GiB");
  if (!(pc.limit_s > 0)) die("-T must be positive");
  if (!(sample_s > 0)) die("-s must be positive");

  long piece_sizes[MAX_SIZES];
  int nsizes = 0;
  if (piece_list) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", piece_list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      long v = parse_size(tok);
      if (v < 1 || v > total) die("-p: piece size '%s' is not 1..TOTAL (%ld)", tok, total);
      if (nsizes == MAX_SIZES) die("-p: more than %d sizes", MAX_SIZES);
      piece_sizes[nsizes++] = v;
    }
  } else {
    for (long piece = 8; piece <= 65536 && piece <= total; piece *= 4) piece_sizes[nsizes++] = piece;
  }
  if (nsizes == 0) die("no piece sizes");

  calibrate_compute();

  /* Room for the widest layout (the smallest piece with its gap) plus a gap. */
  long min_piece = piece_sizes[0];
  for (int s = 1; s < nsizes; s++)
    if (piece_sizes[s] < min_piece) min_piece = piece_sizes[s];
  const long span = (total / min_piece) * (min_piece + SOURCE_GAP) + SOURCE_GAP + 4096;
  void **bases = malloc(sizeof(void *) * (size_t)np);
  pc.ctl = malloc(sizeof(char *) * (size_t)np);
  ARMCI_Malloc(bases, span);
  ARMCI_Malloc((void **)pc.ctl, CTL_BYTES);
  char *local = ARMCI_Malloc_local(span);
  char *scratch = ARMCI_Malloc_local(span);
  char *back = ARMCI_Malloc_local(span);
  pc.stop_src = ARMCI_Malloc_local(sizeof(long));
  char *image = ARMCI_Malloc_local(span); /* what rank 1's segment holds */
  if (!bases || !pc.ctl || !local || !scratch || !back || !pc.stop_src || !image) die("out of memory");
  for (long i = 0; i < span; i++) image[i] = (char)(i * 7 + 3);
  memcpy(local, image, (size_t)span);
  access_begin(pc.ctl[me]);
  memset(pc.ctl[me], 0, CTL_BYTES);
  access_end(pc.ctl[me]);
  if (me == 1) {
    access_begin(bases[1]);
    memcpy(bases[1], image, (size_t)span);
    access_end(bases[1]);
  }
  ARMCI_Barrier();

  /* Reference for tgt_cpu: a phase in which rank 0 spins 50 ms without any
   * transfer. Below 1.00 here means other load on the machine, not the library. */
  double baseline = -1;
  if (pc.busy) {
    phase_begin(&pc);
    if (me == 0)
      for (double t0 = now(); now() - t0 < 0.05;) {
      }
    phase_end(&pc);
    baseline = pc.tgt_share;
  }

  const char *target = pc.busy ? "busy" : "idle";
  const char *protocol = protocol_name(), *path = path_name();
  FILE *csv = stdout;
  const double t_start = now(), cpu_start = cpu_now(), load_before = load_average();
  if (me == 0) {
    if (csv_path && !(csv = fopen(csv_path, "w"))) die("cannot write %s", csv_path);
    printf("# strided_bench impl=%s path=%s protocol=%s target=%s total=%ld reps=%d sample=%.1fms np=%d "
           "(medians; MB/s = 1e6 B/s)\n",
           IMPL_NAME, path, protocol, target, total, reps, sample_s * 1e3, np);
    if (pc.busy)
      printf("# busy target: compute blocks of %ld iterations (%.1f us on an idle core); tgt_cpu with no "
             "transfers (rank 0 spinning 50 ms): %.2f\n",
             block_iters, block_seconds * 1e6, baseline);
    printf("%-11s %-7s %-9s %-6s %8s %8s %12s %12s %8s\n", "op", "path", "protocol", "target", "piece", "pieces",
           "time_us", "MB/s", "tgt_cpu");
  }
  double results[NKINDS][MAX_SIZES], shares[MAX_SIZES];

  /* One phase per piece size. Within it the four kinds are calibrated, then
   * each of the -r passes takes one sample of every kind, so a burst of other
   * load spoils one sample of each kind (dropped by the median) rather than
   * every sample of one, and a kind and its contiguous bound are measured
   * under the same conditions. */
  for (int s = 0; s < nsizes; s++) {
    const long piece = piece_sizes[s], pieces = total / piece, moved = piece * pieces;
    phase_begin(&pc);
    if (me == 0) {
      long iters[NKINDS];
      double samples[NKINDS][MAX_REPS];
      for (int k = 0; k < NKINDS; k++) {
        iters[k] = 1;
        while (run((enum kind)k, local, bases[1], piece, pieces, iters[k]) < sample_s && iters[k] < (1L << 20))
          iters[k] *= 2;
      }
      for (int r = 0; r < reps; r++)
        for (int k = 0; k < NKINDS; k++)
          samples[k][r] = run((enum kind)k, local, bases[1], piece, pieces, iters[k]) / (double)iters[k];
      for (int k = 0; k < NKINDS; k++) {
        check((enum kind)k, local, bases[1], scratch, back, image, piece, pieces, span);
        results[k][s] = median(samples[k], reps);
      }
    }
    phase_end(&pc);
    if (me == 0) {
      shares[s] = pc.busy ? pc.tgt_share : -1;
      char share_txt[32] = "-";
      if (pc.busy) snprintf(share_txt, sizeof share_txt, "%.2f%s", pc.tgt_share, pc.tgt_timed_out ? "!" : "");
      for (int k = 0; k < NKINDS; k++)
        printf("%-11s %-7s %-9s %-6s %8ld %8ld %12.2f %12.1f %8s\n", kind_names[k], path, protocol, target, piece,
               pieces, results[k][s] * 1e6, (double)moved / results[k][s] / 1e6, share_txt);
      fflush(stdout);
    }
  }
  if (me == 0) {
    const double wall = now() - t_start, cpu = cpu_now() - cpu_start;
    printf("# run: %.1f s; rank 0 cpu/wall %.2f; load average %.2f before, %.2f after\n", wall,
           wall > 0 ? cpu / wall : 0.0, load_before, load_average());
    if (pc.busy)
      printf("# tgt_cpu: share of the phase (all four kinds of one piece size) rank 1 spent in compute blocks, "
             "at their idle speed (1.00: nothing taken from it)%s\n",
             pc.any_timed_out ? "; '!': the target gave up waiting for the stop word (-T)" : "");
    printf("# all transfers checked (strided: pieces and gaps)\n");
    if (csv == stdout) printf("# CSV\n");
    fprintf(csv, "impl,path,protocol,target,op,piece,pieces,time_us_median,bw_MBps_median,tgt_cpu_share,tgt_cpu_baseline\n");
    for (int s = 0; s < nsizes; s++)
      for (int k = 0; k < NKINDS; k++) {
        const long pieces = total / piece_sizes[s];
        fprintf(csv, "%s,%s,%s,%s,%s,%ld,%ld,%.3f,%.1f,", IMPL_NAME, path, protocol, target, kind_names[k],
                piece_sizes[s], pieces, results[k][s] * 1e6,
                (double)(piece_sizes[s] * pieces) / results[k][s] / 1e6);
        if (shares[s] >= 0) fprintf(csv, "%.3f,%.3f", shares[s], baseline);
        else fprintf(csv, ",");
        fprintf(csv, "\n");
      }
    if (csv != stdout) fclose(csv);
  }
  ARMCI_Barrier();
  ARMCI_Free_local(image);
  ARMCI_Free_local(pc.stop_src);
  ARMCI_Free_local(back);
  ARMCI_Free_local(scratch);
  ARMCI_Free_local(local);
  ARMCI_Free(pc.ctl[me]);
  ARMCI_Free(bases[me]);
  free(pc.ctl);
  free(bases);
  bench_end();
  return pc.any_timed_out ? 4 : 0;
}
