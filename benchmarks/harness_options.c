/* The benchmark harness's options (see harness.h): parsing against a table
 * of struct bench_opt, range checks, the usage text with the defaults.
 * Compiled with harness.c into every benchmark. */
#define _GNU_SOURCE /* strtok_r, getopt_long */

#include "harness.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>

/* -------------------------------------------------------------- options */

long parse_bytes(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v < 0)
    return -1;
  int shift = 0;
  if (*end == 'k' || *end == 'K')
    shift = 10, end++;
  else if (*end == 'm' || *end == 'M')
    shift = 20, end++;
  else if (*end == 'g' || *end == 'G')
    shift = 30, end++;
  if (shift && *end == 'i')
    end++;
  if (*end == 'B' || *end == 'b')
    end++;
  if (*end || v > (LONG_MAX >> shift))
    return -1;
  return v << shift;
}

const char *format_bytes(long n, char *buf, size_t len) {
  static const struct {
    const char *unit;
    int shift;
  } units[] = {{"G", 30}, {"M", 20}, {"K", 10}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (n >= (1L << units[i].shift) && n % (1L << units[i].shift) == 0) {
      snprintf(buf, len, "%ld%s", n >> units[i].shift, units[i].unit);
      return buf;
    }
  snprintf(buf, len, "%ld", n);
  return buf;
}

static int parse_whole(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

static int parse_real(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int choice_index(const char *const *choices, const char *s) {
  for (int i = 0; choices[i]; i++)
    if (!strcmp(choices[i], s))
      return i;
  return -1;
}

static void join_choices(const char *const *choices, const char *sep, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; choices[i] && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? sep : "", choices[i]);
}

/* What the option takes, for the message about a bad value. */
static void describe_range(const struct bench_opt *o, char *buf, size_t len) {
  char lo[32], hi[32], names[160];
  switch (o->type) {
  case OPT_INT:
  case OPT_LONG:
    snprintf(buf, len, "a whole number from %.0f to %.0f", o->lo, o->hi);
    break;
  case OPT_BYTES:
    snprintf(buf, len, "a size from %s to %s (K/M/G suffixes)", format_bytes((long)o->lo, lo, sizeof lo),
             format_bytes((long)o->hi, hi, sizeof hi));
    break;
  case OPT_LIST:
    snprintf(buf, len, "a comma list of at most %d sizes from %s to %s (K/M suffixes)", o->max_count,
             format_bytes((long)o->lo, lo, sizeof lo), format_bytes((long)o->hi, hi, sizeof hi));
    break;
  case OPT_DOUBLE:
    snprintf(buf, len, "a number from %g to %g", o->lo, o->hi);
    break;
  case OPT_MS:
    snprintf(buf, len, "milliseconds from %g to %g", o->lo, o->hi);
    break;
  case OPT_CHOICE:
    join_choices(o->choices, ", ", names, sizeof names);
    snprintf(buf, len, "one of %s", names);
    break;
  case OPT_SET:
    join_choices(o->choices, ",", names, sizeof names);
    snprintf(buf, len, "a comma list of %s (or all)", names);
    break;
  default:
    snprintf(buf, len, "a value");
    break;
  }
}

/* Stores the option's value; -1 when it is not one the option takes. */
static int set_value(const struct bench_opt *o, const char *arg) {
  long l;
  double d;
  switch (o->type) {
  case OPT_FLAG:
    *(int *)o->value = 1;
    return 0;
  case OPT_INT:
  case OPT_LONG:
    if (parse_whole(arg, &l) || l < o->lo || l > o->hi)
      return -1;
    if (o->type == OPT_INT)
      *(int *)o->value = (int)l;
    else
      *(long *)o->value = l;
    return 0;
  case OPT_BYTES:
    l = parse_bytes(arg);
    if (l < o->lo || l > o->hi)
      return -1;
    *(long *)o->value = l;
    return 0;
  case OPT_DOUBLE:
  case OPT_MS:
    if (parse_real(arg, &d) || d < o->lo || d > o->hi)
      return -1;
    *(double *)o->value = o->type == OPT_MS ? d * 1e-3 : d;
    return 0;
  case OPT_LIST: {
    char buf[512];
    long *out = o->value;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      l = parse_bytes(tok);
      if (l < o->lo || l > o->hi || n == o->max_count)
        return -1;
      out[n++] = l;
    }
    if (n == 0)
      return -1;
    *o->count = n;
    return 0;
  }
  case OPT_CHOICE: {
    int i = choice_index(o->choices, arg);
    if (i < 0)
      return -1;
    *(int *)o->value = i;
    return 0;
  }
  case OPT_SET: {
    char buf[256];
    int mask = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (!strcmp(tok, "all") || !strcmp(tok, "both")) {
        for (int i = 0; o->choices[i]; i++)
          mask |= 1 << i;
        continue;
      }
      int i = choice_index(o->choices, tok);
      if (i < 0)
        return -1;
      mask |= 1 << i;
    }
    if (!mask)
      return -1;
    *(int *)o->value = mask;
    return 0;
  }
  case OPT_STRING:
    *(const char **)o->value = arg;
    return 0;
  }
  return -1;
}

