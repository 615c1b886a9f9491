/*
 * gups: HPCC RandomAccess in the style of its one-sided variants. A table of
 * 64-bit words is spread over all ranks (2^L words each); every rank applies
 * U updates at pseudo-random global indices. Variants:
 *
 *   lock   get-modify-put under an ARMCI mutex (64 mutexes per rank, chosen by
 *          the word's offset): T[i] ^= r, HPCC's own update;
 *   acc    ARMCI_NbAcc(ARMCI_ACC_LNG, scale 1) of r, at most 1024 in flight per
 *          rank (ARMCI_WaitAll every 1024): T[i] += r. An Acc adds, it cannot
 *          xor, so this variant (and the next) use the addition rule;
 *   fadd   ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG) of d = r mod 2^30 (the Rmw
 *          value is an int): T[i] += d, one update in flight;
 *   racy   get-modify-put with no lock (xor): not a correct variant; it shows
 *          that the verification catches lost updates.
 *
 * Verification (untimed, as HPCC): every rank replays its stream with the
 * inverse update (xor again / add -r / add -d) through the same variant, then
 * every word must hold its initial value (its global index); the number of
 * words that do not is the error count (exact variants: must be 0).
 * Reported: GUPS = all updates / time of the forward pass / 1e9, median over
 * repetitions. Builds against libarmci or ARMCI-MPI like contig_bench.
 *
 * Options: -l L (log2 words per rank, default 20), -u U (updates per rank,
 * default 2^17), -r REPS (default 3), -v VARIANTS (comma list, default
 * lock,acc,fadd), -c FILE (CSV to FILE instead of stdout).
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#define POLY 0x0000000000000007ULL
#define IN_FLIGHT 1024
#define NMUTEX 64

static int np;
static long L_words; /* words per rank */
static long **table;
static long **errors_at; /* one long per rank, gathered at rank 0 */

/* HPCC's generator: shift left, xor POLY when the top bit falls out. Each rank
 * starts from its own scrambled seed. */
static uint64_t next_random(uint64_t r) { return (r << 1) ^ ((int64_t)r < 0 ? POLY : 0); }
static uint64_t start_random(int rank) {
  uint64_t z = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) | 1;
}

enum variant { V_LOCK, V_ACC, V_FADD, V_RACY, NVARIANTS };
static const char *const variant_names[NVARIANTS + 1] = {"lock", "acc", "fadd", "racy", NULL};
static const char *variant_rules[NVARIANTS] = {"xor", "add", "add(int)", "xor"};

/* One pass over this rank's stream; inverse = 1 undoes a forward pass. */
static void pass(enum variant v, long updates, int inverse) {
  uint64_t r = start_random(me);
  const uint64_t global = (uint64_t)L_words * (uint64_t)np;
  static long acc_src[IN_FLIGHT];
  long scale = inverse ? -1 : 1;
  for (long u = 0; u < updates; u++) {
    r = next_random(r);
    uint64_t g = r % global;
    int owner = (int)(g / (uint64_t)L_words);
    long off = (long)(g % (uint64_t)L_words);
    long *dst = table[owner] + off;
    switch (v) {
    case V_LOCK:
    case V_RACY: {
      long x;
      if (v == V_LOCK) ARMCI_Lock((int)(off % NMUTEX), owner);
      ARMCI_Get(dst, &x, sizeof x, owner);
      x ^= (long)r;
      ARMCI_Put(&x, dst, sizeof x, owner);
      if (v == V_LOCK) ARMCI_Unlock((int)(off % NMUTEX), owner);
      break;
    }
    case V_ACC: {
      int slot = (int)(u % IN_FLIGHT);
      if (slot == 0 && u > 0) ARMCI_WaitAll(); /* the ring of sources is reused */
      acc_src[slot] = (long)r;
      ARMCI_NbAcc(ARMCI_ACC_LNG, &scale, &acc_src[slot], dst, sizeof(long), owner, NULL);
      break;
    }
    case V_FADD: {
      int d = (int)(r & 0x3FFFFFFF);
      long old;
      ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, dst, inverse ? -d : d, owner);
      break;
    }
    default: break;
    }
  }
  ARMCI_WaitAll();
}

/* Every word back at its initial value, its global index. */
static void reset_table(void) {
  access_begin(table[me]);
  for (long i = 0; i < L_words; i++) table[me][i] = (long)me * L_words + i;
  access_end(table[me]);
}

static long count_errors(void) {
  long bad = 0, base = (long)me * L_words;
  access_begin(table[me]);
  for (long i = 0; i < L_words; i++) bad += table[me][i] != base + i;
  access_end(table[me]);
  ARMCI_PutValueLong(bad, errors_at[0] + me, 0);
  ARMCI_Barrier();
  long total = 0;
  if (me == 0) {
    access_begin(errors_at[0]);
    for (int r = 0; r < np; r++) total += errors_at[0][r];
    access_end(errors_at[0]);
  }
  return total;
}

