#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""bench/coll/trace-probe-split.py: the shim's parts of a collective's start
call and of MPI_Wait from a trace of bench/coll/trace-osu-coll run with
--probes "kp_coll_start kp_coll_complete": per rank (pid) the medians of
MPI_I* entry -> kp_coll_start -> the ioctl's entry -> its exit ->
kp_coll_start's return -> MPI_I*'s return, and of MPI_Wait entry ->
kp_coll_complete -> its return -> MPI_Wait's return for the waits whose
collective had ended (kp_coll_complete within 100 us of the entry; the
others are counted whole). Every interval holds the uprobes' own traps (5-8
us each under TCG): libshim's collprof build (make -C libshim collprof)
measures the same parts without them.

Usage: trace-probe-split.py DIR/BENCH.trace
"""
import re, sys, statistics as st
ev = re.compile(r'^\s*(\S+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+(\w+):')
per = {}
for line in open(sys.argv[1]):
    m = ev.match(line)
    if not m or not m.group(1).startswith('osu_'):
        continue
    pid, t, e = m.group(2), float(m.group(3)) * 1e6, m.group(4)
    per.setdefault(pid, []).append((t, e, line))
for pid, evs in per.items():
    iv = {}
    cur = {}
    for t, e, line in evs:
        if e == 'sys_enter' and 'NR 16 (' in line:
            if 'mpi_start' in cur and 'kp_coll_start' in cur and 'sys_enter' not in cur:
                cur['sys_enter'] = t
            continue
        if e == 'sys_exit':
            if 'sys_enter' in cur and 'sys_exit' not in cur:
                cur['sys_exit'] = t
            continue
        if e == 'mpi_start':
            cur = {'mpi_start': t}
        elif e in ('kp_coll_start', 'kp_coll_start_ret', 'mpi_start_ret'):
            cur[e] = t
            if e == 'mpi_start_ret' and len(cur) == 6:
                k = ['mpi_start', 'kp_coll_start', 'sys_enter', 'sys_exit', 'kp_coll_start_ret', 'mpi_start_ret']
                for a, b in zip(k, k[1:]):
                    iv.setdefault('start ' + a + '->' + b, []).append(cur[b] - cur[a])
                iv.setdefault('start whole', []).append(cur['mpi_start_ret'] - cur['mpi_start'])
        elif e == 'mpi_wait':
            cur = {'mpi_wait': t}
        elif e in ('kp_coll_complete', 'kp_coll_complete_ret', 'mpi_wait_ret'):
            cur[e] = t
            if e == 'mpi_wait_ret' and len(cur) == 4:
                k = ['mpi_wait', 'kp_coll_complete', 'kp_coll_complete_ret', 'mpi_wait_ret']
                if cur['kp_coll_complete'] - cur['mpi_wait'] > 100:
                    iv.setdefault('wait that waited, whole', []).append(cur['mpi_wait_ret'] - cur['mpi_wait'])
                    continue
                for a, b in zip(k, k[1:]):
                    iv.setdefault('wait(done in 1st pass) ' + a + '->' + b, []).append(cur[b] - cur[a])
                iv.setdefault('wait whole', []).append(cur['mpi_wait_ret'] - cur['mpi_wait'])
    print('pid', pid)
    for k, v in iv.items():
        print('  %-55s n %3d median %7.1f us' % (k, len(v), st.median(v)))
