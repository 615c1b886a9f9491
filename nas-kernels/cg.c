/*
 * cg.c: NAS Parallel Benchmark CG (conjugate gradient), written from the NPB
 * 3.x specification: the same random sparse matrix (makea), the same inverse
 * power iteration with 25 CG steps each, the same zeta verification.
 *
 * Decomposition: rows in contiguous blocks, one per rank. Each iteration's
 * q = A p needs all of p: the allgather of p is the communication (plus the
 * dot-product reductions). Each rank's rows are split into the columns it
 * owns and the rest, so that the armci-nb variant multiplies its own block
 * while its part of p is still on the way to the others.
 */
#include "nas_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int na, nonzer, niter;
  double shift, zeta_verify;
} cg_class_t;

static cg_class_t class_params(char cls) {
  switch (cls) {
    case 'S': return (cg_class_t){1400, 7, 15, 10.0, 8.5971775078648};
    case 'W': return (cg_class_t){7000, 8, 15, 12.0, 10.362595087124};
    case 'A': return (cg_class_t){14000, 11, 15, 20.0, 17.130235054029};
    default: return (cg_class_t){75000, 13, 75, 60.0, 22.712745482631};
  }
}

static const double rcond = 0.1;
static const double amult = 1220703125.0;
static double tran;

/* A sparse row block in CSR form; columns are global (0-based). */
typedef struct {
  int nrows;
  int *rowstr, *colidx;
  double *a;
} csr_t;

/* NPB's sprnvc: nz distinct random positions in [0, n) with random values. */
static int sprnvc(int n, int nz, int nn1, double *v, int *iv) {
  int nzv = 0;
  while (nzv < nz) {
    const double vecelt = randlc(&tran, amult);
    const double vecloc = randlc(&tran, amult);
    const int i = (int)(nn1 * vecloc);
    if (i >= n) continue;
    int seen = 0;
    for (int k = 0; k < nzv; k++)
      if (iv[k] == i) seen = 1;
    if (seen) continue;
    v[nzv] = vecelt;
    iv[nzv] = i;
    nzv++;
  }
  return nzv;
}

/* NPB's vecset: element i of the sparse vector set to val. */
static int vecset(double *v, int *iv, int nzv, int i, double val) {
  for (int k = 0; k < nzv; k++)
    if (iv[k] == i) {
      v[k] = val;
      return nzv;
    }
  v[nzv] = val;
  iv[nzv] = i;
  return nzv + 1;
}

/* NPB's makea + sparse for the rows [firstrow, lastrow] (0-based): the sum of
 * n outer products of random sparse vectors with geometrically falling
 * weights, rcond - shift added on the diagonal, duplicates summed. Every
 * rank generates all n vectors (the sequence must be walked in order) and
 * keeps the entries of its rows. */
