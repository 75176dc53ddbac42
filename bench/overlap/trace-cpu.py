#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Who had the CPU while each rendezvous was read (bench/overlap/trace-twonode-overlap).

A transfer = on the receiving node, first kprog_ib_read_start to last
kprog_ib_read_end of one rid; on the sending node, its RTS to its FIN
(kprog_ib_rts "send", kprog_ib_fin "recv": the FIN received). Its time on every CPU is split into:
  rank        the process named --comm (default overlap), outside softirq
  sirq@rank   softirq run on top of the rank (on the rank's CPU-time clock)
  ksoftirqd   softirq work in ksoftirqd (not on the rank's clock)
  sirq@idle   softirq run on top of the idle task
  sirq@other  softirq run on top of another task (kworker, ...)
  kworker     work items (kprog_ib_xfer, ...), outside softirq
  other       any other task
  idle        the idle task
A transfer counts as "rank computing" when the rank ran for more than a quarter
of it; the others are transfers the rank waited for (pure). Means per class
in ms and in % of the transfers' wall time (with several CPUs the sum over
them, then one line per CPU), and softirq time per vector.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r'^\s*(.*?)-(\d+)\s+(?:\(\s*\S+\)\s+)?\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\S+?):?\s(.*)$')
SW = re.compile(r'prev_comm=(.*?) prev_pid=(\d+) .*==> next_comm=(.*?) next_pid=(\d+)')
VEC = re.compile(r'vec=\d+ \[action=(\w+)\]')
RID = re.compile(r'rid=(0x[0-9a-f]+|\d+)')
RTS = re.compile(r'^send .*len=(\d+) cookie=(0x[0-9a-f]+|\d+) chunk=(\d+)')
FIN = re.compile(r'^recv cookie=(0x[0-9a-f]+|\d+)')
CATS = ['rank', 'sirq@rank', 'ksoftirqd', 'sirq@idle', 'sirq@other', 'kworker', 'other', 'idle']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--comm', default='overlap')
    a = ap.parse_args()
    cur = {}      # cpu -> (comm, pid)
    sirq = {}     # cpu -> (start, vector) while in softirq
    last = {}     # cpu -> time of the last accounting
    win = None    # (rid, start, acc, vec)
    done = []
    vec_all = collections.Counter()
    rts_chunk = collections.Counter()

    def cat(cpu):
        comm, pid = cur.get(cpu, ('?', -1))
        if cpu in sirq:
            if comm.startswith('ksoftirqd'):
                return 'ksoftirqd'
            if comm == a.comm:
                return 'sirq@rank'
            return 'sirq@idle' if pid == 0 else 'sirq@other'
        if pid == 0:
            return 'idle'
        if comm == a.comm:
            return 'rank'
        if comm.startswith('kworker'):
            return 'kworker'
        if comm.startswith('ksoftirqd'):
            return 'ksoftirqd'
        return 'other'

    def account(cpu, t):
        t0 = last.get(cpu)
        last[cpu] = t
        if t0 is None or win is None or not win[5]:
            return
        win[2][cat(cpu)] += t - t0
        win[7][(cpu, cat(cpu))] += t - t0
        if cpu in sirq:
            win[3][sirq[cpu][1]] += t - max(t0, sirq[cpu][0])

    with open(a.trace, errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            comm, pid, cpu, ts, ev, rest = m.group(1), int(m.group(2)), int(m.group(3)), \
                float(m.group(4)) * 1e3, m.group(5), m.group(6)
            if cpu not in cur:
                cur[cpu] = (comm.strip(), pid)
            account(cpu, ts)
            if ev == 'sched_switch':
                s = SW.search(rest)
                if s:
                    cur[cpu] = (s.group(3), int(s.group(4)))
            elif ev == 'softirq_entry':
                v = VEC.search(rest)
                sirq[cpu] = (ts, v.group(1) if v else '?')
            elif ev == 'softirq_exit':
                if cpu in sirq:
                    vec_all[sirq[cpu][1]] += ts - sirq[cpu][0]
                sirq.pop(cpu, None)
            elif ev == 'kprog_ib_read_start' or (ev == 'kprog_ib_rts' and RTS.search(rest)):
                if ev == 'kprog_ib_rts':
                    r = RTS.search(rest)
                    rid = r.group(2)
                    rts_chunk[r.group(3) != '0'] += 1
                else:
                    r = RID.search(rest)
                    rid = r.group(1) if r else '?'
                if win is None or win[0] != rid:
                    if win is not None:
                        done.append(win)
                    win = [rid, ts, collections.Counter(), collections.Counter(), 0.0, False, ts,
                           collections.Counter()]
                if not win[5]:
                    win[5] = True
                    win[6] = ts
                    for c in last:
                        last[c] = ts
            elif (ev == 'kprog_ib_read_end' or (ev == 'kprog_ib_fin' and FIN.search(rest))) \
                    and win is not None and win[5]:
                win[5] = False
                win[4] += ts - win[6]
    if win is not None:
        done.append(win)
    classes = {'rank computing': [], 'rank waiting (pure)': []}
    for w in done:
        wall = w[4]
        if wall <= 0:
            continue
        acc = {k: w[2][k] for k in CATS}
        vec = dict(w[3])
        key = 'rank computing' if acc['rank'] > 0.25 * wall else 'rank waiting (pure)'
        classes[key].append((wall, acc, vec, w[7]))
    if rts_chunk:
        print('# sending node: %d RTS carried chunk 0, %d did not (the receiver PULLed it)' % (
            rts_chunk[True], rts_chunk[False]))
    print('# node 0: transfers (receiving: first READ posted .. last READ done; sending: RTS .. FIN), CPU time by who ran, mean ms per transfer and % of wall')
    print('%-22s %4s %8s ' % ('class', 'n', 'wall') + ' '.join('%10s' % c for c in CATS))
    for key, rows in classes.items():
        if not rows:
            continue
        n = len(rows)
        wall = sum(r[0] for r in rows) / n
        tot = {c: sum(r[1][c] for r in rows) / n for c in CATS}
        print('%-22s %4d %8.2f ' % (key, n, wall) + ' '.join('%10.2f' % tot[c] for c in CATS))
        print('%-22s %4s %8s ' % ('', '', '%') + ' '.join('%9.0f%%' % (100 * tot[c] / wall) for c in CATS))
        vec = collections.Counter()
        for r in rows:
            vec.update(r[2])
        cpus = sorted({c for r in rows for (c, _) in r[3]})
        if len(cpus) > 1:
            for c in cpus:
                print('%-22s %4s %8s ' % ('', 'cpu%d' % c, '') + ' '.join(
                    '%10.2f' % (sum(r[3][(c, k)] for r in rows) / n) for k in CATS))
        print('%-22s softirq by vector (ms per transfer): %s' % ('', ', '.join(
            '%s %.2f' % (k, v / n) for k, v in vec.most_common())))
    print('# softirq time over the whole trace (ms): ' +
          ', '.join('%s %.1f' % (k, v) for k, v in vec_all.most_common()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
