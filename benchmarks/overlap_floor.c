/* The most overlap a verbs device allows here, with no library: one
 * process, two RC queue pairs on one device connected to each other, and
 * overlap_bench's measurement (t_comm, compute, t_total) around raw
 * RDMA writes and reads. On rdma_rxe the "NIC" is kernel work on some CPU
 * of the machine; this program shows how much of it a second CPU can take
 * off the computing one at best, so that overlap_bench's figures over
 * verbs can be read against it (benchmarks/verbs_vm_overlap.sh PART=floor).
 *
 * The computing thread hands each transfer to a poster thread, as the
 * library hands an offloaded transfer to its helper. Posters:
 *   block  waits on an eventfd for work and on the completion channel for
 *          the completion (what the library's helper does), pinned to a
 *          CPU other than the computing thread's;
 *   spin   busy-polls for work and for the completion, pinned likewise;
 *   main   no poster: the computing thread posts, computes, then polls
 *          (what a library without a helper does).
 * overlap_pct = 100 * (t_comm + compute - t_total) / min(t_comm, compute),
 * clipped to 0..100, t_comm being the transfer posted and reaped by the
 * computing thread with nothing in between, the compute calibrated to it:
 * a poster's hand-over latency (waking it, its post) is the part it
 * cannot hide. Each sample
 * interleaves short batches of the three; the table gives the median and
 * the spread of the samples.
 *
 * A second process can share the machine, as the idle target rank of
 * overlap_bench does (-n): "yield" calls sched_yield in a loop, as a rank
 * waiting in ARMCI_Barrier does for its first milliseconds; "nap" sleeps
 * 50 us at a time, as it does later; "none" (default) is no process.
 *
 * usage: overlap_floor [-d DEVICE] [-g GID_INDEX] [-s SIZES] [-r SAMPLES]
 *                      [-p block,spin,main] [-o get,put] [-n none|yield|nap]
 * prints a table, then CSV rows:
 *   floor,<op>,<poster>,<bytes>,<t_comm_us>,<compute_us>,<t_total_us>,
 *   <overlap median>,<min>,<max>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#include "bench_kernel.h"

enum { kMaxSizes = 16, kMaxSamples = 64, kBatch = 4 };
enum poster { POSTER_BLOCK, POSTER_SPIN, POSTER_MAIN };
static const char *const poster_names[] = {"block", "spin", "main"};

static void die(const char *what, int err) {
  fprintf(stderr, "overlap_floor: %s: %s\n", what, strerror(err));
  exit(1);
}

struct rig {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_comp_channel *channel;
  struct ibv_cq *cq;
  struct ibv_qp *origin, *target;
  struct ibv_mr *local_mr, *remote_mr;
  unsigned char *local, *remote;
  size_t max_bytes;
  /* The transfer the poster is to run next. */
  int is_get;
  size_t bytes;
  enum poster poster;
  int kick;              /* eventfd: work for a blocking poster */
  _Atomic long wanted;   /* transfers asked for (0 = stop when negative) */
  _Atomic long finished; /* transfers completed */
  int main_cpu, poster_cpu;
};

static void post(struct rig *r) {
  struct ibv_sge sge = {(uintptr_t)r->local, (uint32_t)r->bytes, r->local_mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = r->is_get ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uintptr_t)r->remote;
  wr.wr.rdma.rkey = r->remote_mr->rkey;
  int err = ibv_post_send(r->origin, &wr, &bad);
  if (err)
    die("ibv_post_send", err);
}

static void check_wc(const struct ibv_wc *wc) {
  if (wc->status != IBV_WC_SUCCESS) {
    fprintf(stderr, "overlap_floor: completion failed: %s\n", ibv_wc_status_str(wc->status));
    exit(1);
  }
}

static void reap_spinning(struct rig *r) {
  struct ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(r->cq, 1, &wc)) == 0) {
  }
  if (n < 0)
    die("ibv_poll_cq", EIO);
  check_wc(&wc);
}

/* Armed, then asleep on the completion channel until the device reports. */
static void reap_blocking(struct rig *r) {
  struct ibv_wc wc;
  for (;;) {
    int n = ibv_poll_cq(r->cq, 1, &wc);
    if (n == 0) {
      if (ibv_req_notify_cq(r->cq, 0))
        die("ibv_req_notify_cq", errno);
      n = ibv_poll_cq(r->cq, 1, &wc);
    }
    if (n < 0)
      die("ibv_poll_cq", EIO);
    if (n > 0) {
      check_wc(&wc);
      return;
    }
    struct ibv_cq *cq;
    void *context;
    if (ibv_get_cq_event(r->channel, &cq, &context))
      die("ibv_get_cq_event", errno);
    ibv_ack_cq_events(cq, 1);
  }
}

