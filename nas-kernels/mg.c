/*
 * mg.c: NAS Parallel Benchmark MG (V-cycle multigrid on a periodic 3-D
 * grid), written from the NPB 3.x specification: the same right-hand side
 * (zran3: +1 at the 10 largest and -1 at the 10 smallest of NPB's random
 * field), the same operators (resid, psinv, rprj3, interp with NPB's
 * coefficients), the same L2-norm verification.
 *
 * Decomposition: the grid is cut in slabs of z-planes, one slab per rank, on
 * every level with at least two planes per rank; the coarser levels are
 * small and every rank computes them whole (replicated). Communication: the
 * boundary planes of each slab after every operator (a neighbour exchange),
 * and one allgather where the V-cycle enters the replicated levels.
 *
 * armci-nb pipelines the operators: each computes first the planes that
 * read no ghost, while the previous operator's boundary planes travel, then
 * waits for those, computes its own two boundary planes and puts them, to
 * travel while the next operator runs. Why a put never lands on a ghost
 * still being read: a rank puts operator n's planes only after the
 * neighbours it sends to told it they finished every operator that reads
 * that ghost's old contents. Operators whose output is read only through
 * its upper ghost (rprj3, the top level's residual) send one way, down, so
 * the rank below hears nothing back from them; the last reader of the
 * ghost they write is a psinv before the last exchange both ways, which
 * the putting rank has waited for, and no operator reads the ghosts of the
 * array it writes.
 * The notification follows the puts at once; their completion is waited
 * only before their planes are written again. Notifications are counted
 * per peer and shared with the allgather, so a pending exchange has
 * arrived before it.
 */
#include "nas_common.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 12

typedef struct {
  int N;             /* points per dimension, globally */
  int n1, n2, n3;    /* local array dimensions, ghost layers included */
  int L;             /* interior planes here */
  int z0;            /* global plane index of local plane 0 */
  int distributed;   /* slabs (1) or whole on every rank (0) */
  double *u, *r;
  void **ubases, **rbases;
} level_t;

static level_t lev[MAX_LEVELS + 1];
static int lt;
static double *v;
static void **vbases;
static double a[4], c[4];

#define AT(l, i3, i2, i1) (((size_t)(i3) * (size_t)(l)->n2 + (size_t)(i2)) * (size_t)(l)->n1 + (size_t)(i1))

static size_t plane_size(const level_t *l) { return (size_t)l->n1 * l->n2; }

/* ------------------------------------------------------- communication */

/* Periodic ghosts in x and y of local plane i3 (NPB's comm3, axes 1 and 2). */
static void wrap_xy(const level_t *l, double *u, int i3) {
  for (int i2 = 1; i2 < l->n2 - 1; i2++) {
    u[AT(l, i3, i2, 0)] = u[AT(l, i3, i2, l->n1 - 2)];
    u[AT(l, i3, i2, l->n1 - 1)] = u[AT(l, i3, i2, 1)];
  }
  memcpy(u + AT(l, i3, 0, 0), u + AT(l, i3, l->n2 - 2, 0), sizeof(double) * l->n1);
  memcpy(u + AT(l, i3, l->n2 - 1, 0), u + AT(l, i3, 1, 0), sizeof(double) * l->n1);
}

/* Periodic ghosts in z when this rank holds every plane. */
static void wrap_z(const level_t *l, double *u) {
  memcpy(u, u + AT(l, l->n3 - 2, 0, 0), sizeof(double) * plane_size(l));
  memcpy(u + AT(l, l->n3 - 1, 0, 0), u + AT(l, 1, 0, 0), sizeof(double) * plane_size(l));
}

/* The exchange of one array's boundary planes: each rank sends its slab's
 * first plane to the rank below (that rank's upper ghost) and, unless only
 * the upper ghost is read (HALO_UPPER), its last plane to the rank above
 * (its lower ghost). One put per face: a plane is contiguous. At most one
 * exchange is awaited at a time, except that armci-nb may start a one-way
 * exchange before the one before it arrived (apply); its puts may still be
 * reading their planes after it arrived (see halo_release). */
typedef enum { HALO_UPPER = 1, HALO_BOTH = 2 } halo_dirs_t;
enum { HALO_SENT = 4 };
static struct {
  /* started, the neighbours' planes not yet waited, oldest first */
  halo_dirs_t pending[2];
  int npending;
  /* armci-nb: puts not yet waited (array NULL: a free slot), reused in turn */
  struct {
    const double *array;
    int count;
    armci_hdl_t handles[2];
  } sent[HALO_SENT];
  int next;
} halo;

