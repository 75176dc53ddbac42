// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connecting the nodes of a job at MPI_Init, out of band (as UCX does):
 * the module connects one RC queue pair per pair of nodes with ib_core
 * alone, from the two ends' descriptions (GID, QPN, PSN, ...), which this
 * file carries between the node leaders over MPI (KPROG_IOC_NET_CONN in
 * include/uapi/linux/kprog.h). Connections are shared by all jobs of two
 * nodes; one exchange connects fresh ends or confirms existing ones, and
 * a stale end (a peer module reloaded, a queue pair that died) costs one
 * or two more, so the leaders repeat until every pair is connected on
 * both sides, at most NET_ROUNDS times.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "shim.h"

#define NET_ROUNDS 5

/*
 * Collective over @leaders (one rank per node, in node order), each with
 * kp.fd joined to the job whose node map is @nodes (the module connects
 * only a joined endpoint, and only toward its job's nodes): connect this
 * node (@self of @nr) to every other node of @nodes. @err: an errno that
 * keeps this leader from taking part (its JOIN failed), 0 if none.
 * Returns 0, or the same errno on every leader (ETIMEDOUT: not connected
 * after NET_ROUNDS exchanges).
 */
int kp_net_connect(MPI_Comm leaders, const struct kprog_node_addr *nodes, int nr, int self,
		   int err)
{
	struct kprog_net_qp *mine = calloc((size_t)nr, sizeof(*mine));
	struct kprog_net_qp *theirs = calloc((size_t)nr, sizeof(*theirs));
	int round, i, v[2], all[2] = { 0, 0 };
	struct kprog_net_conn c;

	v[1] = !mine || !theirs ? ENOMEM : err;
	for (round = 0; round < NET_ROUNDS; round++) {
		/* this node's end toward each node (its QP made if need be) */
		for (i = 0; i < nr && !v[1]; i++) {
			if (i == self)
				continue;
			memset(&c, 0, sizeof(c));
			c.op = KPROG_NET_PREPARE;
			c.peer = nodes[i];
			if (ioctl(kp.fd, KPROG_IOC_NET_CONN, &c) < 0)
				v[1] = errno;
			mine[i] = c.local;
		}
		PMPI_Allreduce(&v[1], &all[1], 1, MPI_INT, MPI_MAX, leaders);
		if (all[1])
			break;
		/* node j's end toward this one, for each j */
		PMPI_Alltoall(mine, sizeof(*mine), MPI_BYTE, theirs, sizeof(*theirs), MPI_BYTE,
			      leaders);
		v[0] = 0;	/* pairs not connected yet, seen from here */
		for (i = 0; i < nr && !v[1]; i++) {
			if (i == self)
				continue;
			memset(&c, 0, sizeof(c));
			c.op = KPROG_NET_CONNECT;
			c.peer = nodes[i];
			c.local = mine[i];
			c.remote = theirs[i];
			if (ioctl(kp.fd, KPROG_IOC_NET_CONN, &c) < 0)
				v[1] = errno;
			else if (c.status != KPROG_NET_CONNECTED)
				v[0]++;
		}
		PMPI_Allreduce(v, all, 2, MPI_INT, MPI_MAX, leaders);
		kp_log(2, "node connections, exchange %d: %s", round + 1,
		       all[1] ? strerror(all[1]) : all[0] ? "again" : "all connected");
		if (all[1] || !all[0])
			break;
	}
	free(mine);
	free(theirs);
	if (all[1])
		return all[1];
	return round < NET_ROUNDS ? 0 : ETIMEDOUT;
}