static void pin(pthread_t thread, int cpu) {
  if (cpu < 0)
    return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int err = pthread_setaffinity_np(thread, sizeof set, &set);
  if (err)
    die("pthread_setaffinity_np", err);
}

static void *poster_loop(void *arg) {
  struct rig *r = arg;
  long served = atomic_load_explicit(&r->finished, memory_order_acquire);
  for (;;) {
    long wanted;
    if (r->poster == POSTER_BLOCK) {
      while ((wanted = atomic_load_explicit(&r->wanted, memory_order_acquire)) == served) {
        uint64_t count;
        if (read(r->kick, &count, sizeof count) < 0 && errno != EINTR)
          die("read of the eventfd", errno);
      }
    } else {
      while ((wanted = atomic_load_explicit(&r->wanted, memory_order_acquire)) == served) {
      }
    }
    if (wanted < 0)
      return NULL;
    post(r);
    if (r->poster == POSTER_BLOCK)
      reap_blocking(r);
    else
      reap_spinning(r);
    served = wanted;
    atomic_store_explicit(&r->finished, served, memory_order_release);
  }
}

/* The computing thread's side of one transfer. */
static void issue(struct rig *r, long seq) {
  if (r->poster == POSTER_MAIN) {
    post(r);
    return;
  }
  atomic_store_explicit(&r->wanted, seq, memory_order_release);
  if (r->poster == POSTER_BLOCK) {
    const uint64_t one = 1;
    if (write(r->kick, &one, sizeof one) != sizeof one)
      die("write of the eventfd", errno);
  }
}

static void complete(struct rig *r, long seq) {
  if (r->poster == POSTER_MAIN) {
    reap_spinning(r);
    return;
  }
  while (atomic_load_explicit(&r->finished, memory_order_acquire) != seq) {
  }
}

static long seq_counter;

/* The transfer alone, posted and reaped by the computing thread itself:
 * what a blocking call costs, and what the library's ARMCI_Wait does when
 * it finds the transfer not yet handed over. So the hand-over to the poster
 * counts against overlap here as it does in overlap_bench. */
static double time_comm(struct rig *r, long iters) {
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    post(r);
    reap_spinning(r);
  }
  return (now() - t0) / (double)iters;
}

static double time_comp(long units, long iters) {
  double t0 = now();
  for (long i = 0; i < iters; i++)
    kernel_run(units);
  return (now() - t0) / (double)iters;
}

static double time_total(struct rig *r, long units, long iters) {
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    issue(r, ++seq_counter);
    kernel_run(units);
    complete(r, seq_counter);
  }
  return (now() - t0) / (double)iters;
}

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct cell {
  double comm_us, comp_us, total_us, pct[kMaxSamples];
};

static void measure(struct rig *r, int samples, double units_per_us, struct cell *c) {
  time_comm(r, 2); /* first touch */
  double est[5];
  for (int k = 0; k < 5; k++)
    est[k] = time_comm(r, kBatch);
  qsort(est, 5, sizeof est[0], compare);
  long units = (long)(est[2] * 1e6 * units_per_us + 0.5);
  if (units < 1)
    units = 1;
  double comm[kMaxSamples], comp[kMaxSamples], total[kMaxSamples];
  for (int s = 0; s < samples; s++) {
    double t[3] = {0, 0, 0};
    for (int j = 0; j < 3; j++) { /* the order rotates from sample to sample */
      switch ((j + s) % 3) {
      case 0: t[0] = time_comm(r, kBatch); break;
      case 1: t[1] = time_comp(units, kBatch); break;
      default: t[2] = time_total(r, units, kBatch); break;
      }
    }
    double pct = 100.0 * (t[0] + t[1] - t[2]) / (t[0] < t[1] ? t[0] : t[1]);
    c->pct[s] = pct < 0 ? 0 : pct > 100 ? 100 : pct;
    comm[s] = t[0];
    comp[s] = t[1];
    total[s] = t[2];
  }
  qsort(comm, (size_t)samples, sizeof comm[0], compare);
  qsort(comp, (size_t)samples, sizeof comp[0], compare);
  qsort(total, (size_t)samples, sizeof total[0], compare);
  qsort(c->pct, (size_t)samples, sizeof c->pct[0], compare);
  c->comm_us = comm[samples / 2] * 1e6;
  c->comp_us = comp[samples / 2] * 1e6;
  c->total_us = total[samples / 2] * 1e6;
}

static void connect_qp(struct rig *r, struct ibv_qp *qp, uint32_t peer_qpn, int port, int gid_index,
                       const union ibv_gid *gid, enum ibv_mtu mtu) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = (uint8_t)port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  int err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (err)
    die("ibv_modify_qp to INIT", err);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = *gid;
  a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.port_num = (uint8_t)port;
  err = ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (err)
    die("ibv_modify_qp to RTR", err);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  err = ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC);
  if (err)
    die("ibv_modify_qp to RTS", err);
  (void)r;
}