static int up_rank(void) { return (nas.me + 1) % nas.np; }
static int down_rank(void) { return (nas.me + nas.np - 1) % nas.np; }

/* Returns once this rank's ghosts of the exchanged array hold the
 * neighbours' planes. With two ranks both neighbours are one rank, and one
 * notification covers both planes (halo_start). */
static void halo_arrived_oldest(void) {
  if (!halo.npending) return;
  const double t0 = nas_wtime();
  armci_notify_wait(up_rank(), NULL);
  if (halo.pending[0] == HALO_BOTH && up_rank() != down_rank()) armci_notify_wait(down_rank(), NULL);
  halo.pending[0] = halo.pending[1];
  halo.npending--;
  nas_comm_toc(nas_phase("halo wait"), t0);
}

static void halo_arrived(void) {
  while (halo.npending) halo_arrived_oldest();
}

static void wait_sent(int i) {
  if (!halo.sent[i].array) return;
  const double t0 = nas_wtime();
  for (int h = 0; h < halo.sent[i].count; h++) ARMCI_Wait(&halo.sent[i].handles[h]);
  halo.sent[i].array = NULL;
  nas_comm_toc(nas_phase("halo release"), t0);
}

/* armci-nb: a put reads its plane until it completed, which on an RC
 * transport is when the target's acknowledgement came back, a network
 * crossing after the data landed. So its completion is waited only here,
 * before the array x (every array: NULL) is written again. */
static void halo_release(const double *x) {
  for (int i = 0; i < HALO_SENT; i++)
    if (!x || halo.sent[i].array == x) wait_sent(i);
}

/* Starts the exchange of u's boundary planes (dirs: which ghosts are
 * read before u is written again; the same in every variant). mpi:
 * complete on return (NPB's comm3). armci: the data is in place on return,
 * the notifications are waited by halo_arrived. armci-nb: the puts are in
 * flight, the notifications right behind them: armci_notify orders itself
 * after this rank's puts to the peer, so the neighbour learns of the planes
 * one crossing after they land, where notifying once the puts completed
 * adds the acknowledgement's way back. */