static csr_t makea(int n, int nonzer, double shift, int firstrow, int lastrow) {
  const int per = nonzer + 1;
  int *arow = malloc(sizeof(int) * n);
  int *acol = malloc(sizeof(int) * (size_t)n * per);
  double *aelt = malloc(sizeof(double) * (size_t)n * per);
  int nn1 = 1;
  while (nn1 < n) nn1 *= 2;
  for (int i = 0; i < n; i++) {
    int nzv = sprnvc(n, nonzer, nn1, aelt + (size_t)i * per, acol + (size_t)i * per);
    nzv = vecset(aelt + (size_t)i * per, acol + (size_t)i * per, nzv, i, 0.5);
    arow[i] = nzv;
  }

  csr_t m;
  m.nrows = lastrow - firstrow + 1;
  m.rowstr = calloc((size_t)m.nrows + 1, sizeof(int));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < arow[i]; k++) {
      const int j = acol[(size_t)i * per + k];
      if (j >= firstrow && j <= lastrow) m.rowstr[j - firstrow + 1] += arow[i];
    }
  for (int j = 0; j < m.nrows; j++) m.rowstr[j + 1] += m.rowstr[j];
  const int nza = m.rowstr[m.nrows];
  m.a = nas_alloc_streamed(sizeof(double) * ((size_t)nza + 1));
  m.colidx = nas_alloc_streamed(sizeof(int) * ((size_t)nza + 1));
  for (int k = 0; k < nza; k++) m.colidx[k] = -1;
  int *dups = calloc((size_t)m.nrows, sizeof(int));

  double size = 1.0;
  const double ratio = pow(rcond, 1.0 / (double)n);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < arow[i]; k++) {
      const int j = acol[(size_t)i * per + k];
      if (j < firstrow || j > lastrow) continue;
      const int row = j - firstrow;
      const double scale = size * aelt[(size_t)i * per + k];
      for (int kk = 0; kk < arow[i]; kk++) {
        const int jcol = acol[(size_t)i * per + kk];
        double va = aelt[(size_t)i * per + kk] * scale;
        if (jcol == j && j == i) va += rcond - shift;
        /* Insert jcol in the row's sorted column list (or find it). */
        int at = -1;
        for (int q = m.rowstr[row]; q < m.rowstr[row + 1]; q++) {
          if (m.colidx[q] > jcol) {
            for (int s = m.rowstr[row + 1] - 2; s >= q; s--)
              if (m.colidx[s] > -1) {
                m.a[s + 1] = m.a[s];
                m.colidx[s + 1] = m.colidx[s];
              }
            m.colidx[q] = jcol;
            m.a[q] = 0.0;
            at = q;
            break;
          } else if (m.colidx[q] == -1) {
            m.colidx[q] = jcol;
            at = q;
            break;
          } else if (m.colidx[q] == jcol) {
            dups[row]++;
            at = q;
            break;
          }
        }
        if (at < 0) {
          fprintf(stderr, "cg: makea: row %d overflowed\n", j);
          exit(3);
        }
        m.a[at] += va;
      }
    }
    size *= ratio;
  }
  /* Squeeze out the slots that duplicates left empty at each row's end. */
  int out = 0;
  for (int row = 0; row < m.nrows; row++) {
    const int start = m.rowstr[row], used = m.rowstr[row + 1] - m.rowstr[row] - dups[row];
    m.rowstr[row] = out;
    memmove(m.a + out, m.a + start, sizeof(double) * (size_t)used);
    memmove(m.colidx + out, m.colidx + start, sizeof(int) * (size_t)used);
    out += used;
  }
  m.rowstr[m.nrows] = out;
  free(dups);
  free(arow);
  free(acol);
  free(aelt);
  return m;
}

/* The columns of m inside [c0, c1) and the others, as two matrices of the
 * same rows, entry order kept. Two separate matrices, not one with a split
 * point per row: each product then streams one array. */
static void split_columns(const csr_t *m, int c0, int c1, csr_t *inside, csr_t *outside) {
  csr_t *parts[2] = {inside, outside};
  for (int p = 0; p < 2; p++) {
    parts[p]->nrows = m->nrows;
    parts[p]->rowstr = malloc(sizeof(int) * ((size_t)m->nrows + 1));
    parts[p]->colidx = nas_alloc_streamed(sizeof(int) * ((size_t)m->rowstr[m->nrows] + 1));
    parts[p]->a = nas_alloc_streamed(sizeof(double) * ((size_t)m->rowstr[m->nrows] + 1));
    parts[p]->rowstr[0] = 0;
  }
  int n[2] = {0, 0};
  for (int r = 0; r < m->nrows; r++) {
    for (int k = m->rowstr[r]; k < m->rowstr[r + 1]; k++) {
      const int p = (m->colidx[k] >= c0 && m->colidx[k] < c1) ? 0 : 1;
      parts[p]->colidx[n[p]] = m->colidx[k];
      parts[p]->a[n[p]] = m->a[k];
      n[p]++;
    }
    inside->rowstr[r + 1] = n[0];
    outside->rowstr[r + 1] = n[1];
  }
}

static void csr_free(csr_t *m) {
  free(m->rowstr);
  free(m->colidx);
  free(m->a);
}