static void open_rig(struct rig *r, const char *device, int gid_index, size_t max_bytes) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    fprintf(stderr, "overlap_floor: no verbs device\n");
    exit(1);
  }
  struct ibv_device *dev = NULL;
  for (int i = 0; i < n && !dev; i++)
    if (!device || !strcmp(ibv_get_device_name(list[i]), device))
      dev = list[i];
  if (!dev) {
    fprintf(stderr, "overlap_floor: no verbs device named %s\n", device);
    exit(1);
  }
  r->ctx = ibv_open_device(dev);
  ibv_free_device_list(list);
  if (!r->ctx)
    die("ibv_open_device", errno);
  const int port = 1;
  struct ibv_port_attr port_attr;
  union ibv_gid gid;
  if (ibv_query_port(r->ctx, port, &port_attr) || ibv_query_gid(r->ctx, port, gid_index, &gid))
    die("ibv_query_port/gid", errno);
  r->pd = ibv_alloc_pd(r->ctx);
  r->channel = ibv_create_comp_channel(r->ctx);
  if (!r->pd || !r->channel)
    die("ibv_alloc_pd/ibv_create_comp_channel", errno);
  r->cq = ibv_create_cq(r->ctx, 16, NULL, r->channel, 0);
  if (!r->cq)
    die("ibv_create_cq", errno);
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof init);
  init.send_cq = init.recv_cq = r->cq;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  r->origin = ibv_create_qp(r->pd, &init);
  r->target = ibv_create_qp(r->pd, &init);
  if (!r->origin || !r->target)
    die("ibv_create_qp", errno);
  connect_qp(r, r->origin, r->target->qp_num, port, gid_index, &gid, port_attr.active_mtu);
  connect_qp(r, r->target, r->origin->qp_num, port, gid_index, &gid, port_attr.active_mtu);
  r->max_bytes = max_bytes;
  if (posix_memalign((void **)&r->local, 4096, max_bytes) || posix_memalign((void **)&r->remote, 4096, max_bytes))
    die("posix_memalign", ENOMEM);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  r->local_mr = ibv_reg_mr(r->pd, r->local, max_bytes, access);
  r->remote_mr = ibv_reg_mr(r->pd, r->remote, max_bytes, access);
  if (!r->local_mr || !r->remote_mr)
    die("ibv_reg_mr", errno);
}

/* A get must bring the target's bytes, a put must leave the origin's there. */
static void check_data(struct rig *r, int is_get, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) {
    r->local[i] = (unsigned char)(i * 7 + 1);
    r->remote[i] = (unsigned char)(i * 13 + 5);
  }
  long seq = ++seq_counter;
  issue(r, seq);
  complete(r, seq);
  const unsigned char *want = is_get ? r->remote : r->local;
  const unsigned char *got = is_get ? r->local : r->remote;
  if (memcmp(want, got, bytes) != 0) {
    fprintf(stderr, "overlap_floor: %s of %zu bytes moved the wrong data\n", is_get ? "get" : "put", bytes);
    exit(1);
  }
}

/* The neighbour process: never returns; killed by the parent at the end. */
static void neighbour_loop(const char *kind) {
  const struct timespec nap = {0, 50 * 1000};
  for (;;) {
    if (kind[0] == 'y')
      sched_yield();
    else
      nanosleep(&nap, NULL);
  }
}

