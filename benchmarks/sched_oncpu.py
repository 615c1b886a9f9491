#!/usr/bin/env python3
"""Time on each CPU per thread, from `perf script` output of sched:sched_switch.

    sched_oncpu.py TRACE [LABELS]

TRACE: `perf script -F comm,tid,cpu,time,event,trace` of a
`perf record -a -e sched:sched_switch` run. LABELS: lines "TID NAME" (e.g.
"rank0/main"); only labelled threads are printed then, with each CPU's idle
time, over the span from the first to the last switch of a labelled thread.
Used by verbs_vm_overlap.sh PART=trace to see which vCPU the helper, the
target rank and the kernel's softirq work take while rank 0 computes.
"""
import collections
import re
import sys

SWITCH = re.compile(r'\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:.*prev_comm=(.*?) prev_pid=(\d+) .*'
                    r'prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')


def main():
    labels = {}
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            parts = line.split()
            if len(parts) >= 2:
                labels[int(parts[0])] = parts[1]
    events = []
    for line in open(sys.argv[1]):
        m = SWITCH.search(line)
        if m:
            events.append((float(m.group(2)), int(m.group(1)), int(m.group(4)), m.group(3), m.group(5),
                           int(m.group(7)), m.group(6)))
    if not events:
        sys.exit("no sched_switch events in " + sys.argv[1])
    events.sort()
    if labels:
        touched = [e[0] for e in events if e[2] in labels or e[5] in labels]
        start, end = touched[0], touched[-1]
    else:
        start, end = events[0][0], events[-1][0]
    names, last, run = {}, {}, collections.Counter()
    preempted, slept = collections.Counter(), collections.Counter()
    for t, cpu, prev, prev_comm, state, nxt, next_comm in events:
        names.setdefault(prev, prev_comm)
        names.setdefault(nxt, next_comm)
        if start <= t <= end and cpu in last:
            run[(prev, cpu)] += t - max(last[cpu], start)
            if state.startswith('R'):
                preempted[prev] += 1
            else:
                slept[prev] += 1
        last[cpu] = t
    cpus = sorted(last)
    span = end - start
    print("span %.3f s; seconds on each CPU (share of the span), switches out: preempted/slept" % span)
    total = collections.Counter()
    for (tid, _), v in run.items():
        total[tid] += v
    # With labels: those threads, the busiest others (kernel threads such as
    # ksoftirqd run a software device's deferred work), then the idle time.
    others = [t for t, _ in total.most_common() if t not in labels and t != 0]
    shown = [t for t in labels if t in total] + others[:5] + [0] if labels else others[:12] + [0]
    for tid in shown:
        name = labels.get(tid, names.get(tid, "?")) if tid else "idle (all CPUs)"
        cells = " ".join("cpu%d %6.3f (%3.0f%%)" % (c, run[(tid, c)], 100 * run[(tid, c)] / span) for c in cpus)
        print("%-18s %7d %s  %d/%d" % (name, tid, cells, preempted[tid], slept[tid]))


main()
