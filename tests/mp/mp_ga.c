/* mp_ga: Debian's Global Arrays (libga-openmpi.a, compiled against the
 * ARMCI-MPI 0.3.1 headers) running on this library. Every result is checked
 * against values computed locally:
 *  - arrays of every type created, duplicated, filled, destroyed;
 *  - NGA_Put / NGA_Get / NGA_Acc of patches that span several owners;
 *  - GA_Sync, GA_Dgop, GA_Igop, GA_Brdcst;
 *  - NGA_Read_inc from every rank on one counter (each value once);
 *  - GA_Lock / GA_Unlock around a read-modify-write of a shared element;
 *  - NGA_NbGet / NGA_NbWait;
 *  - GA_Dgemm of small matrices;
 *  - processor groups: GA_Pgroup_create, an array on a group, group dgop
 *    and sync.
 * It first checks (dladdr) that ARMCI_Init comes from this library's
 * libarmci.so, not from ARMCI-MPI's libarmci.a. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ga/ga_test.h"

int ARMCI_Init(void);

static void check_library(void) {
  Dl_info info;
  CHECK(dladdr((void *)&ARMCI_Init, &info) != 0 && info.dli_fname != NULL, "dladdr(ARMCI_Init) failed");
  CHECK(strstr(info.dli_fname, "libarmci.so") != NULL,
        "ARMCI_Init comes from %s, not from this library's libarmci.so", info.dli_fname);
  CHECK(dlsym(RTLD_DEFAULT, "armci_msg_group_igop") != NULL, "armci_msg_group_igop not found");
}

static double value_at(int i, int j) { return 1000.0 * i + j; }

/* A 2-d double array of n x m: put the whole patch [lo, hi] from rank 0,
 * get it back everywhere, acc from every rank. */
static void put_get_acc(void) {
  int dims[2] = {37, 23}, chunk[2] = {-1, -1};
  int g = NGA_Create(C_DBL, 2, dims, "doubles", chunk);
  CHECK(g != 0, "NGA_Create failed");
  GA_Zero(g);
  int lo[2] = {3, 2}, hi[2] = {30, 20}, ld[1];
  const int rows = hi[0] - lo[0] + 1, cols = hi[1] - lo[1] + 1;
  ld[0] = cols;
  double *buf = malloc(sizeof(double) * rows * cols);
  if (ga_me == 0) {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) buf[i * cols + j] = value_at(lo[0] + i, lo[1] + j);
    NGA_Put(g, lo, hi, buf, ld);
  }
  GA_Sync();
  memset(buf, 0, sizeof(double) * rows * cols);
  NGA_Get(g, lo, hi, buf, ld);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      CHECK(buf[i * cols + j] == value_at(lo[0] + i, lo[1] + j), "get (%d,%d): %g", i, j, buf[i * cols + j]);
  GA_Sync();
  /* Every rank adds 0.5 * (rank + 1) to the patch. */
  double alpha = 0.5;
  for (int k = 0; k < rows * cols; ++k) buf[k] = ga_me + 1;
  NGA_Acc(g, lo, hi, buf, ld, &alpha);
  GA_Sync();
  NGA_Get(g, lo, hi, buf, ld);
  const double added = 0.5 * ga_np * (ga_np + 1) / 2.0;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      CHECK(buf[i * cols + j] == value_at(lo[0] + i, lo[1] + j) + added, "acc (%d,%d): %g", i, j, buf[i * cols + j]);
  /* Outside the patch nothing changed. */
  int olo[2] = {0, 0}, ohi[2] = {0, 22}, old[1] = {23};
  double row[23];
  NGA_Get(g, olo, ohi, row, old);
  for (int j = 0; j < 23; ++j) CHECK(row[j] == 0.0, "row 0 col %d: %g", j, row[j]);

  /* Duplicate, and nonblocking get of the copy. */
  int g2 = GA_Duplicate(g, "copy");
  GA_Copy(g, g2);
  GA_Sync();
  ga_nbhdl_t handle;
  memset(buf, 0, sizeof(double) * rows * cols);
  NGA_NbGet(g2, lo, hi, buf, ld, &handle);
  NGA_NbWait(&handle);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      CHECK(buf[i * cols + j] == value_at(lo[0] + i, lo[1] + j) + added, "nbget (%d,%d)", i, j);
  GA_Destroy(g2);
  GA_Destroy(g);
  free(buf);
}

