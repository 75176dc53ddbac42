#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Split the nonblocking collectives of a traced run (bench/coll/trace-osu-coll)
into the terms OSU's overlap figure is made of.

Per collective of each rank (the processes whose name starts with --comm),
in microseconds:
  call   KPROG_IOC_COLL, its system call's entry to its exit (OSU's
         "Coll. Init" less the shim's own work)
  span   the call's exit to the schedule's completion (kprog_complete)
  work   kprog work items (the schedule's rounds, the transports' pulls)
         that ran between the call's entry and the completion: count,
         run time in all, the longest delay from queueing to running, and
         how many began on a CPU whose previous task was a rank (the rank
         was preempted or had just slept)
A rank's collectives are paired in order with its completions (ring or
inline; OSU's other traffic is Open MPI's own, not kprog's).
Printed: one line per collective with --list, then medians per rank.
--osu: per collective, from the uprobes trace-osu-coll sets on the start
call and MPI_Wait, when the start timer fired, when the schedule ended and
when the computation of OSU's overlapped pass ended (see osu() below).
"""
import argparse
import re
import statistics

LINE = re.compile(r'^\s*(.*?)-(\d+)\s+(?:\(\s*\S+\)\s+)?\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\S+?):\s?(.*)$')
KPROG_MAGIC = 0xD4
NR_COLL = 13


def med(v):
    return '%.0f' % statistics.median(v) if v else '-'


def events(path):
    """The trace's lines as (comm, pid, cpu, time in us, event, rest)."""
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if m:
                comm, pid, cpu, ts, ev, rest = m.groups()
                yield comm, int(pid), int(cpu), float(ts) * 1e6, ev, rest


def parse(path, prefix):
    colls = []          # dicts in order of the calls
    open_coll = {}      # pid -> the collective whose call is running
    pid_rank = {}
    ring = []           # (t, rank, req_id)
    queued = {}         # work struct -> time queued
    running = {}        # cpu -> (start, function, queued at, previous task)
    prev_task = {}      # cpu -> comm switched out last
    works = []          # (start, end, cpu, function, delay, after_rank)
    for comm, pid, cpu, t, ev, rest in events(path):
        if ev == 'sys_enter':
            mm = re.match(r'NR 16 \((\w+), (\w+)', rest)
            if mm and comm.startswith(prefix):
                cmd = int(mm.group(2), 16)
                if (cmd >> 8) & 0xff == KPROG_MAGIC and cmd & 0xff == NR_COLL:
                    c = {'pid': pid, 'enter': t, 'exit': None, 'done': None}
                    open_coll[pid] = c
                    colls.append(c)
        elif ev == 'sys_exit':
            if pid in open_coll:
                open_coll.pop(pid)['exit'] = t
        elif ev == 'kprog_complete':
            mm = re.search(r'rank=(\d+) req_id=(\d+) .* (\w+)$', rest)
            if mm and mm.group(3) in ('ring', 'overflow', 'inline'):
                ring.append((t, int(mm.group(1)), int(mm.group(2))))
        elif ev == 'workqueue_queue_work':
            mm = re.search(r'work struct=(\w+)', rest)
            if mm:
                queued[mm.group(1)] = t
        elif ev == 'workqueue_execute_start':
            mm = re.search(r'work struct (\w+): function (\S+)', rest)
            if mm and mm.group(2).startswith('kprog'):
                running[cpu] = (t, mm.group(2), queued.pop(mm.group(1), None),
                                prev_task.get(cpu, ''))
        elif ev == 'workqueue_execute_end':
            if cpu in running:
                s, fn, q, prev = running.pop(cpu)
                works.append((s, t, cpu, fn, (s - q) if q else 0.0, prev.startswith(prefix)))
        elif ev == 'sched_switch':
            mm = re.search(r'prev_comm=(.*?) prev_pid=', rest)
            if mm:
                prev_task[cpu] = mm.group(1)
    # The steps' posts are not traced, so a rank's collectives are paired
    # with its completions in order (ring, or inline when the call ended
    # it), and its pid with the rank number under which that pairing never
    # puts a completion before its call.
    pids = sorted({c['pid'] for c in colls})
    by_rank = {}
    for t, rk, req in ring:
        by_rank.setdefault(rk, []).append(t)

    def pair(pid, rk):
        calls = [c for c in colls if c['pid'] == pid]
        done = by_rank.get(rk, [])
        if len(done) < len(calls):
            return None
        if any(d < c['enter'] for c, d in zip(calls, done)):
            return None
        return list(zip(calls, done))

    for pid in pids:
        for rk in sorted(by_rank):
            if rk in pid_rank.values():
                continue
            p = pair(pid, rk)
            if p:
                pid_rank[pid] = rk
                for c, d in p:
                    c['done'] = d
                break
    for c in colls:
        c['rank'] = pid_rank.get(c['pid'], -1)
    return colls, works


