/*
 * mp_errors CASE: rank 0 makes one bad call, which must end the job with a
 * message naming the call, the argument and the rank. Reaching the final
 * "survived" line is a failure; run-mp-tests.sh checks the exit status and
 * the message.
 *
 * Cases: range (proc out of range), negsize (negative size), outside (remote
 * address just past the end of the target's region), straddle (a Put that
 * starts inside the region and runs past its end), null (NULL source),
 * uninit (Put before ARMCI_Init), badtype (Acc with data type 42),
 * badhandle (ARMCI_Wait on a handle that ARMCI_INIT_HANDLE never saw),
 * badtag (ARMCI_Test on one that holds no request but lacks the marker),
 * badop (ARMCI_Rmw with op 7), misaligned (ARMCI_Rmw of a long at an address
 * that is not 8-byte aligned), mutexrange (ARMCI_Lock of a mutex index the
 * target did not create), notheld (ARMCI_Unlock of a mutex this rank does not
 * hold), createtwice (ARMCI_Create_mutexes without ARMCI_Destroy_mutexes),
 * stridelevels (ARMCI_PutS with 9 stride levels), negstride (ARMCI_PutS with
 * a negative destination stride), straddles (ARMCI_PutS with no stride
 * levels, one piece running past the region's end), accpiece (ARMCI_AccS of
 * doubles with no stride levels and a 12-byte piece), vecneg (ARMCI_PutV with negative bytes in
 * its second segment list, after a good first one: nothing may be written),
 * grouprank (ARMCI_Absolute_id of a rank outside the group), groupfreed
 * (ARMCI_Group_size of a freed group), msgop (armci_msg_dgop with op
 * "sqrt"), msglogical (armci_msg_dgop with "&&": integers only), msgtype
 * (armci_msg_gop_scope with type 9), freed (ARMCI_Put into an allocation
 * freed right after a good put to it), shrunk (the same, after a smaller
 * allocation that may take the freed one's base: the put lands past its
 * end).
 * Windows (over rank 1's watched region, ARMCI_Win_create): winepoch
 * (ARMCI_Win_put outside any epoch), winunlock (ARMCI_Win_unlock without
 * a lock), winrank (ARMCI_Win_lock of a rank outside the window's group),
 * windisp (ARMCI_Win_put under a lock that runs past the target's window),
 * winpscw (ARMCI_Win_start towards rank 1, which never posts: mismatched
 * PSCW groups, reported after ARMCI_WIN_SYNC_TIMEOUT, set to 2 s here),
 * winop (ARMCI_Win_acc with ARMCI_WIN_MAX on double complex, which MPI
 * does not order), winfence (ARMCI_Win_fence that rank 1 never joins,
 * reported after the same timeout), winfencedeferred and winfencecounted
 * (the same under ARMCI_WIN_FENCE=deferred and counted, whose reduction and
 * barrier have the same timeout).
 * Mismatched PSCW groups found without the timeout (ARMCI_WIN_SYNC_TIMEOUT
 * is 600 s for these, so only the prompt check ends them within the
 * runner's limit): winpscwfence (rank 0 waits in ARMCI_Win_start towards
 * rank 1, which calls ARMCI_Win_fence instead of posting), winpscwcycle
 * (ranks 0 and 1 each start towards the other, neither posts), winnocheck
 * (rank 0 starts towards rank 1 under ARMCI_WIN_MODE_NOCHECK and completes
 * without any post of rank 1; rank 1's next ARMCI_Win_wait names it).
 */
#include "mp_common.h"

#include "armci_win.h"

enum { REGION = 4096, WATCH_SECONDS = 5 };

/* The cases, and what the message of each must name: "call:argument",
 * then with two ranks what it must also say (the step's partner is then
 * the absent rank 1 itself). run-mp-tests.sh runs them from this table
 * (mp_errors --list). */