static size_t parse_size(const char *text) {
  char *end;
  double v = strtod(text, &end);
  if (*end == 'K' || *end == 'k')
    v *= 1024;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char **argv) {
  const char *device = NULL, *posters = "block,spin,main", *ops = "get,put", *neighbour = "none";
  char sizes_text[256] = "16K,64K,256K,1M";
  int gid_index = 1, samples = 15, opt;
  while ((opt = getopt(argc, argv, "d:g:s:r:p:o:n:h")) != -1) {
    switch (opt) {
    case 'd': device = optarg; break;
    case 'g': gid_index = atoi(optarg); break;
    case 's': snprintf(sizes_text, sizeof sizes_text, "%s", optarg); break;
    case 'r': samples = atoi(optarg); break;
    case 'p': posters = optarg; break;
    case 'o': ops = optarg; break;
    case 'n': neighbour = optarg; break;
    default:
      fprintf(stderr, "usage: overlap_floor [-d DEVICE] [-g GID_INDEX] [-s SIZES] [-r SAMPLES (1-%d)] "
                      "[-p block,spin,main] [-o get,put] [-n none|yield|nap]\n", kMaxSamples);
      return opt == 'h' ? 0 : 2;
    }
  }
  if (strcmp(neighbour, "none") && strcmp(neighbour, "yield") && strcmp(neighbour, "nap")) {
    fprintf(stderr, "overlap_floor: -n must be none, yield or nap\n");
    return 2;
  }
  if (samples < 1 || samples > kMaxSamples) {
    fprintf(stderr, "overlap_floor: -r must be 1-%d\n", kMaxSamples);
    return 2;
  }
  size_t sizes[kMaxSizes], max_bytes = 0;
  int nsizes = 0;
  for (char *tok = strtok(sizes_text, ","); tok && nsizes < kMaxSizes; tok = strtok(NULL, ",")) {
    sizes[nsizes] = parse_size(tok);
    if (sizes[nsizes] == 0) {
      fprintf(stderr, "overlap_floor: bad size %s\n", tok);
      return 2;
    }
    if (sizes[nsizes] > max_bytes)
      max_bytes = sizes[nsizes];
    nsizes++;
  }

  /* Forked before any verbs object exists: a child must not share them. */
  pid_t neighbour_pid = 0;
  if (strcmp(neighbour, "none")) {
    neighbour_pid = fork();
    if (neighbour_pid < 0)
      die("fork", errno);
    if (neighbour_pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* ends with the parent, however it ends */
      if (getppid() == 1)
        _exit(0);
      neighbour_loop(neighbour);
    }
  }

  struct rig r;
  memset(&r, 0, sizeof r);
  open_rig(&r, device, gid_index, max_bytes);
  r.kick = eventfd(0, EFD_CLOEXEC);
  if (r.kick < 0)
    die("eventfd", errno);

  /* The computing thread keeps the CPU it starts on; the poster gets
   * another one, as the library places its helper (ARMCI_HELPER_CPU=auto). */
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  r.main_cpu = sched_getcpu();
  r.poster_cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && r.poster_cpu < 0; c++)
    if (CPU_ISSET(c, &allowed) && c != r.main_cpu)
      r.poster_cpu = c;
  if (r.poster_cpu < 0) {
    fprintf(stderr, "overlap_floor: needs two CPUs (one computes, one posts)\n");
    return 2;
  }
  pin(pthread_self(), r.main_cpu);
  kernel_init();
  const double units_per_us = kernel_units_per_us(0.05);

  printf("# overlap_floor: raw verbs on %s, computing thread on CPU %d, poster on CPU %d, "
         "%d samples of %d iterations, neighbour process: %s\n",
         ibv_get_device_name(r.ctx->device), r.main_cpu, r.poster_cpu, samples, kBatch, neighbour);
  printf("%-4s %-6s %9s %10s %11s %11s %28s\n", "op", "poster", "bytes", "t_comm_us", "compute_us", "t_total_us",
         "overlap_pct median [min-max]");
  char csv[8192];
  size_t csv_len = 0;
  for (int p = 0; p < 3; p++) {
    if (!strstr(posters, poster_names[p]))
      continue;
    r.poster = (enum poster)p;
    pthread_t thread;
    atomic_store(&r.wanted, seq_counter);
    atomic_store(&r.finished, seq_counter);
    if (r.poster != POSTER_MAIN) {
      int err = pthread_create(&thread, NULL, poster_loop, &r);
      if (err)
        die("pthread_create", err);
      pin(thread, r.poster_cpu);
    }
    for (int o = 0; o < 2; o++) {
      const char *op = o == 0 ? "get" : "put";
      if (!strstr(ops, op))
        continue;
      r.is_get = o == 0;
      for (int s = 0; s < nsizes; s++) {
        r.bytes = sizes[s];
        check_data(&r, r.is_get, r.bytes);
        struct cell c;
        measure(&r, samples, units_per_us, &c);
        printf("%-4s %-6s %9zu %10.1f %11.1f %11.1f %14.1f [%.1f-%.1f]\n", op, poster_names[p], sizes[s], c.comm_us,
               c.comp_us, c.total_us, c.pct[samples / 2], c.pct[0], c.pct[samples - 1]);
        fflush(stdout);
        csv_len += (size_t)snprintf(csv + csv_len, sizeof csv - csv_len, "floor,%s,%s,%zu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n",
                                    op, poster_names[p], sizes[s], c.comm_us, c.comp_us, c.total_us,
                                    c.pct[samples / 2], c.pct[0], c.pct[samples - 1]);
        if (csv_len >= sizeof csv)
          csv_len = sizeof csv - 1;
      }
    }
    if (r.poster != POSTER_MAIN) {
      atomic_store_explicit(&r.wanted, -1, memory_order_release);
      const uint64_t one = 1;
      if (write(r.kick, &one, sizeof one) != sizeof one)
        die("write of the eventfd", errno);
      pthread_join(thread, NULL);
    }
  }
  if (neighbour_pid > 0) {
    kill(neighbour_pid, SIGKILL);
    waitpid(neighbour_pid, NULL, 0);
  }
  printf("%s", csv);
  printf("# kernel checksum %.6f\n", kernel_checksum());
  return 0;
}