static const struct bench_col columns[] = {
    {NULL, "mode", COL_STR, 0, 0, 0},
    {"variant", "variant", COL_STR, -8, 0, 0},
    {"update", "update", COL_STR, -9, 0, 0},
    {NULL, "words_per_rank", COL_LONG, 0, 0, 0},
    {NULL, "updates_per_rank", COL_LONG, 0, 0, 0},
    {"time_s", "time_s_median", COL_DOUBLE, 12, 4, 6},
    {"GUPS", "gups", COL_DOUBLE, 14, 6, 6},
    {"us/update", NULL, COL_DOUBLE, 10, 3, 0},
    {"errors", "errors", COL_LONG, 8, 0, 0},
};
static const struct bench_table results_table = BENCH_TABLE(columns);

static const char about[] =
    "HPCC RandomAccess over ARMCI: every rank applies updates at random indices of a table\n"
    "spread over all ranks; the inverse pass must restore it (errors: words that differ).";

int main(int argc, char **argv) {
  int log_words = 20, reps = 3, chosen = 1 << V_LOCK | 1 << V_ACC | 1 << V_FADD;
  long updates = 1L << 17;
  const char *csv_path = NULL;
  const struct bench_opt opts[] = {
      {'l', "log-words", OPT_INT, &log_words, 4, 30, "L", "2^L table words per rank", NULL, NULL, 0, NULL},
      {'u', "updates", OPT_LONG, &updates, 1, 1L << 40, "N", "updates per rank", NULL, NULL, 0, NULL},
      BENCH_OPT_REPS('r', &reps, NULL),
      {'v', "ops", OPT_SET, &chosen, 0, 0, "LIST", "variants: lock,acc,fadd,racy", variant_names, NULL, 0, NULL},
      BENCH_OPT_CSV('c', &csv_path),
      BENCH_OPT_END};
  bench_begin(&argc, &argv, "gups", opts, about, 1);
  np = armci_msg_nproc();

  L_words = 1L << log_words;
  table = (long **)bench_malloc_all((size_t)L_words * sizeof(long), 0);
  errors_at = (long **)bench_malloc_all((size_t)np * sizeof(long), 0);
  reset_table();
  ARMCI_Create_mutexes(NMUTEX);
  ARMCI_Barrier();

  const char *mode = atomics_mode();

  struct row {
    int v;
    double t, gups;
    long errors;
  } rows[NVARIANTS];
  int nrows = 0;
  for (int v = 0; v < NVARIANTS; v++) {
    if (!(chosen & (1 << v))) continue;
    double times[BENCH_MAX_REPS];
    long errors = 0;
    for (int r = 0; r < reps; r++) {
      ARMCI_Barrier();
      double t0 = now();
      pass((enum variant)v, updates, 0);
      ARMCI_Barrier();
      times[r] = now() - t0;
      pass((enum variant)v, updates, 1);
      ARMCI_Barrier();
      long e = count_errors();
      errors += e;
      /* A wrong table would spoil the next rep or variant: restore it (the
       * racy variant's is wrong by design). */
      if (e != 0 || v == V_RACY) {
        reset_table();
        ARMCI_Barrier();
      }
    }
    const double t = bench_median(times, reps);
    rows[nrows].v = v;
    rows[nrows].t = t;
    rows[nrows].gups = (double)updates * np / t / 1e9;
    rows[nrows].errors = errors;
    nrows++;
  }

  int exit_code = 0;
  bench_csv_open(csv_path, &results_table, reps);
  if (me == 0) {
    printf("# gups impl=%s mode=%s np=%d binding=%s words/rank=2^%d updates/rank=%ld reps=%d\n", IMPL_NAME, mode,
           np, bench_binding(), log_words, updates, reps);
    bench_table_header(&results_table);
    for (int i = 0; i < nrows; i++) {
      bench_row(&results_table, mode, variant_names[rows[i].v], variant_rules[rows[i].v], L_words, updates, rows[i].t,
                rows[i].gups, rows[i].t / (double)updates * 1e6, rows[i].errors);
      if (rows[i].errors != 0 && rows[i].v != V_RACY) exit_code = 3;
    }
    printf("(errors: words not back at their initial value after the inverse pass, summed over reps;"
           " us/update: per rank)\n");
    bench_csv_finish();
    if (exit_code) fprintf(stderr, "gups: an exact variant had errors\n");
  }
  ARMCI_Barrier();
  ARMCI_Destroy_mutexes();
  bench_free_all((void **)errors_at);
  bench_free_all((void **)table);
  bench_end();
  return exit_code;
}
