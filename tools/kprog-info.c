// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kprog-info: can this node run MPI jobs under kprog, and with what?
 * Checks, in order: the kprog module loaded (and its version), /dev/kprog
 * (mode, group, whether the caller may open it), the ABI version, what
 * the module offers (features, transports, limits in force), the ibverbs
 * transport (kprog_ib, its node address, the RDMA ports), and the
 * caller's locked-memory limit (RDMA pins pages). Exit status 0 when the
 * node is usable, 1 when it is not or on an error.
 *
 *   -t ib|shm   one summary line, for scripts: status 0 if that transport
 *               can carry traffic now, 2 if not, 1 if there is no module
 *               (tests/mpi/run and run-kill parse that line)
 *   --env       every KPROG_* variable the shim reads, with its default and
 *               its value here; status 1 if a value set cannot be used
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/kprog.h>
#include "env.h"

#ifndef KPROG_VERSION
#define KPROG_VERSION "unknown"
#endif

#define SYS_KPROG "/sys/module/kprog"
#define SYS_KPROG_IB "/sys/module/kprog_ib"
#define SYS_RDMA "/sys/class/infiniband"

static const char usage_text[] =
"Usage: kprog-info [OPTION]\n"
"Say whether this node can run MPI jobs under kprog: the module and its\n"
"version, the ABI, /dev/kprog's permissions and group, the transports,\n"
"the RDMA port and address, the limits in force.\n"
"\n"
"  -t, --transport=ib|shm  one summary line; exit 0 if that transport can\n"
"                          carry traffic now, 2 if not\n"
"  -e, --env               every KPROG_* variable of the shim: default and\n"
"                          value in this environment\n"
"  -h, --help              this text\n"
"  -V, --version           the version of kprog-info\n"
"\n"
"Exit status: 0 usable (or the transport is up, or every KPROG_* value is\n"
"usable), 1 not usable or an error, 2 the transport asked for is down.\n";

/* First line of a sysfs file into @buf (no newline); false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static void param(const char *mod, const char *name, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", mod, name);
	if (!read_line(path, buf, len))
		snprintf(buf, len, "?");
}

static int env_list(void)
{
	int bad = 0;
	unsigned int i;

	printf("%-24s %-16s %-16s %s\n", "variable", "default", "current", "");
	for (i = 0; i < KP_ENV_NR; i++) {
		const struct kp_env_var *v = &kp_env_vars[i];
		const char *s = getenv(v->name);
		const char *why = s && *s ? kp_env_invalid(v, s) : NULL;

		printf("%-24s %-16s %-16s%s%s\n", v->name, v->def, s && *s ? s : "(unset)",
		       why ? "  UNUSABLE: " : "", why ? why : "");
		printf("    %s\n", v->help);
		if (v->type == KP_ENV_INT)
			printf("    integer %ld..%ld\n", v->min, v->max);
		else if (v->type == KP_ENV_BOOL)
			printf("    boolean: 1/0, yes/no, true/false, on/off\n");
		else if (v->type == KP_ENV_TRI)
			printf("    auto, or a boolean: 1/0, yes/no, true/false, on/off\n");
		else if (v->type == KP_ENV_CHOICE)
			printf("    one of %s\n", v->choices);
		if (why) {
			fprintf(stderr, "kprog-info: %s=%s: %s; the shim uses the default, %s\n",
				v->name, s, why, v->def);
			bad = 1;
		}
	}
	return bad;
}

static void addr_of(const struct kprog_info *info, char *buf, size_t len)
{
	snprintf(buf, len, "-");
	if (info->node_addr.family == AF_INET || info->node_addr.family == AF_INET6)
		inet_ntop(info->node_addr.family, info->node_addr.addr, buf, len);
}

/* Open /dev/kprog and ask for its ABI and GET_INFO; 0 or an errno, @step says where. */
static int query(struct kprog_info *info, __u32 *abi, const char **step)
{
	int fd, err = 0;

	*step = KPROG_DEVICE;
	fd = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	*step = "KPROG_IOC_VERSION";
	if (ioctl(fd, KPROG_IOC_VERSION, abi) < 0) {
		err = errno;
	} else if (*abi == KPROG_ABI_VERSION) {
		*step = "KPROG_IOC_GET_INFO";
		memset(info, 0, sizeof(*info));
		if (ioctl(fd, KPROG_IOC_GET_INFO, info) < 0)
			err = errno;
	}
	close(fd);
	return err;
}