static const struct {
  const char *name, *expect, *expect_np2;
} cases[] = {
    {"range", "ARMCI_Put:proc", ""},
    {"negsize", "ARMCI_Put:bytes", ""},
    {"outside", "ARMCI_Put:dst", ""},
    {"straddle", "ARMCI_Put:dst|bytes", ""},
    {"null", "ARMCI_Put:src", ""},
    {"uninit", "ARMCI_Put:", ""},
    {"badtype", "ARMCI_Acc:datatype", ""},
    {"badhandle", "ARMCI_Wait:", ""},
    {"badtag", "ARMCI_Test:handle", ""},
    {"badop", "ARMCI_Rmw:op", ""},
    {"misaligned", "ARMCI_Rmw:prem", ""},
    {"mutexrange", "ARMCI_Lock:mutex", ""},
    {"notheld", "ARMCI_Unlock:mutex", ""},
    {"createtwice", "ARMCI_Create_mutexes:", ""},
    {"stridelevels", "ARMCI_PutS:stride_levels", ""},
    {"negstride", "ARMCI_PutS:dst_stride_ar", ""},
    {"straddles", "ARMCI_PutS:dst_ptr", ""},
    {"accpiece", "ARMCI_AccS:count", ""},
    {"vecneg", "ARMCI_PutV:bytes", ""},
    {"grouprank", "ARMCI_Absolute_id:group_rank", ""},
    {"groupfreed", "ARMCI_Group_size:group", ""},
    {"msgop", "armci_msg_dgop:op", ""},
    {"msglogical", "armci_msg_dgop:op:needs an integer type", ""},
    {"msgtype", "armci_msg_gop_scope:type", ""},
    {"freed", "ARMCI_Put:dst", ""},
    {"shrunk", "ARMCI_Put:dst", ""},
    {"winepoch", "ARMCI_Win_put:rank", ""},
    {"winunlock", "ARMCI_Win_unlock:rank", ""},
    {"winrank", "ARMCI_Win_lock:rank", ""},
    {"windisp", "ARMCI_Win_put:disp", ""},
    {"winpscw", "ARMCI_Win_start:group", ""},
    {"winop", "ARMCI_Win_acc:op", ""},
    {"winfence", "ARMCI_Win_fence:win", "window rank 1 (world rank 1) did not reach the fence"},
    {"winpscwfence", "ARMCI_Win_fence:win", ""},
    {"winpscwcycle", "ARMCI_Win_start:group", ""},
    {"winnocheck", "ARMCI_Win_wait:group", ""},
    {"winfencedeferred", "ARMCI_Win_fence:win", "waits on window rank 1 (world rank 1)"},
    {"winfencecounted", "ARMCI_Win_fence:win", "waits on window rank 1 (world rank 1)"},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* The rank before ARMCI_Init, from the launcher's environment. */
static int launcher_rank(void) {
  const char *s = getenv("PMIX_RANK");
  if (!s) s = getenv("OMPI_COMM_WORLD_RANK");
  return s ? atoi(s) : 0;
}

/* The bad call targets rank 1; rank 1 watches its whole region for a while,
 * since "nothing is written" is only observable there, before the launcher
 * ends the job. */
static void watch_region(const volatile unsigned char *region) {
  double end = mp_now() + WATCH_SECONDS;
  while (mp_now() < end) {
    for (size_t i = 0; i < REGION; i++)
      if (region[i] != 0xA5) {
        fprintf(stderr, "mp_errors: rank 1's region was written by the bad call: byte %zu is 0x%02x\n",
                i, region[i]);
        fflush(stderr);
        exit(3);
      }
  }
}

/* Collective: an allocation of 2 * REGION that rank 0 puts to (so that the
 * last region it found at rank 1 is this one), then frees; where that put
 * went, in rank 1's part. */
static char *put_then_free(int me, int np, const char *src) {
  void **big = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(big, 2 * REGION));
  char *stale = (char *)big[1] + 2 * REGION - 8;
  if (me == 0) MP_CHECK_INT(0, ARMCI_Put((void *)src, stale, 8, 1));
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(big[me]));
  free(big);
  return stale;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < NCASES; i++) printf("%s\t%s\t%s\n", cases[i].name, cases[i].expect, cases[i].expect_np2);
    return 0;
  }
  int known = 0;
  if (argc == 2)
    for (int i = 0; i < NCASES; i++) known |= strcmp(argv[1], cases[i].name) == 0;
  if (!known) {
    fprintf(stderr, "usage: %s --list | CASE, one of:", argv[0]);
    for (int i = 0; i < NCASES; i++) fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  const char *c = argv[1];
  char src[16] = "0123456789abcde";

  if (strcmp(c, "uninit") == 0 && launcher_rank() == 0) {
    char dst[16];
    ARMCI_Put(src, dst, 8, 0);
    printf("survived uninit rank 0\n");
    return 0;
  }

  const int win_case = strncmp(c, "win", 3) == 0;
  const int prompt_case = win_case && (strcmp(c, "winpscwfence") == 0 || strcmp(c, "winpscwcycle") == 0 ||
                                       strcmp(c, "winnocheck") == 0);
  if (win_case) setenv("ARMCI_WIN_SYNC_TIMEOUT", prompt_case ? "600" : "2", 1);
  if (strcmp(c, "winfencedeferred") == 0) setenv("ARMCI_WIN_FENCE", "deferred", 1);
  if (strcmp(c, "winfencecounted") == 0) setenv("ARMCI_WIN_FENCE", "counted", 1);
  mp_init(&argc, &argv);
  int me = mp_me, np = mp_np;
  MP_CHECK(np >= 2, "needs at least 2 processes, has %d", np);
  void **base = malloc(sizeof(void *) * (size_t)np);
  char *stale = NULL;
  if (strcmp(c, "shrunk") == 0) stale = put_then_free(me, np, src);
  MP_CHECK_INT(0, ARMCI_Malloc(base, REGION));
  if (strcmp(c, "shrunk") == 0 && me == 0)
    printf("shrunk: the new allocation %s the freed one's base\n",
           (char *)base[1] == stale + 8 - 2 * REGION ? "took" : "did not take");
  if (strcmp(c, "freed") == 0) stale = put_then_free(me, np, src);
  memset(base[me], 0xA5, REGION);
  /* Collective, so every rank takes part: 2 mutexes per rank. */
  int mutex_case = strcmp(c, "mutexrange") == 0 || strcmp(c, "notheld") == 0 || strcmp(c, "createtwice") == 0;
  if (mutex_case) ARMCI_Create_mutexes(2);
  /* Collective too: a group of ranks 0 and 1, freed at once for groupfreed. */
  ARMCI_Group group;
  int pair[2] = {0, 1};
  ARMCI_Group_create(2, pair, &group);
  if (strcmp(c, "groupfreed") == 0) ARMCI_Group_free(&group);
  /* Every one-rank group of the pair, made by every rank in the same order. */
  ARMCI_Group single[2];
  for (int r = 0; r < 2; ++r) ARMCI_Group_create(1, &r, &single[r]);
  /* Collective: a window over every rank's watched region. */
  ARMCI_Win win = NULL;
  if (win_case) MP_CHECK_INT(0, ARMCI_Win_create(base[me], REGION, 1, NULL, &win));
  ARMCI_Barrier();

  if (me == 0) {
    char *end1 = (char *)base[1] + REGION;
    if (strcmp(c, "range") == 0) {
      ARMCI_Put(src, base[0], 8, np + 3);
    } else if (strcmp(c, "negsize") == 0) {
      ARMCI_Put(src, base[1], -8, 1);
    } else if (strcmp(c, "outside") == 0) {
      ARMCI_Put(src, end1, 8, 1);
    } else if (strcmp(c, "straddle") == 0) {
      ARMCI_Put(src, end1 - 4, 8, 1);
    } else if (strcmp(c, "null") == 0) {
      ARMCI_Put(NULL, base[1], 8, 1);
    } else if (strcmp(c, "badtype") == 0) {
      double scale = 1.0;
      ARMCI_Acc(42, &scale, src, base[1], 8, 1);
    } else if (strcmp(c, "badhandle") == 0) {
      /* Stack garbage, made deterministic so that it never happens to look
       * like an initialised handle. */
      armci_hdl_t h;
      memset(&h, 0xC3, sizeof h);
      ARMCI_Wait(&h);
    } else if (strcmp(c, "badtag") == 0) {
      /* Holds no request (-1) but lacks ARMCI_INIT_HANDLE's marker: the
       * empty-handle return of Wait and Test must not take it. */
      armci_hdl_t h;
      memset(&h, 0xFF, sizeof h);
      ARMCI_Test(&h);
    } else if (strcmp(c, "badop") == 0) {
      long v = 1;
      ARMCI_Rmw(7, &v, base[1], 1, 1);
    } else if (strcmp(c, "misaligned") == 0) {
      long v = 1;
      ARMCI_Rmw(ARMCI_SWAP_LONG, &v, (char *)base[1] + 4, 0, 1);
    } else if (strcmp(c, "mutexrange") == 0) {
      ARMCI_Lock(2, 1);
    } else if (strcmp(c, "notheld") == 0) {
      ARMCI_Lock(0, 1);
      ARMCI_Unlock(1, 1);
    } else if (strcmp(c, "createtwice") == 0) {
      ARMCI_Create_mutexes(2);
    } else if (strcmp(c, "stridelevels") == 0) {
      int stride[9] = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
      int count[10] = {2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
      ARMCI_PutS(src, stride, base[1], stride, count, 9, 1);
    } else if (strcmp(c, "negstride") == 0) {
      /* The first piece would land inside the region; the second before it. */
      int src_stride[1] = {4}, dst_stride[1] = {-4}, count[2] = {4, 2};
      ARMCI_PutS(src, src_stride, (char *)base[1] + 64, dst_stride, count, 1, 1);
    } else if (strcmp(c, "straddles") == 0) {
      int stride[1] = {8}, count[1] = {8};
      ARMCI_PutS(src, stride, end1 - 4, stride, count, 0, 1);
    } else if (strcmp(c, "accpiece") == 0) {
      int stride[1] = {12}, count[1] = {12};
      double scale = 1.0;
      ARMCI_AccS(ARMCI_ACC_DBL, &scale, src, stride, base[1], stride, count, 0, 1);
    } else if (strcmp(c, "vecneg") == 0) {
      void *s[2] = {src, src + 8}, *d[2] = {base[1], (char *)base[1] + 64};
      armci_giov_t iov[2] = {{s, d, 8, 2}, {s, d, -8, 2}};
      ARMCI_PutV(iov, 2, 1);
    } else if (strcmp(c, "grouprank") == 0) {
      ARMCI_Absolute_id(&group, 2);
    } else if (strcmp(c, "groupfreed") == 0) {
      int n;
      ARMCI_Group_size(&group, &n);
    } else if (strcmp(c, "msgop") == 0) {
      double x = 1;
      armci_msg_dgop(&x, 1, "sqrt");
    } else if (strcmp(c, "msglogical") == 0) {
      double x = 1;
      armci_msg_dgop(&x, 1, "&&");
    } else if (strcmp(c, "msgtype") == 0) {
      double x = 1;
      armci_msg_gop_scope(SCOPE_ALL, &x, 1, "+", 9);
    } else if (strcmp(c, "freed") == 0 || strcmp(c, "shrunk") == 0) {
      ARMCI_Put(src, stale, 8, 1);
    } else if (strcmp(c, "winepoch") == 0) {
      ARMCI_Win_put(src, 8, 1, 0, win);
    } else if (strcmp(c, "winunlock") == 0) {
      ARMCI_Win_unlock(1, win);
    } else if (strcmp(c, "winrank") == 0) {
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, np, 0, win);
    } else if (strcmp(c, "windisp") == 0) {
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 1, 0, win);
      ARMCI_Win_put(src, 8, 1, REGION - 4, win);
    } else if (strcmp(c, "winpscw") == 0) {
      ARMCI_Group one;
      int target = 1;
      ARMCI_Group_create(1, &target, &one);
      ARMCI_Win_start(&one, 0, win);
    } else if (strcmp(c, "winop") == 0) {
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 1, 0, win);
      ARMCI_Win_acc(ARMCI_ACC_DCP, ARMCI_WIN_MAX, src, 16, 1, 0, win);
    } else if (strcmp(c, "winfence") == 0 || strcmp(c, "winfencedeferred") == 0 ||
               strcmp(c, "winfencecounted") == 0) {
      ARMCI_Win_fence(0, win);
    } else if (strcmp(c, "winpscwfence") == 0 || strcmp(c, "winpscwcycle") == 0) {
      ARMCI_Win_start(&single[1], 0, win);
    } else if (strcmp(c, "winnocheck") == 0) {
      ARMCI_Win_start(&single[1], ARMCI_WIN_MODE_NOCHECK, win);
      ARMCI_Win_complete(win);
    }
    /* The error may be detected only once the operation completes. */
    ARMCI_Fence(1);
  } else if (me == 1 && strcmp(c, "winpscwfence") == 0) {
    ARMCI_Win_fence(0, win);
  } else if (me == 1 && strcmp(c, "winpscwcycle") == 0) {
    ARMCI_Win_start(&single[0], 0, win);
  } else if (me == 1 && strcmp(c, "winnocheck") == 0) {
    /* Exposure epochs to itself only, for as long as the watch would last:
     * rank 0's completion count arrives during one of them. */
    double end = mp_now() + WATCH_SECONDS;
    while (mp_now() < end) {
      ARMCI_Win_post(&single[1], 0, win);
      ARMCI_Win_start(&single[1], 0, win);
      ARMCI_Win_complete(win);
      ARMCI_Win_wait(win);
    }
  } else if (me == 1) {
    watch_region(base[1]);
  }
  ARMCI_Barrier();
  printf("survived %s rank %d\n", c, me);
  fflush(stdout);
  ARMCI_Free(base[me]);
  ARMCI_Finalize();
  return 0;
}
