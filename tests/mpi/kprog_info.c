// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kprog-info: what the loaded module offers (KPROG_IOC_GET_INFO), one line:
 *   kprog-info: abi 1 features multinode,large,fastpath transports shm,ib node 127.0.1.1:0 eager_limit ...
 * Exit status: 0 the device answered; 1 no /dev/kprog or no answer;
 * with -t ib (or -t shm): 0 only if that transport can carry traffic now,
 * 2 if it cannot. Used by tests/mpi/run-net and the two-node scripts to
 * tell "the ibverbs transport is missing" from a failure. Not an MPI program.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/kprog.h>

int main(int argc, char **argv)
{
	struct kprog_info info;
	char addr[INET6_ADDRSTRLEN] = "-";
	const char *want = NULL;
	int fd, opt;

	while ((opt = getopt(argc, argv, "t:h")) != -1) {
		switch (opt) {
		case 't':
			want = optarg;
			break;
		default:
			fprintf(stderr, "usage: kprog-info [-t ib|shm]\n");
			return opt == 'h' ? 0 : 1;
		}
	}
	fd = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("kprog-info: %s: %s\n", KPROG_DEVICE, strerror(errno));
		return 1;
	}
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, KPROG_IOC_GET_INFO, &info) < 0) {
		printf("kprog-info: KPROG_IOC_GET_INFO: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (info.node_addr.family == AF_INET || info.node_addr.family == AF_INET6)
		inet_ntop(info.node_addr.family, info.node_addr.addr, addr, sizeof(addr));
	printf("kprog-info: abi %u features%s%s%s transports%s%s%s node %s:%u eager_limit %u max_ops %u fast_limit %u\n",
	       info.abi_version,
	       info.features & KPROG_FEAT_MULTINODE ? " multinode" : "",
	       info.features & KPROG_FEAT_LARGE_MSG ? " large" : "",
	       info.features & KPROG_FEAT_FASTPATH ? " fastpath" : "",
	       info.transports & KPROG_XPORT_SHM ? " shm" : "",
	       info.transports & KPROG_XPORT_IB ? " ib" : "",
	       info.transports ? "" : " none",
	       addr, ntohs(info.node_addr.port), info.eager_limit, info.max_ops, info.fast_limit);
	if (!want)
		return 0;
	if (!strcmp(want, "ib"))
		return info.transports & KPROG_XPORT_IB ? 0 : 2;
	if (!strcmp(want, "shm"))
		return info.transports & KPROG_XPORT_SHM ? 0 : 2;
	fprintf(stderr, "kprog-info: -t takes ib or shm\n");
	return 1;
}