static void every_type(void) {
  const int types[] = {C_INT, C_LONG, C_LONGLONG, C_FLOAT, C_DBL, C_SCPL, C_DCPL};
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    int dims[1] = {101}, chunk[1] = {-1};
    int g = NGA_Create(types[t], 1, dims, "typed", chunk);
    CHECK(g != 0, "NGA_Create type %d", types[t]);
    double fill[2] = {0, 0};
    union { int i; long l; long long ll; float f; double d; float c[2]; double z[2]; } v;
    memset(&v, 0, sizeof v);
    switch (types[t]) {
      case C_INT: v.i = 7; break;
      case C_LONG: v.l = 7; break;
      case C_LONGLONG: v.ll = 7; break;
      case C_FLOAT: v.f = 7; break;
      case C_DBL: v.d = 7; break;
      case C_SCPL: v.c[0] = 7, v.c[1] = -1; break;
      case C_DCPL: v.z[0] = 7, v.z[1] = -1; break;
    }
    (void)fill;
    GA_Fill(g, &v);
    int g2 = GA_Duplicate(g, "typed copy");
    GA_Copy(g, g2);
    GA_Sync();
    int lo[1] = {0}, hi[1] = {100}, ld[1] = {1};
    char *buf = calloc(101, 16);
    NGA_Get(g2, lo, hi, buf, ld);
    int elem = 0;
    switch (types[t]) {
      case C_INT: elem = sizeof(int); break;
      case C_LONG: elem = sizeof(long); break;
      case C_LONGLONG: elem = sizeof(long long); break;
      case C_FLOAT: elem = sizeof(float); break;
      case C_DBL: elem = sizeof(double); break;
      case C_SCPL: elem = 2 * sizeof(float); break;
      case C_DCPL: elem = 2 * sizeof(double); break;
    }
    for (int k = 0; k < 101; ++k) CHECK(memcmp(buf + k * elem, &v, elem) == 0, "type %d element %d", types[t], k);
    free(buf);
    GA_Destroy(g2);
    GA_Destroy(g);
  }
}

static void collectives(void) {
  double x[3] = {ga_me, 1.0, -ga_me};
  GA_Dgop(x, 3, "+");
  CHECK(x[0] == ga_np * (ga_np - 1) / 2.0 && x[1] == ga_np && x[2] == -x[0], "GA_Dgop: %g %g %g", x[0], x[1], x[2]);
  double m = ga_me;
  GA_Dgop(&m, 1, "max");
  CHECK(m == ga_np - 1, "GA_Dgop max %g", m);
  int i = ga_me + 1;
  GA_Igop(&i, 1, "*");
  int fact = 1;
  for (int k = 2; k <= ga_np; ++k) fact *= k;
  CHECK(i == fact, "GA_Igop * %d", i);
  char text[64] = "";
  const int root = ga_np - 1;
  if (ga_me == root) strcpy(text, "broadcast from the last rank");
  GA_Brdcst(text, sizeof text, root);
  CHECK(strcmp(text, "broadcast from the last rank") == 0, "GA_Brdcst: '%s'", text);
}