/* Rows [r0, r1) of y = m x (add = 0) or y += m x (add = 1); x is indexed by
 * global column. Four partial sums per row: one sum would make every entry
 * wait for the previous addition's latency (a row has tens of entries, the
 * matrix sits in cache), four keep the adder busy. The order of the
 * additions changes within rounding, which CG's verification tolerates. */
static void spmv_rows(const csr_t *m, const double *x, double *y, int add, int r0, int r1) {
  const int *restrict col = m->colidx;
  const double *restrict a = m->a;
  for (int r = r0; r < r1; r++) {
    double s0 = add ? y[r] : 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    const int end = m->rowstr[r + 1];
    int k = m->rowstr[r];
    for (; k + 3 < end; k += 4) {
      s0 += a[k] * x[col[k]];
      s1 += a[k + 1] * x[col[k + 1]];
      s2 += a[k + 2] * x[col[k + 2]];
      s3 += a[k + 3] * x[col[k + 3]];
    }
    for (; k < end; k++) s0 += a[k] * x[col[k]];
    y[r] = (s0 + s1) + (s2 + s3);
  }
}

typedef struct {
  int split;             /* armci-nb on several ranks: own and other */
  csr_t whole;           /* this rank's rows (when not split) */
  csr_t own, other;      /* its own columns / the rest (when split) */
  int n, first, nrows;   /* global size, first row, rows here */
  long *offs, *lens;     /* every rank's row block */
  double *pfull;         /* the whole p (or z): this rank's block at first */
  void **pbases;
} cg_t;

