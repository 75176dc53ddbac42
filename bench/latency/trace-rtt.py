#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Split the round trips of a traced ping-pong (bench/latency/trace-twonode)
into what node 0 did and what happened elsewhere.

Per round trip i of the rank (the process named --comm with the most
system calls):
  S_i  the rank enters the system call that sends its message (the last
       sys_enter of the rank before the packet leaves)
  X_i  the packet leaves (net_dev_xmit in the rank's context)
  R_i  the reply arrives: the interrupt before the first rxe_responder
       call after X_i
Reported (median, quartiles over the round trips, microseconds):
  send  = X_i - S_i          syscall entry to the packet on the wire
  away  = R_i - X_i          the wire and the other node
  recv  = S_{i+1} - R_i      the reply's interrupt to the next send:
                             kernel receive work, completion, the rank
                             seeing it, its own MPI work
and for recv, the first occurrence after R_i of each step (rxe_responder,
rxe_send_complete, irq_poll, kprog_ib_recv_done, kprog_arrive,
kprog_complete, the rank's sys_exit), as offsets from R_i, plus how many
system calls and context switches the rank made between R_i and S_{i+1}.
"""
import argparse
import re
import statistics
import sys

LINE = re.compile(r'^\s*(.*?)-(\d+)\s+(?:\(\s*\S+\)\s+)?\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\S+?):?\s(.*)$')
STEPS = ['rxe_responder', 'rxe_send_complete', 'irq_poll_softirq', 'ib_cq_completion_softirq',
         'kprog_ib_recv_done', 'kprog_arrive', 'workqueue_execute_start', 'kprog_copy_start',
         'kprog_copy_end', 'kprog_complete', 'sys_exit']


def q(v):
    if not v:
        return 'n/a'
    v = sorted(v)
    n = len(v)
    return '%8.1f  (%6.1f-%6.1f)' % (statistics.median(v), v[n // 4], v[(3 * n) // 4])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--comm', default='latency')
    ap.add_argument('--lib', default='')
    ap.add_argument('trace')
    a = ap.parse_args()
    ev = []
    nsys = {}
    for line in open(a.trace, errors='replace'):
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, _cpu, ts, name, rest = m.groups()
        pid = int(pid)
        ev.append((float(ts) * 1e6, comm.strip(), pid, name, rest))
        if name == 'sys_enter' and a.comm in comm:
            nsys[pid] = nsys.get(pid, 0) + 1
    if not nsys:
        print('  no system calls of %s in the trace' % a.comm)
        return 1
    rank = max(nsys, key=nsys.get)
    # S/X pairs
    last_enter = None
    rts = []            # (S, X)
    for t, comm, pid, name, rest in ev:
        if pid == rank and name == 'sys_enter':
            last_enter = t
        elif name == 'net_dev_xmit' and pid == rank and last_enter is not None:
            if not rts or rts[-1][0] != last_enter:
                rts.append((last_enter, t))
    # arrivals: interrupt before the first responder after each X
    irq_t = None
    resp = []           # (irq time, responder time)
    for t, comm, pid, name, rest in ev:
        if name == 'irq_handler_entry':
            irq_t = t
        elif name == 'rxe_responder' and irq_t is not None:
            resp.append((irq_t, t))
    send, away, recv = [], [], []
    steps = {s: [] for s in STEPS}
    calls, switches = [], []
    j = 0
    ei = 0
    for i in range(len(rts) - 1):
        s, x = rts[i]
        s2 = rts[i + 1][0]
        while j < len(resp) and resp[j][1] < x:
            j += 1
        if j >= len(resp) or resp[j][1] > s2:
            continue
        r = resp[j][0]
        if r < x:
            r = x       # the interrupt was taken before the xmit returned
        send.append(x - s)
        away.append(r - x)
        recv.append(s2 - r)
        while ei < len(ev) and ev[ei][0] < r:
            ei += 1
        seen = set()
        nc = ns = 0
        k = ei
        while k < len(ev) and ev[k][0] < s2:
            t, comm, pid, name, rest = ev[k]
            if name in steps and name not in seen and (name != 'sys_exit' or pid == rank):
                seen.add(name)
                steps[name].append(t - r)
            if pid == rank and name == 'sys_enter':
                nc += 1
            if name == 'sched_switch':
                ns += 1
            k += 1
        calls.append(nc)
        switches.append(ns)
    print('  %s: %d round trips traced (rank pid %d); microseconds, median (q1-q3)'
          % (a.lib, len(send), rank))
    print('  send  syscall entry -> packet out      %s' % q(send))
    print('  away  packet out -> reply interrupt    %s' % q(away))
    print('  recv  reply interrupt -> next send     %s' % q(recv))
    for s in STEPS:
        if steps[s]:
            print('    +%-26s %s  (in %d of %d)' % (s, q(steps[s]), len(steps[s]), len(recv)))
    print('    rank system calls in recv          %s' % q(calls))
    print('    context switches in recv           %s' % q(switches))
    return 0


if __name__ == '__main__':
    sys.exit(main())