/* The one line of -t, as tests/mpi/run and run-kill read it. */
static int transport_line(const char *want)
{
	struct kprog_info info;
	const char *step;
	char addr[INET6_ADDRSTRLEN];
	__u32 abi = 0;
	int err;

	if (strcmp(want, "ib") && strcmp(want, "shm")) {
		fprintf(stderr, "kprog-info: -t takes ib or shm, not '%s'\n", want);
		return 1;
	}
	err = query(&info, &abi, &step);
	if (!err && abi != KPROG_ABI_VERSION) {
		fprintf(stderr, "kprog-info: module ABI %u, kprog-info's %d\n", abi, KPROG_ABI_VERSION);
		return 1;
	}
	if (err) {
		fprintf(stderr, "kprog-info: %s: %s\n", step, strerror(err));
		return 1;
	}
	addr_of(&info, addr, sizeof(addr));
	printf("kprog-info: abi %u features%s%s%s transports%s%s%s node %s:%u eager_limit %u max_ops %u fast_limit %u\n",
	       info.abi_version,
	       info.features & KPROG_FEAT_MULTINODE ? " multinode" : "",
	       info.features & KPROG_FEAT_LARGE_MSG ? " large" : "",
	       info.features & KPROG_FEAT_FASTPATH ? " fastpath" : "",
	       info.transports & KPROG_XPORT_SHM ? " shm" : "",
	       info.transports & KPROG_XPORT_IB ? " ib" : "",
	       info.transports ? "" : " none",
	       addr, ntohs(info.node_addr.port), info.eager_limit, info.max_ops, info.fast_limit);
	if (!strcmp(want, "ib"))
		return info.transports & KPROG_XPORT_IB ? 0 : 2;
	return info.transports & KPROG_XPORT_SHM ? 0 : 2;
}

/* The RDMA ports and their states, one line each; how many are ACTIVE. */
static int rdma_ports(void)
{
	DIR *d = opendir(SYS_RDMA), *pd;
	struct dirent *e, *p;
	int active = 0, n = 0;
	char path[1024], state[64], layer[64];

	if (!d) {
		printf("  RDMA devices:     none (%s)\n", SYS_RDMA);
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), SYS_RDMA "/%s/ports", e->d_name);
		pd = opendir(path);
		if (!pd)
			continue;
		while ((p = readdir(pd))) {
			if (p->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), SYS_RDMA "/%s/ports/%s/state", e->d_name, p->d_name);
			if (!read_line(path, state, sizeof(state)))
				snprintf(state, sizeof(state), "?");
			snprintf(path, sizeof(path), SYS_RDMA "/%s/ports/%s/link_layer", e->d_name, p->d_name);
			if (!read_line(path, layer, sizeof(layer)))
				snprintf(layer, sizeof(layer), "?");
			printf("  RDMA port:        %s/%s %s (%s)\n", e->d_name, p->d_name, state, layer);
			active += strstr(state, "ACTIVE") != NULL;
			n++;
		}
		closedir(pd);
	}
	closedir(d);
	if (!n)
		printf("  RDMA devices:     none\n");
	return active;
}