static double dot(const double *x, const double *y, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

/* y = A v where v's local block is in cg->pfull at [first, first+nrows).
 * armci-nb: the allgather of v overlaps the product with the own-column
 * block. The other variants have v whole once the allgather started, and
 * take each row in one pass, as NPB does. */
static void matvec(cg_t *cg, double *y) {
  nas_allgather_start(cg->pfull, cg->pbases, cg->offs, cg->lens);
  double t0 = nas_wtime();
  if (!cg->split) {
    spmv_rows(&cg->whole, cg->pfull, y, 0, 0, cg->nrows);
    nas_toc(nas_phase("spmv"), t0);
    return;
  }
  spmv_rows(&cg->own, cg->pfull, y, 0, 0, cg->nrows);
  nas_toc(nas_phase("spmv own cols"), t0);
  /* This rank's part is rewritten only after the dot products' reductions,
   * which its puts' completion then overlaps. */
  nas_allgather_arrived();
  t0 = nas_wtime();
  spmv_rows(&cg->other, cg->pfull, y, 1, 0, cg->nrows);
  nas_toc(nas_phase("spmv other cols"), t0);
}

/* NPB's conj_grad: 25 CG steps on A z = x, then ||x - A z||. */
static double conj_grad(cg_t *cg, const double *x, double *z, double *q, double *r) {
  const int nr = cg->nrows;
  double *p = cg->pfull + cg->first;
  nas_allgather_release();
  for (int j = 0; j < nr; j++) {
    q[j] = 0.0;
    z[j] = 0.0;
    r[j] = x[j];
    p[j] = x[j];
  }
  double rho = dot(r, r, nr);
  nas_allreduce_sum(&rho, 1);
  for (int cgit = 0; cgit < 25; cgit++) {
    matvec(cg, q);
    double d = dot(p, q, nr);
    nas_allreduce_sum(&d, 1);
    const double alpha = rho / d;
    const double rho0 = rho;
    for (int j = 0; j < nr; j++) {
      z[j] += alpha * p[j];
      r[j] -= alpha * q[j];
    }
    rho = dot(r, r, nr);
    nas_allreduce_sum(&rho, 1);
    const double beta = rho / rho0;
    nas_allgather_release();
    for (int j = 0; j < nr; j++) p[j] = r[j] + beta * p[j];
  }
  /* r = A z: z goes through the same full-vector buffer. */
  nas_allgather_release();
  memcpy(p, z, sizeof(double) * (size_t)nr);
  matvec(cg, r);
  double sum = 0.0;
  for (int j = 0; j < nr; j++) sum += (x[j] - r[j]) * (x[j] - r[j]);
  nas_allreduce_sum(&sum, 1);
  return sqrt(sum);
}

int main(int argc, char **argv) {
  nas_start(argc, argv, "cg", 8);
  const cg_class_t c = class_params(nas.cls);
  cg_t cg;
  cg.n = c.na;
  cg.offs = malloc(sizeof(long) * nas.np);
  cg.lens = malloc(sizeof(long) * nas.np);
  for (int r = 0; r < nas.np; r++) {
    cg.offs[r] = (long)c.na * r / nas.np;
    cg.lens[r] = (long)c.na * (r + 1) / nas.np - cg.offs[r];
  }
  cg.first = (int)cg.offs[nas.me];
  cg.nrows = (int)cg.lens[nas.me];
  if (nas.me == 0) {
    printf("\n\n NAS Parallel Benchmarks (libarmci kernels) - CG Benchmark\n\n");
    printf(" Size: %11d\n Iterations: %5d\n Number of active processes: %5d\n Variant: %s\n\n", c.na, c.niter,
           nas.np, nas_variant_name());
  }

  tran = 314159265.0;
  randlc(&tran, amult);
  cg.whole = makea(c.na, c.nonzer, c.shift, cg.first, cg.first + cg.nrows - 1);
  cg.split = nas.variant == NAS_ARMCI_NB && nas.np > 1;
  if (cg.split) {
    split_columns(&cg.whole, cg.first, cg.first + cg.nrows, &cg.own, &cg.other);
    csr_free(&cg.whole);
  }
  cg.pfull = nas_alloc((size_t)c.na, &cg.pbases);

  const int nr = cg.nrows;
  double *x = malloc(sizeof(double) * nr), *z = malloc(sizeof(double) * nr);
  double *q = malloc(sizeof(double) * nr), *r = malloc(sizeof(double) * nr);
  double zeta = 0.0;
  /* One untimed iteration (page faults, caches), then the timed ones. */
  for (int timed = 0; timed < 2; timed++) {
    for (int j = 0; j < nr; j++) x[j] = 1.0;
    nas_barrier();
    nas_timers_reset();
    const double t0 = nas_wtime();
    const int iters = timed ? c.niter : 1;
    for (int it = 1; it <= iters; it++) {
      const double rnorm = conj_grad(&cg, x, z, q, r);
      double norms[2] = {dot(x, z, nr), dot(z, z, nr)};
      nas_allreduce_sum(norms, 2);
      const double inv = 1.0 / sqrt(norms[1]);
      if (timed) {
        zeta = c.shift + 1.0 / norms[0];
        if (nas.me == 0) {
          if (it == 1) printf("   iteration           ||r||                 zeta\n");
          printf("    %5d       %20.14e%20.13e\n", it, rnorm, zeta);
        }
      }
      for (int j = 0; j < nr; j++) x[j] = inv * z[j];
    }
    double t = nas_wtime() - t0;
    const double comm = nas_comm_seconds;
    nas_allreduce_max(&t, 1);
    if (timed) {
      const double err = fabs(zeta - c.zeta_verify) / c.zeta_verify;
      const int ok = err <= 1.0e-10;
      if (nas.me == 0) {
        printf(" Benchmark completed\n");
        if (ok) printf(" VERIFICATION SUCCESSFUL\n Zeta is    %20.13e\n Error is   %20.13e\n", zeta, err);
        else printf(" VERIFICATION FAILED\n Zeta                %20.13e\n The correct zeta is %20.13e\n", zeta,
                    c.zeta_verify);
      }
      const double nz = (double)c.nonzer * (c.nonzer + 1);
      const double mops = t > 0 ? 2.0 * c.niter * c.na * (3.0 + nz + 25.0 * (5.0 + nz) + 3.0) / t / 1e6 : 0.0;
      char size[32];
      snprintf(size, sizeof size, "%d", c.na);
      const int status = nas_report("CG", size, c.niter, t, mops, ok, comm);
      nas_allgather_release();
      nas_free(cg.pfull, cg.pbases);
      nas_finish();
      return status;
    }
  }
  return 1;
}