/* The value an option holds now, as the usage text shows its default. */
static void format_value(const struct bench_opt *o, char *buf, size_t len) {
  char one[32];
  buf[0] = '\0';
  switch (o->type) {
  case OPT_FLAG:
    snprintf(buf, len, "%s", *(int *)o->value ? "on" : "");
    break;
  case OPT_INT:
    snprintf(buf, len, "%d", *(int *)o->value);
    break;
  case OPT_LONG:
    snprintf(buf, len, "%ld", *(long *)o->value);
    break;
  case OPT_BYTES:
    format_bytes(*(long *)o->value, buf, len);
    break;
  case OPT_DOUBLE:
    snprintf(buf, len, "%g", *(double *)o->value);
    break;
  case OPT_MS:
    snprintf(buf, len, "%g", *(double *)o->value * 1e3);
    break;
  case OPT_LIST: {
    size_t used = 0;
    for (int i = 0; i < *o->count && used < len; i++)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                               format_bytes(((long *)o->value)[i], one, sizeof one));
    break;
  }
  case OPT_CHOICE:
    snprintf(buf, len, "%s", o->choices[*(int *)o->value]);
    break;
  case OPT_SET: {
    size_t used = 0;
    for (int i = 0; o->choices[i] && used < len; i++)
      if (*(int *)o->value & (1 << i))
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", o->choices[i]);
    break;
  }
  case OPT_STRING:
    snprintf(buf, len, "%s", *(const char **)o->value ? *(const char **)o->value : "");
    break;
  }
}

#define MAX_OPTS 32

static void usage(FILE *f, const struct bench_opt *opts, char defaults[][128], const char *about) {
  fprintf(f, "usage: mpirun -np 2 %s [options]\n", bench_program);
  if (about)
    fprintf(f, "%s\n", about);
  fprintf(f, "options (the same long names in every benchmark of benchmarks/):\n");
  for (int i = 0; opts[i].name; i++) {
    const struct bench_opt *o = &opts[i];
    char left[64];
    if (o->letter)
      snprintf(left, sizeof left, "  -%c, --%s%s%s", o->letter, o->name, o->type == OPT_FLAG ? "" : " ",
               o->type == OPT_FLAG ? "" : o->arg);
    else
      snprintf(left, sizeof left, "      --%s%s%s", o->name, o->type == OPT_FLAG ? "" : " ",
               o->type == OPT_FLAG ? "" : o->arg);
    fprintf(f, "%-28s ", left);
    for (const char *p = o->help; *p; p++) {
      fputc(*p, f);
      if (*p == '\n')
        fprintf(f, "%-28s ", "");
    }
    if (defaults[i][0])
      fprintf(f, " (default %s)", defaults[i]);
    fputc('\n', f);
  }
  fprintf(f, "%-28s this text\n", "  -h, --help");
}

void bench_parse(int argc, char **argv, const struct bench_opt *opts, const char *about) {
  struct option longs[MAX_OPTS + 2];
  char shorts[3 * MAX_OPTS + 2];
  char defaults[MAX_OPTS][128];
  int n = 0, s = 0;
  shorts[s++] = ':'; /* a missing value is reported as such */
  for (; opts[n].name; n++) {
    if (n == MAX_OPTS)
      die("bench_parse: more than %d options", MAX_OPTS);
    const int takes_value = opts[n].type != OPT_FLAG;
    longs[n] = (struct option){opts[n].name, takes_value ? required_argument : no_argument, NULL,
                               opts[n].letter ? opts[n].letter : 256 + n};
    if (opts[n].letter) {
      shorts[s++] = (char)opts[n].letter;
      if (takes_value)
        shorts[s++] = ':';
    }
    format_value(&opts[n], defaults[n], sizeof defaults[n]);
  }
  longs[n] = (struct option){"help", no_argument, NULL, 'h'};
  longs[n + 1] = (struct option){NULL, 0, NULL, 0};
  shorts[s++] = 'h';
  shorts[s] = '\0';

  int code = -1, opt, idx;
  opterr = 0;
  while (code < 0 && (opt = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
    if (opt == 'h') {
      if (me == 0)
        usage(stdout, opts, defaults, about);
      code = 0;
      break;
    }
    const struct bench_opt *o = NULL;
    for (int i = 0; i < n && !o; i++)
      if ((opts[i].letter ? opts[i].letter : 256 + i) == opt)
        o = &opts[i];
    if (!o) {
      if (me == 0) {
        if (opt == ':')
          fprintf(stderr, "%s: %s needs a value\n", bench_program, argv[optind - 1]);
        else
          fprintf(stderr, "%s: unknown option '%s'\n", bench_program, argv[optind - 1]);
        usage(stderr, opts, defaults, about);
      }
      code = 2;
      break;
    }
    if (set_value(o, optarg) != 0) {
      if (me == 0) {
        char range[256];
        describe_range(o, range, sizeof range);
        if (o->letter)
          fprintf(stderr, "%s: -%c (--%s) needs %s, got '%s'\n", bench_program, o->letter, o->name, range,
                  optarg);
        else
          fprintf(stderr, "%s: --%s needs %s, got '%s'\n", bench_program, o->name, range, optarg);
      }
      code = 2;
      break;
    }
    if (o->given)
      *o->given = 1;
  }
  if (code < 0 && optind < argc) {
    if (me == 0) {
      fprintf(stderr, "%s: unexpected argument '%s'\n", bench_program, argv[optind]);
      usage(stderr, opts, defaults, about);
    }
    code = 2;
  }
  if (code < 0)
    return;
  bench_end();
  exit(code);
}

void bench_begin(int *argc, char ***argv, const char *program, const struct bench_opt *opts, const char *about,
                 int min_procs) {
  bench_start(argc, argv, program);
  bench_parse(*argc, *argv, opts, about);
  if (min_procs > 1)
    bench_need_procs(min_procs);
}