static void halo_post(const level_t *l, double *u, void **bases, halo_dirs_t dirs) {
  const double t0 = nas_wtime();
  const int up = up_rank(), down = down_rank(), both = dirs == HALO_BOTH;
  const size_t plane = plane_size(l);
  const int bytes = (int)(plane * sizeof(double));
  double *first = u + AT(l, 1, 0, 0), *last = u + AT(l, l->L, 0, 0);
  if (nas.variant == NAS_MPI) {
    MPI_Sendrecv(first, (int)plane, MPI_DOUBLE, down, 2, u + AT(l, l->L + 1, 0, 0), (int)plane, MPI_DOUBLE, up, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (both)
      MPI_Sendrecv(last, (int)plane, MPI_DOUBLE, up, 1, u, (int)plane, MPI_DOUBLE, down, 1, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    nas_comm_toc(nas_phase("halo exchange"), t0);
    return;
  }
  double *up_ghost = (double *)bases[up];
  double *down_ghost = (double *)bases[down] + AT(l, l->L + 1, 0, 0);
  halo.pending[halo.npending++] = dirs;
  if (nas.variant == NAS_ARMCI) {
    ARMCI_Put(first, down_ghost, bytes, down);
    if (both) ARMCI_Put(last, up_ghost, bytes, up);
  } else {
    /* The oldest puts: long acknowledged, unless their array was not
     * written since. */
    wait_sent(halo.next);
    armci_hdl_t *h = halo.sent[halo.next].handles;
    halo.sent[halo.next].array = u;
    halo.sent[halo.next].count = both ? 2 : 1;
    halo.next = (halo.next + 1) % HALO_SENT;
    ARMCI_INIT_HANDLE(&h[0]);
    ARMCI_NbPut(first, down_ghost, bytes, down, &h[0]);
    if (both) {
      ARMCI_INIT_HANDLE(&h[1]);
      ARMCI_NbPut(last, up_ghost, bytes, up, &h[1]);
    }
  }
  armci_notify(down);
  if (both && down != up) armci_notify(up);
  nas_comm_toc(nas_phase("halo issue"), t0);
}

static void halo_start(const level_t *l, double *u, void **bases, halo_dirs_t dirs) {
  halo_arrived();
  halo_post(l, u, bases, dirs);
}

/* An operator computes interior planes lo..hi (local indices) of its
 * output at level `out`; planes inner_lo..inner_hi of them read no ghost
 * plane of the input. */
typedef struct op_s {
  void (*planes)(const struct op_s *op, int lo, int hi);
  const char *name;   /* its phase */
  const level_t *out, *in;
  double *dst, *src, *rhs;
  void **dst_bases;
  int lo, hi;
  int inner_lo, inner_hi;
  halo_dirs_t dirs;   /* the ghosts of dst read before it is written again */
} op_t;

static void run_planes(const op_t *op, int lo, int hi) {
  if (lo > hi) return;
  const double t0 = nas_wtime();
  for (int i3 = lo; i3 <= hi; i3++) {
    op->planes(op, i3, i3);
    wrap_xy(op->out, op->dst, i3);
  }
  nas_toc(nas_phase(op->name), t0);
}

/* Computes the operator and brings every ghost of its output up to date
 * (NPB's operator followed by comm3); with armci-nb the ghosts are up to
 * date once the next operator (or halo_arrived) has waited for them. */
static void apply(const op_t *op) {
  const level_t *l = op->out;
  halo_release(op->dst);
  if (l->distributed && nas.np > 1) {
    if (nas.variant == NAS_ARMCI_NB && op->dirs == HALO_UPPER && op->lo == op->inner_lo) {
      /* The one plane sent reads no ghost: it goes first, before the
       * previous operator's planes arrived (the rank below read its ghost's
       * old contents before the last exchange both ways), so in a chain of
       * such operators (the restriction) each plane travels while the
       * sender computes two operators' interiors, not one. */
      run_planes(op, op->lo, op->lo);
      halo_post(l, op->dst, op->dst_bases, op->dirs);
      run_planes(op, op->lo + 1, op->inner_hi);
      halo_arrived_oldest();
      run_planes(op, op->inner_hi + 1, op->hi);
    } else if (nas.variant == NAS_ARMCI_NB) {
      /* The previous operator's planes travel while this one computes the
       * planes that do not need them; its own boundary planes go last and
       * travel while the next operator runs. */
      run_planes(op, op->inner_lo, op->inner_hi);
      halo_arrived();
      run_planes(op, op->lo, op->inner_lo - 1);
      run_planes(op, op->inner_hi + 1, op->hi);
      halo_start(l, op->dst, op->dst_bases, op->dirs);
    } else {
      run_planes(op, op->lo, op->hi);
      halo_start(l, op->dst, op->dst_bases, op->dirs);
      halo_arrived();
    }
    return;
  }
  /* The planes read are here; the allgather's notifications are counted
   * with the halo's and must not be taken for them. */
  halo_arrived();
  run_planes(op, op->lo, op->hi);
  if (op->hi - op->lo + 1 < l->N) {
    /* Entering the replicated levels: each rank computed its share of the
     * planes; gather them all. */
    const size_t plane = plane_size(l);
    long offs[64], lens[64];
    const int share = op->hi - op->lo + 1;
    for (int r = 0; r < nas.np; r++) {
      offs[r] = (long)((size_t)(1 + r * share) * plane);
      lens[r] = (long)((size_t)share * plane);
    }
    nas_allgather_start(op->dst, op->dst_bases, offs, lens);
    nas_allgather_finish();
  }
  wrap_z(l, op->dst);
}

/* ----------------------------------------------------------- operators */

/* The rows a 27-point operator reads around row (i3, i2): ROW(dz, dy) is
 * the row at plane i3 + dz, line i2 + dy. */
#define ROW(base, l, i3, i2, dz, dy) ((base) + AT(l, (i3) + (dz), (i2) + (dy), 0))

/* The stencil's partial sums of one line: e[i1], the four edge neighbours
 * across y and z, and k[i1], the four corner neighbours; both shared by the
 * three output points i1-1, i1, i1+1 (why NPB's resid and psinv need fewer
 * flops than the 27-point formula). omp simd: the rows are distinct lines
 * of one array, the sums a private buffer. */
static inline void line_sums(const level_t *l, const double *x, int i3, int i2, double *restrict e,
                             double *restrict k) {
  const double *ym = ROW(x, l, i3, i2, 0, -1), *yp = ROW(x, l, i3, i2, 0, 1);
  const double *zm = ROW(x, l, i3, i2, -1, 0), *zp = ROW(x, l, i3, i2, 1, 0);
  const double *mm = ROW(x, l, i3, i2, -1, -1), *mp = ROW(x, l, i3, i2, -1, 1);
  const double *pm = ROW(x, l, i3, i2, 1, -1), *pp = ROW(x, l, i3, i2, 1, 1);
  const int n = l->n1;
#pragma omp simd
  for (int i1 = 0; i1 < n; i1++) {
    e[i1] = ym[i1] + yp[i1] + zm[i1] + zp[i1];
    k[i1] = mm[i1] + mp[i1] + pm[i1] + pp[i1];
  }
}

/* One line of r = v - A u (NPB's resid; a[1] is 0, so the face term drops
 * out), from u's line and its sums e, k. */
static inline void resid_line(double *rc, const double *vc, const double *uc, const double *e,
                              const double *k, int n) {
  const double a0 = a[0], a2 = a[2], a3 = a[3];
#pragma omp simd
  for (int i1 = 1; i1 < n - 1; i1++)
    rc[i1] = vc[i1] - a0 * uc[i1] - a2 * (k[i1] + e[i1 - 1] + e[i1 + 1]) - a3 * (k[i1 - 1] + k[i1 + 1]);
}

/* One line of u += S r (NPB's psinv, the smoother; c[3] is 0), from r's
 * line and its sums e, k. */
static inline void psinv_line(double *uc, const double *rc, const double *e, const double *k, int n) {
  const double c0 = c[0], c1 = c[1], c2 = c[2];
#pragma omp simd
  for (int i1 = 1; i1 < n - 1; i1++)
    uc[i1] += c0 * rc[i1] + c1 * (rc[i1 - 1] + rc[i1 + 1] + e[i1]) + c2 * (k[i1] + e[i1 - 1] + e[i1 + 1]);
}

/* The 27-point operators on planes lo..hi: resid when the op has a
 * right-hand side (src is u), psinv otherwise (src is r). */
static void stencil_planes(const op_t *op, int lo, int hi) {
  const level_t *l = op->out;
  const double *x = op->src;
  double e[l->n1], k[l->n1];
  const int n = l->n1;
  for (int i3 = lo; i3 <= hi; i3++)
    for (int i2 = 1; i2 < l->n2 - 1; i2++) {
      line_sums(l, x, i3, i2, e, k);
      const double *xc = ROW(x, l, i3, i2, 0, 0);
      double *dc = ROW(op->dst, l, i3, i2, 0, 0);
      if (op->rhs) resid_line(dc, ROW(op->rhs, l, i3, i2, 0, 0), xc, e, k, n);
      else psinv_line(dc, xc, e, k, n);
    }
}

/* Coarse s = P^T r (NPB's rprj3): coarse point j sits on fine point 2j;
 * the fine line's edge and corner sums (line_sums) feed the coarse point
 * on it and, at the odd fine points, the two coarse points beside. */
static void rprj3_planes(const op_t *op, int lo, int hi) {
  const level_t *f = op->in, *cl = op->out;
  const double *r = op->src;
  double *s = op->dst;
  double e[f->n1], k[f->n1];
  const int m = cl->n1;
  for (int j3 = lo; j3 <= hi; j3++) {
    const int i3 = 2 * (j3 + cl->z0) - f->z0;
    for (int j2 = 1; j2 < cl->n2 - 1; j2++) {
      const int i2 = 2 * j2;
      line_sums(f, r, i3, i2, e, k);
      const double *rc = ROW(r, f, i3, i2, 0, 0);
      double *sc = ROW(s, cl, j3, j2, 0, 0);
#pragma omp simd
      for (int j1 = 1; j1 < m - 1; j1++) {
        const int i1 = 2 * j1;
        sc[j1] = 0.5 * rc[i1] + 0.25 * (rc[i1 - 1] + rc[i1 + 1] + e[i1]) + 0.125 * (e[i1 - 1] + e[i1 + 1] + k[i1]) +
                 0.0625 * (k[i1 - 1] + k[i1 + 1]);
      }
    }
  }
}

/* One coarse line's contribution to the four fine lines u00 (the fine
 * line on it), u01 (next y), u10 (next z), u11 (both): u += P z with
 * add, u = P z without (every fine point is written once, so a level whose
 * u starts from zero needs neither the zeroing pass nor the read of u).
 * Inlined with a constant `add`, so each caller gets a loop without the
 * test. */
static inline __attribute__((always_inline)) void interp_lines(const double *z00, const double *z1, const double *z2,
                                                               const double *z3, double *u00, double *u01,
                                                               double *u10, double *u11, int m, int add) {
#pragma omp simd
  for (int k1 = 0; k1 < m - 1; k1++) {
    const int i1 = 2 * k1;
    const double p00 = z00[k1], q00 = 0.5 * (z00[k1 + 1] + z00[k1]);
    const double p01 = 0.5 * z1[k1], q01 = 0.25 * (z1[k1] + z1[k1 + 1]);
    const double p10 = 0.5 * z2[k1], q10 = 0.25 * (z2[k1] + z2[k1 + 1]);
    const double p11 = 0.25 * z3[k1], q11 = 0.125 * (z3[k1] + z3[k1 + 1]);
    u00[i1] = add ? u00[i1] + p00 : p00;
    u00[i1 + 1] = add ? u00[i1 + 1] + q00 : q00;
    u01[i1] = add ? u01[i1] + p01 : p01;
    u01[i1 + 1] = add ? u01[i1 + 1] + q01 : q01;
    u10[i1] = add ? u10[i1] + p10 : p10;
    u10[i1 + 1] = add ? u10[i1 + 1] + q10 : q10;
    u11[i1] = add ? u11[i1] + p11 : p11;
    u11[i1 + 1] = add ? u11[i1 + 1] + q11 : q11;
  }
}

/* u += P z (add) or u = P z (NPB's interp, trilinear): coarse point j
 * feeds fine points 2j and 2j+1; coarse planes k3 = lo..hi (local), each
 * with the plane above it, make fine planes 2 (k3 + z0c) - z0f and the one
 * above (each fine point once, so in any order). */
static void interp_planes(const level_t *cl, const double *z, const level_t *f, double *u, int add, int lo,
                          int hi) {
  double z1[cl->n1], z2[cl->n1], z3[cl->n1];
  const int m = cl->n1;
  for (int k3 = lo; k3 <= hi; k3++) {
    const int i3 = 2 * (k3 + cl->z0) - f->z0;
    for (int k2 = 0; k2 < cl->n2 - 1; k2++) {
      const double *z00 = ROW(z, cl, k3, k2, 0, 0), *z01 = ROW(z, cl, k3, k2, 0, 1);
      const double *z10 = ROW(z, cl, k3, k2, 1, 0), *z11 = ROW(z, cl, k3, k2, 1, 1);
#pragma omp simd
      for (int k1 = 0; k1 < m; k1++) {
        z1[k1] = z01[k1] + z00[k1];
        z2[k1] = z10[k1] + z00[k1];
        z3[k1] = z11[k1] + z10[k1] + z1[k1];
      }
      const int i2 = 2 * k2;
      double *u00 = ROW(u, f, i3, i2, 0, 0), *u01 = ROW(u, f, i3, i2, 0, 1);
      double *u10 = ROW(u, f, i3, i2, 1, 0), *u11 = ROW(u, f, i3, i2, 1, 1);
      if (add) interp_lines(z00, z1, z2, z3, u00, u01, u10, u11, m, 1);
      else interp_lines(z00, z1, z2, z3, u00, u01, u10, u11, m, 0);
    }
  }
}

/* The whole fine slab, its ghost planes included: they come out equal to
 * what the neighbour computes for them, so no exchange follows. z's
 * exchange (armci-nb: started by the coarse level's last operator) travels
 * while the coarse planes that read no ghost of z are interpolated. */
static void interp(const level_t *cl, const double *z, const level_t *f, double *u, int add) {
  halo_release(u);
  const int lo = f->z0 / 2 - cl->z0, hi = lo + f->L / 2;
  const int inner_lo = lo > 1 ? lo : 1, inner_hi = hi < cl->L - 1 ? hi : cl->L - 1;
  double t0 = nas_wtime();
  interp_planes(cl, z, f, u, add, inner_lo, inner_hi);
  nas_toc(nas_phase("interp"), t0);
  halo_arrived();
  t0 = nas_wtime();
  interp_planes(cl, z, f, u, add, lo, inner_lo - 1);
  interp_planes(cl, z, f, u, add, inner_hi + 1, hi);
  nas_toc(nas_phase("interp"), t0);
}

/* The top level's residual: read by norm2u3 (no ghost) and rprj3 (the
 * upper ghost) before resid_psinv writes it again. */
static void resid(level_t *l, double *u, double *vv, double *r, void **rbases) {
  op_t op = {stencil_planes, "resid", l, l, r, u, vv, rbases, 1, l->L, 2, l->L - 1, HALO_UPPER};
  apply(&op);
}

static void psinv(level_t *l, double *r, double *u, void **ubases) {
  op_t op = {stencil_planes, "psinv", l, l, u, r, NULL, ubases, 1, l->L, 2, l->L - 1, HALO_BOTH};
  apply(&op);
}

/* Brings the z ghosts of a level's array up to date: the neighbours' planes
 * (started here, waited by halo_arrived) or the periodic wrap. */
static void ghosts_start(const level_t *l, double *x, void **bases) {
  if (l->distributed && nas.np > 1) halo_start(l, x, bases, HALO_BOTH);
  else wrap_z(l, x);
}

/* r = rhs - A u, then u += S r (NPB's resid and psinv on one level) in one
 * sweep: smoothing plane j reads r on planes j-1..j+1, and the residual of
 * plane j+1 is the last reader of the old u on plane j, so plane j is
 * smoothed right after that residual, while those planes are in cache,
 * rather than in a second sweep that reads r and u from memory again. The
 * boundary planes of r go first and travel while the interior is computed;
 * the two boundary planes of u are smoothed once they arrived. Every plane
 * comes out as the two separate sweeps make it. */
static void resid_psinv(level_t *l, double *rhs) {
  const int L = l->L;
  const op_t res = {stencil_planes, "resid", l, l, l->r, l->u, rhs, l->rbases, 1, L, 2, L - 1, HALO_BOTH};
  const op_t smooth = {stencil_planes, "psinv", l, l, l->u, l->r, NULL, l->ubases, 1, L, 2, L - 1, HALO_BOTH};
  /* u's ghosts must be in place; putting r's planes needs the neighbours
   * past their last read of r's ghosts: both hold once the pending
   * exchange arrived. */
  halo_arrived();
  halo_release(l->r);
  halo_release(l->u);
  run_planes(&res, 1, 1);
  run_planes(&res, L, L);
  ghosts_start(l, l->r, l->rbases);
  for (int i3 = 2; i3 < L; i3++) {
    run_planes(&res, i3, i3);
    if (i3 > 2) run_planes(&smooth, i3 - 1, i3 - 1);
  }
  if (L > 2) run_planes(&smooth, L - 1, L - 1);
  halo_arrived();
  run_planes(&smooth, 1, 1);
  run_planes(&smooth, L, L);
  ghosts_start(l, l->u, l->ubases);
  if (nas.variant != NAS_ARMCI_NB) halo_arrived();
}

static void rprj3(level_t *f, level_t *cl) {
  /* The coarse planes whose centre lies on this rank's fine planes; coarse
   * plane j reads fine planes 2j-1..2j+1, so only the last one reads the
   * fine upper ghost, and no rank reads the lower one: the coarse residual
   * is read by the next rprj3 and then overwritten by resid_psinv, which
   * reads only its centre. */
  const int lo = f->z0 / 2 + 1 - cl->z0, hi = f->z0 / 2 + f->L / 2 - cl->z0;
  op_t op = {rprj3_planes, "rprj3", cl, f, cl->r, f->r, NULL, cl->rbases, lo, hi, lo, hi - 1, HALO_UPPER};
  apply(&op);
}

static void zero(const level_t *l, double *u) {
  halo_release(u);
  memset(u, 0, sizeof(double) * plane_size(l) * l->n3);
}

/* NPB's mg3P: one V-cycle. */
static void mg3p(void) {
  for (int k = lt; k > 1; k--) rprj3(&lev[k], &lev[k - 1]);
  zero(&lev[1], lev[1].u);
  psinv(&lev[1], lev[1].r, lev[1].u, lev[1].ubases);
  for (int k = 2; k < lt; k++) {
    interp(&lev[k - 1], lev[k - 1].u, &lev[k], lev[k].u, 0);
    resid_psinv(&lev[k], lev[k].r);
  }
  interp(&lev[lt - 1], lev[lt - 1].u, &lev[lt], lev[lt].u, 1);
  resid_psinv(&lev[lt], v);
}

/* L2 norm (over the whole grid) and max norm of the top level's interior. */
static void norm2u3(const double *r, double *rnm2, double *rnmu) {
  halo_arrived();
  const double t0 = nas_wtime();
  const level_t *l = &lev[lt];
  double s = 0.0, m = 0.0;
  for (int i3 = 1; i3 <= l->L; i3++)
    for (int i2 = 1; i2 < l->n2 - 1; i2++)
      for (int i1 = 1; i1 < l->n1 - 1; i1++) {
        const double x = r[AT(l, i3, i2, i1)];
        s += x * x;
        if (fabs(x) > m) m = fabs(x);
      }
  nas_toc(nas_phase("norm2u3"), t0);
  nas_allreduce_sum(&s, 1);
  nas_allreduce_max(&m, 1);
  *rnm2 = sqrt(s / ((double)l->N * l->N * l->N));
  *rnmu = m;
}

/* ------------------------------------------------------ right-hand side */

#define MM 10

typedef struct {
  double value;
  long where;   /* global linear index of the point */
} cand_t;

/* Keeps best[0..MM-1] as the MM most extreme values seen, best[0] the least
 * extreme (NPB's bubble). sign = +1: largest; -1: smallest. */
static void offer(cand_t *best, double value, long where, int sign) {
  if (sign * value <= sign * best[0].value) return;
  best[0] = (cand_t){value, where};
  for (int i = 0; i < MM - 1 && sign * best[i].value > sign * best[i + 1].value; i++) {
    const cand_t t = best[i];
    best[i] = best[i + 1];
    best[i + 1] = t;
  }
}

/* NPB's zran3: v = 0 except +1 at the MM largest and -1 at the MM smallest
 * values of NPB's random field over the whole grid. */
static void zran3(double *z, void **zbases) {
  /* The allgather below counts notifications from the same ranks as the
   * halo: the two must not interleave. */
  halo_arrived();
  const level_t *l = &lev[lt];
  const long n = l->N;
  const double amult = 1220703125.0;
  const double a1 = randlc_power(amult, n), a2 = randlc_power(amult, n * n);
  zero(l, z);
  double x0 = 314159265.0;
  randlc(&x0, randlc_power(amult, n * n * l->z0));
  for (int i3 = 1; i3 <= l->L; i3++) {
    double x1 = x0;
    for (int i2 = 1; i2 <= n; i2++) {
      double xx = x1;
      vranlc((int)n, &xx, amult, z + AT(l, i3, i2, 1));
      randlc(&x1, a1);
    }
    randlc(&x0, a2);
  }
  cand_t big[MM], small[MM];
  for (int i = 0; i < MM; i++) {
    big[i] = (cand_t){0.0, -1};
    small[i] = (cand_t){1.0, -1};
  }
  for (int i3 = 1; i3 <= l->L; i3++)
    for (int i2 = 1; i2 <= n; i2++)
      for (int i1 = 1; i1 <= n; i1++) {
        const double x = z[AT(l, i3, i2, i1)];
        const long where = ((long)(l->z0 + i3 - 1) * n + (i2 - 1)) * n + (i1 - 1);
        offer(big, x, where, +1);
        offer(small, x, where, -1);
      }
  /* Every rank's candidates to every rank, then the global choice. */
  void **bases;
  const int per = 4 * MM;
  double *all = nas_alloc((size_t)per * nas.np, &bases);
  for (int i = 0; i < MM; i++) {
    double *mine = all + (size_t)per * nas.me;
    mine[4 * i] = big[i].value;
    mine[4 * i + 1] = (double)big[i].where;
    mine[4 * i + 2] = small[i].value;
    mine[4 * i + 3] = (double)small[i].where;
  }
  long offs[64], lens[64];
  for (int r = 0; r < nas.np; r++) {
    offs[r] = (long)per * r;
    lens[r] = per;
  }
  nas_allgather_start(all, bases, offs, lens);
  nas_allgather_finish();
  for (int i = 0; i < MM; i++) {
    big[i] = (cand_t){0.0, -1};
    small[i] = (cand_t){1.0, -1};
  }
  for (int r = 0; r < nas.np; r++)
    for (int i = 0; i < MM; i++) {
      const double *e = all + (size_t)per * r + 4 * i;
      offer(big, e[0], (long)e[1], +1);
      offer(small, e[2], (long)e[3], -1);
    }
  nas_free(all, bases);
  zero(l, z);
  for (int i = 0; i < MM; i++) {
    const cand_t *pick[2] = {&small[i], &big[i]};
    for (int s = 0; s < 2; s++) {
      const long w = pick[s]->where;
      const long g3 = w / (n * n), g2 = (w / n) % n, g1 = w % n;
      if (g3 >= l->z0 && g3 < l->z0 + l->L) z[AT(l, g3 - l->z0 + 1, g2 + 1, g1 + 1)] = s ? 1.0 : -1.0;
    }
  }
  /* NPB's comm3 of v: the ghosts of the right-hand side. */
  for (int i3 = 1; i3 <= l->L; i3++) wrap_xy(l, z, i3);
  if (l->distributed && nas.np > 1) {
    halo_start(l, z, zbases, HALO_BOTH);
    halo_arrived();
  } else {
    wrap_z(l, z);
  }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  nas_start(argc, argv, "mg", 8);
  int nx, nit;
  double verify_value;
  switch (nas.cls) {
    case 'S': nx = 32; nit = 4; verify_value = 0.5307707005734e-04; break;
    case 'W': nx = 128; nit = 4; verify_value = 0.6467329375339e-05; break;
    case 'A': nx = 256; nit = 4; verify_value = 0.2433365309069e-05; break;
    default: nx = 256; nit = 20; verify_value = 0.1800564401355e-05; break;
  }
  a[0] = -8.0 / 3.0; a[1] = 0.0; a[2] = 1.0 / 6.0; a[3] = 1.0 / 12.0;
  if (nas.cls == 'A' || nas.cls == 'S' || nas.cls == 'W') {
    c[0] = -3.0 / 8.0; c[1] = 1.0 / 32.0; c[2] = -1.0 / 64.0; c[3] = 0.0;
  } else {
    c[0] = -3.0 / 17.0; c[1] = 1.0 / 33.0; c[2] = -1.0 / 61.0; c[3] = 0.0;
  }
  lt = 0;
  while ((1 << lt) < nx) lt++;
  for (int k = 1; k <= lt; k++) {
    level_t *l = &lev[k];
    l->N = 1 << k;
    l->n1 = l->n2 = l->N + 2;
    l->distributed = l->N >= 2 * nas.np;
    l->L = l->distributed ? l->N / nas.np : l->N;
    l->z0 = l->distributed ? nas.me * l->L : 0;
    l->n3 = l->L + 2;
    const size_t count = plane_size(l) * l->n3;
    l->u = nas_alloc(count, &l->ubases);
    l->r = nas_alloc(count, &l->rbases);
  }
  v = nas_alloc(plane_size(&lev[lt]) * lev[lt].n3, &vbases);
  if (nas.me == 0) {
    printf("\n\n NAS Parallel Benchmarks (libarmci kernels) - MG Benchmark\n\n");
    printf(" Size: %4dx%4dx%4d  (class %c)\n Iterations: %d\n Number of processes: %d\n Variant: %s\n\n", nx, nx,
           nx, nas.cls, nit, nas.np, nas_variant_name());
  }
  level_t *top = &lev[lt];
  double rnm2, rnmu;

  /* One untimed V-cycle (page faults, caches), as NPB does, then a fresh
   * start for the timed run. */
  zero(top, top->u);
  zran3(v, vbases);
  resid(top, top->u, v, top->r, top->rbases);
  mg3p();
  resid(top, top->u, v, top->r, top->rbases);
  zero(top, top->u);
  zran3(v, vbases);

  nas_barrier();
  nas_timers_reset();
  const double t0 = nas_wtime();
  resid(top, top->u, v, top->r, top->rbases);
  norm2u3(top->r, &rnm2, &rnmu);
  for (int it = 1; it <= nit; it++) {
    if (nas.me == 0) printf("  iter %3d\n", it);
    mg3p();
    resid(top, top->u, v, top->r, top->rbases);
  }
  norm2u3(top->r, &rnm2, &rnmu);
  double t = nas_wtime() - t0;
  const double comm = nas_comm_seconds;
  nas_allreduce_max(&t, 1);

  const double err = fabs(rnm2 - verify_value) / verify_value;
  const int ok = err <= 1.0e-8;
  if (nas.me == 0) {
    printf("\n Benchmark completed\n");
    if (ok) printf(" VERIFICATION SUCCESSFUL\n L2 Norm is %20.13e\n Error is   %20.13e\n", rnm2, err);
    else printf(" VERIFICATION FAILED\n L2 Norm is             %20.13e\n The correct L2 Norm is %20.13e\n", rnm2,
                verify_value);
  }
  const double mops = t > 0 ? 58.0 * nit * (double)nx * nx * nx / t / 1e6 : 0.0;
  char size[48];
  snprintf(size, sizeof size, "%dx%4dx%4d", nx, nx, nx);
  const int status = nas_report("MG", size, nit, t, mops, ok, comm);
  halo_release(NULL);
  for (int k = 1; k <= lt; k++) {
    nas_free(lev[k].u, lev[k].ubases);
    nas_free(lev[k].r, lev[k].rbases);
  }
  nas_free(v, vbases);
  nas_finish();
  return status;
}