static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n, i;

	if (getegid() == gid)
		return true;
	n = getgroups(256, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static int report(void)
{
	char buf[256], addr[INET6_ADDRSTRLEN];
	struct kprog_info info;
	struct rlimit ml;
	const char *step;
	struct stat st;
	struct group *gr;
	__u32 abi = 0;
	bool usable = true;
	int err, dev_group;

	printf("kprog-info %s (ABI %d)\n", KPROG_VERSION, KPROG_ABI_VERSION);
	if (access(SYS_KPROG, F_OK)) {
		printf("  module kprog:     not loaded (modprobe kprog)\n");
		usable = false;
	} else {
		if (!read_line(SYS_KPROG "/version", buf, sizeof(buf)))
			snprintf(buf, sizeof(buf), "(no version)");
		printf("  module kprog:     loaded, version %s\n", buf);
	}
	if (stat(KPROG_DEVICE, &st)) {
		printf("  device:           %s: %s\n", KPROG_DEVICE, strerror(errno));
		usable = false;
	} else {
		gr = getgrgid(st.st_gid);
		printf("  device:           %s mode %04o group %s\n", KPROG_DEVICE, st.st_mode & 07777,
		       gr ? gr->gr_name : "?");
		if (gr && !strcmp(gr->gr_name, "root") && !(st.st_mode & 0006))
			printf("                    only root may open it: install the udev rule (group kprog)\n");
	}
	if (!access(SYS_KPROG, F_OK)) {
		param("kprog", "dev_group", buf, sizeof(buf));
		dev_group = atoi(buf);
		if (dev_group >= 0) {
			gr = getgrgid((gid_t)dev_group);
			printf("  dev_group:        %d (%s): you are %sa member\n", dev_group,
			       gr ? gr->gr_name : "?", in_group((gid_t)dev_group) ? "" : "not ");
		}
	}
	err = query(&info, &abi, &step);
	if (err) {
		printf("  open:             %s: %s\n", step, strerror(err));
		if (err == EACCES || err == EPERM)
			printf("                    join the device's group (usermod -aG kprog $USER) and log in again\n");
		usable = false;
	} else if (abi != KPROG_ABI_VERSION) {
		printf("  ABI:              module %u, this kprog %d: install matching versions\n", abi,
		       KPROG_ABI_VERSION);
		usable = false;
	} else {
		addr_of(&info, addr, sizeof(addr));
		printf("  ABI:              %u, as this kprog\n", abi);
		printf("  features:        %s%s%s%s%s%s%s%s%s%s%s\n",
		       info.features & KPROG_FEAT_MULTINODE ? " multinode" : "",
		       info.features & KPROG_FEAT_LARGE_MSG ? " large" : "",
		       info.features & KPROG_FEAT_FASTPATH ? " fastpath" : "",
		       info.features & KPROG_FEAT_RECV_ARRIVED ? " recv-arrived" : "",
		       info.features & KPROG_FEAT_PEERS ? " peers" : "",
		       info.features & KPROG_FEAT_TIMES ? " times" : "",
		       info.features & KPROG_FEAT_WAITER ? " waiter" : "",
		       info.features & KPROG_FEAT_NET_CONN ? " net-conn" : "",
		       info.features & KPROG_FEAT_GRANTS ? " grants" : "",
		       info.features & KPROG_FEAT_COLL ? " coll" : "",
		       info.features & KPROG_FEAT_RECV_BATCH ? " recv-batch" : "");
		printf("  transports:      %s%s%s\n", info.transports & KPROG_XPORT_SHM ? " shm" : "",
		       info.transports & KPROG_XPORT_IB ? " ib" : "", info.transports ? "" : " none");
		printf("  limits:           eager_limit %u, eager_quota %u, max_ops %u, max_rndv %u, max_iov %u,\n"
		       "                    ring_entries %u, max_job_size %u, fast_limit %u, chan_bytes %u,\n"
		       "                    max_chans %u, max_grants %u, max_msg %llu\n",
		       info.eager_limit, info.eager_quota, info.max_ops, info.max_rndv, info.max_iov,
		       info.ring_entries, info.max_job_size, info.fast_limit, info.chan_bytes,
		       info.max_chans, info.max_grants, (unsigned long long)info.max_msg);
		if (info.transports & KPROG_XPORT_IB)
			printf("  node address:     %s (across nodes: usable)\n", addr);
	}
	if (access(SYS_KPROG_IB, F_OK)) {
		printf("  module kprog_ib:  not loaded (across nodes: modprobe kprog_ib)\n");
	} else {
		if (!read_line(SYS_KPROG_IB "/version", buf, sizeof(buf)))
			snprintf(buf, sizeof(buf), "(no version)");
		printf("  module kprog_ib:  loaded, version %s\n", buf);
		param("kprog_ib", "node_addr", buf, sizeof(buf));
		printf("  node_addr param:  %s\n", *buf ? buf : "(first active RoCE port)");
		param("kprog_ib", "eager_size", buf, sizeof(buf));
		printf("  eager_size:       %s (the same on every node)\n", buf);
	}
	if (!rdma_ports() && !access(SYS_KPROG_IB, F_OK))
		printf("                    no ACTIVE RDMA port: jobs across nodes pass through to Open MPI\n");
	if (!getrlimit(RLIMIT_MEMLOCK, &ml)) {
		if (ml.rlim_cur == RLIM_INFINITY)
			printf("  locked memory:    unlimited\n");
		else
			printf("  locked memory:    %llu KiB%s\n", (unsigned long long)ml.rlim_cur / 1024,
			       ml.rlim_cur < (64ULL << 20) ? " (RDMA pins pages: ulimit -l unlimited for jobs across nodes)" : "");
	}
	printf("%s\n", usable ? "usable" : "NOT usable: MPI jobs pass through to Open MPI");
	if (!usable)
		fprintf(stderr, "kprog-info: this node cannot run jobs under kprog (see above)\n");
	return usable ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "env", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *want = NULL;
	bool env = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "t:ehV", lo, NULL)) != -1) {
		switch (opt) {
		case 't':
			want = optarg;
			break;
		case 'e':
			env = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("kprog-info %s (kprog ABI %d)\n", KPROG_VERSION, KPROG_ABI_VERSION);
			return 0;
		default:
			fputs("Try 'kprog-info --help'.\n", stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kprog-info: unexpected argument '%s'; try --help\n", argv[optind]);
		return 1;
	}
	if (env)
		return env_list();
	if (want)
		return transport_line(want);
	return report();
}