def osu(path, prefix, group):
    """Per collective of each rank, from the uprobes trace-osu-coll sets on
    the shim's start call and MPI_Wait: what OSU's overlapped pass is made
    of. Times in us from the start call's return (the ioctl's exit):
      call   the start call (its uprobes: entry to return; OSU's "Coll.
             Init" less two clock reads)
      timer  the start timer's expiry (kprog_sched_start_fire on the
             rank's CPU; '-' when none fired)
      work   the first kprog work item to run on the rank's CPU after it
      done   the schedule's completion (kprog_complete of this rank)
      wait   MPI_Wait's entry (in the overlapped pass: the computation's end)
      left   done - wait: > 0 what MPI_Wait waited for
    OSU's order: the pure pass, then the overlapped one, each of the same
    number of iterations, each iteration @group collectives (with
    validation, OSU's -c: 5 warm-up ones, then the measured one, the
    last). The measured ones' medians are printed per rank and pass.
    """
    recs = {}       # pid -> list of dicts
    cur = {}        # pid -> the record being filled
    pid_cpu = {}    # pid -> CPU of its last start call
    cpu_pid = {}
    done_by_rank = {}
    fires, works = [], []   # (t, cpu)
    for comm, pid, cpu, t, ev, rest in events(path):
        if ev == 'mpi_start' and comm.startswith(prefix):
            c = {'start': t, 'exit': None, 'wait': None, 'ret': None, 'sret': None}
            cur[pid] = c
            recs.setdefault(pid, []).append(c)
            pid_cpu[pid] = cpu
            cpu_pid[cpu] = pid
        elif ev == 'sys_exit' and pid in cur and cur[pid]['exit'] is None:
            cur[pid]['exit'] = t
        elif ev == 'mpi_start_ret' and pid in cur and cur[pid]['sret'] is None:
            cur[pid]['sret'] = t
        elif ev == 'mpi_wait' and pid in cur and cur[pid]['wait'] is None:
            cur[pid]['wait'] = t
        elif ev == 'mpi_wait_ret' and pid in cur and cur[pid]['ret'] is None:
            cur[pid]['ret'] = t
        elif ev == 'hrtimer_expire_entry' and 'kprog_sched_start_fire' in rest:
            fires.append((t, cpu))
        elif ev == 'workqueue_execute_start' and 'function kprog' in rest:
            works.append((t, cpu))
        elif ev == 'kprog_complete':
            mm = re.search(r'rank=(\d+) req_id=(\d+) .* (\w+)$', rest)
            if mm and mm.group(3) in ('ring', 'overflow', 'inline'):
                done_by_rank.setdefault(int(mm.group(1)), []).append(t)
    # a rank's completions in order, to its pid as in parse()
    pid_rank = {}
    for pid in sorted(recs):
        for rk in sorted(done_by_rank):
            if rk in pid_rank.values():
                continue
            d = done_by_rank[rk]
            calls = [c for c in recs[pid] if c['exit'] is not None]
            if len(d) >= len(calls) and all(x >= c['start'] for c, x in zip(calls, d)):
                pid_rank[pid] = rk
                for c, x in zip(calls, d):
                    c['done'] = x
                break

    def first_after(ev, t0, t1, cpu):
        for t, c in ev:
            if t >= t0 and c == cpu and t < t1:
                return t - t0
        return None

    def fmt(v):
        return '%7.0f' % v if v is not None else '      -'
    for pid, lst in sorted(recs.items()):
        cpu = pid_cpu[pid]
        print('rank %s (pid %d, CPU %d): call timer work done wait left (us; from the call\'s return)'
              % (pid_rank.get(pid, '?'), pid, cpu))
        half = len(lst) // 2
        stats = [{'call': [], 'timer': [], 'done': [], 'wait': [], 'left': []} for _ in range(2)]
        for i, c in enumerate(lst):
            if c['exit'] is None:
                continue
            x = c['exit']
            end = c.get('done') or x
            call = (c['sret'] or x) - c['start']
            timer = first_after(fires, x, end + 1, cpu)
            work = first_after(works, x, end + 1, cpu)
            done = end - x
            wait = c['wait'] - x if c['wait'] else None
            left = end - c['wait'] if c['wait'] else None
            measured = (i % half) % group == group - 1
            ov = i >= half
            print('  %3d %s %s %s %s %s %s %s' % (i, fmt(call), fmt(timer), fmt(work), fmt(done),
                                                fmt(wait), fmt(left),
                                                ('overlapped' if ov else 'pure') if measured else ''))
            if measured:
                for k, v in (('call', call), ('timer', timer), ('done', done), ('wait', wait),
                             ('left', max(0.0, left) if left is not None else None)):
                    if v is not None:
                        stats[ov][k].append(v)
        for ov, st in enumerate(stats):
            print('rank %s %s: %d measured; median call %s, timer %s, done %s, wait %s, left %s us '
                  '(mean left %s)' % (pid_rank.get(pid, '?'), 'overlapped' if ov else 'pure',
                                       len(st['call']), med(st['call']), med(st['timer']),
                                       med(st['done']), med(st['wait']), med(st['left']),
                                       '%.0f' % statistics.mean(st['left']) if st['left'] else '-'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--comm', required=True, help='name prefix of the ranks')
    ap.add_argument('--skip', type=int, default=0, help='leave out the first N per rank')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--osu', action='store_true',
                    help='per collective, from the start-call and MPI_Wait uprobes')
    ap.add_argument('--group', type=int, default=6,
                    help="--osu: collectives per OSU iteration (6 with validation, 1 without)")
    ap.add_argument('trace')
    a = ap.parse_args()
    if a.osu:
        osu(a.trace, a.comm, a.group)
        return
    colls, works = parse(a.trace, a.comm)
    per = {}
    for c in colls:
        per.setdefault(c['pid'], []).append(c)
    for pid, lst in sorted(per.items()):
        lst = lst[a.skip:]
        calls, spans, wruns, wdelays, wcounts = [], [], [], [], []
        if a.list:
            print('rank %d (pid %d): call_us span_us works run_us max_delay_us after_rank'
                  % (lst[0]['rank'] if lst else -1, pid))
        for c in lst:
            if c['exit'] is None:
                continue
            call = c['exit'] - c['enter']
            end = c['done'] if c['done'] is not None else c['exit']
            span = end - c['exit']
            w = [x for x in works if x[0] >= c['enter'] and x[0] < end]
            run = sum(x[1] - x[0] for x in w)
            dmax = max([x[4] for x in w], default=0.0)
            after = sum(1 for x in w if x[5])
            calls.append(call)
            spans.append(span)
            wruns.append(run)
            wdelays.append(dmax)
            wcounts.append(len(w))
            if a.list:
                print('  %9.0f %9.0f %3d %9.0f %9.0f %3d' % (call, span, len(w), run, dmax, after))
        print('rank %s: %d collectives; median call %s us (max %s), span after the call %s us, '
              'work items %s running %s us, longest queue delay %s us'
              % (lst[0]['rank'] if lst else '?', len(calls), med(calls),
                 '%.0f' % max(calls) if calls else '-', med(spans), med(wcounts), med(wruns),
                 med(wdelays)))


if __name__ == '__main__':
    main()