static void read_inc_and_lock(void) {
  int dims[1] = {2}, chunk[1] = {-1};
  int g = NGA_Create(C_LONG, 1, dims, "counter", chunk);
  GA_Zero(g);
  GA_Sync();
  const int per_rank = 50;
  long *got = malloc(sizeof(long) * per_rank);
  int sub[1] = {1};
  for (int k = 0; k < per_rank; ++k) got[k] = NGA_Read_inc(g, sub, 1);
  for (int k = 1; k < per_rank; ++k) CHECK(got[k] > got[k - 1], "read_inc not increasing");
  /* Every value 0..np*per_rank-1 fetched exactly once, over all ranks. */
  const int total = ga_np * per_rank;
  int *seen = calloc(total, sizeof(int));
  for (int k = 0; k < per_rank; ++k) {
    CHECK(got[k] >= 0 && got[k] < total, "read_inc value %ld", got[k]);
    seen[got[k]] = 1;
  }
  GA_Igop(seen, total, "+");
  for (int k = 0; k < total; ++k) CHECK(seen[k] == 1, "value %d fetched %d times", k, seen[k]);
  free(seen);
  free(got);

  /* Lock-protected get-add-put on element 0: no update lost. */
  CHECK(GA_Create_mutexes(1), "GA_Create_mutexes");
  int lo[1] = {0}, hi[1] = {0}, ld[1] = {1};
  for (int k = 0; k < 30; ++k) {
    GA_Lock(0);
    long v;
    NGA_Get(g, lo, hi, &v, ld);
    v += 1;
    NGA_Put(g, lo, hi, &v, ld);
    GA_Unlock(0);
  }
  GA_Sync();
  long v;
  NGA_Get(g, lo, hi, &v, ld);
  CHECK(v == 30L * ga_np, "locked counter %ld, expected %ld", v, 30L * ga_np);
  CHECK(GA_Destroy_mutexes(), "GA_Destroy_mutexes");
  GA_Destroy(g);
}

static void dgemm(void) {
  const int n = 24;
  int dims[2] = {n, n}, chunk[2] = {-1, -1};
  int a = NGA_Create(C_DBL, 2, dims, "a", chunk), b = NGA_Create(C_DBL, 2, dims, "b", chunk),
      c = NGA_Create(C_DBL, 2, dims, "c", chunk);
  double *A = malloc(sizeof(double) * n * n), *B = malloc(sizeof(double) * n * n), *C = malloc(sizeof(double) * n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) A[i * n + j] = (i + 2 * j) % 5, B[i * n + j] = (3 * i + j) % 4 - 1;
  int lo[2] = {0, 0}, hi[2] = {n - 1, n - 1}, ld[1] = {n};
  if (ga_me == 0) {
    NGA_Put(a, lo, hi, A, ld);
    NGA_Put(b, lo, hi, B, ld);
  }
  GA_Zero(c);
  GA_Sync();
  GA_Dgemm('N', 'N', n, n, n, 1.0, a, b, 0.0, c);
  GA_Sync();
  NGA_Get(c, lo, hi, C, ld);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double e = 0;
      for (int k = 0; k < n; ++k) e += A[i * n + k] * B[k * n + j];
      CHECK(C[i * n + j] == e, "dgemm (%d,%d): %g, expected %g", i, j, C[i * n + j], e);
    }
  free(A), free(B), free(C);
  GA_Destroy(a), GA_Destroy(b), GA_Destroy(c);
}

static void pgroups(void) {
  if (ga_np < 2) return;
  /* The upper half of the ranks. */
  const int count = ga_np / 2, first = ga_np - count;
  int *list = malloc(sizeof(int) * count);
  for (int k = 0; k < count; ++k) list[k] = first + k;
  int grp = GA_Pgroup_create(list, count);
  if (ga_me >= first) {
    GA_Pgroup_set_default(grp);
    int dims[1] = {57}, chunk[1] = {-1};
    int g = NGA_Create(C_DBL, 1, dims, "group array", chunk);
    GA_Zero(g);
    int lo[1] = {0}, hi[1] = {56}, ld[1] = {1};
    double buf[57], alpha = 1.0;
    for (int k = 0; k < 57; ++k) buf[k] = k;
    NGA_Acc(g, lo, hi, buf, ld, &alpha);
    GA_Pgroup_sync(grp);
    NGA_Get(g, lo, hi, buf, ld);
    for (int k = 0; k < 57; ++k) CHECK(buf[k] == (double)k * count, "group array %d: %g", k, buf[k]);
    double x = ga_me;
    GA_Pgroup_dgop(grp, &x, 1, "+");
    double e = 0;
    for (int k = 0; k < count; ++k) e += first + k;
    CHECK(x == e, "group dgop %g, expected %g", x, e);
    GA_Destroy(g);
    GA_Pgroup_set_default(GA_Pgroup_get_world());
  }
  GA_Sync();
  free(list);
}

int main(int argc, char **argv) {
  ga_start(&argc, &argv, "mp_ga", 1000000);
  check_library();
  put_get_acc();
  every_type();
  collectives();
  read_inc_and_lock();
  dgemm();
  pgroups();
  return ga_pass();
}
