// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib devices: the RDMA devices the transport may use, tracked with
 * an ib_client, and the address other nodes reach this node at.
 *
 * A device is usable when it has kernel verbs (ib_core only offers those
 * to clients), supports fast registration (IB_DEVICE_MEM_MGT_EXTENSIONS:
 * IB_WR_REG_MR and remote invalidation) and has a port with a connection
 * manager (IB/RoCE or iWARP). While at least one is, the transport is the
 * core's network transport (kprog_xport_set_net()); when the last one is
 * removed it stops being one (new remote sends fail with EHOSTUNREACH),
 * and before the removal returns every connection on the device is torn
 * down: their transfers fail, nothing stays registered or pinned.
 *
 * This node's address (GET_INFO's node_addr): the module parameter
 * node_addr if set, else the IPv4 address of the first IPv4-mapped GID
 * (RoCE) outside 127.0.0.0/8 (which rdma_cm cannot connect) of the first
 * active port of the first usable device, with the module's port.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/socket.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include "kprog.h"
#include "transport.h"
#include "ib.h"

/**
 * struct kprog_ib_dev - a usable device
 * @node: in kprog_ib_devs
 * @ib: the device
 */
struct kprog_ib_dev {
	struct list_head node;
	struct ib_device *ib;
};

static LIST_HEAD(kprog_ib_devs);
static DEFINE_MUTEX(kprog_ib_dev_mutex);
static bool kprog_ib_fixed;
static struct kprog_node_addr kprog_ib_fixed_addr;

static int kprog_ib_add_one(struct ib_device *ib);
static void kprog_ib_remove_one(struct ib_device *ib, void *data);

static struct ib_client kprog_ib_client = {
	.name = "kprog_ib",
	.add = kprog_ib_add_one,
	.remove = kprog_ib_remove_one,
};

static bool kprog_ib_dev_usable(struct ib_device *ib)
{
	u32 port;

	if (!(ib->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !ib->attrs.max_fast_reg_page_list_len)
		return false;
	rdma_for_each_port(ib, port)
		if (rdma_cap_ib_cm(ib, port) || rdma_cap_iw_cm(ib, port))
			return true;
	return false;
}

static int kprog_ib_add_one(struct ib_device *ib)
{
	struct kprog_ib_dev *d;

	if (!kprog_ib_dev_usable(ib))
		return -EOPNOTSUPP;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->ib = ib;
	ib_set_client_data(ib, &kprog_ib_client, d);
	mutex_lock(&kprog_ib_dev_mutex);
	if (list_empty(&kprog_ib_devs))
		kprog_xport_set_net(&kprog_ib_xport);
	list_add_tail(&d->node, &kprog_ib_devs);
	mutex_unlock(&kprog_ib_dev_mutex);
	pr_info("kprog_ib: using %s\n", dev_name(&ib->dev));
	return 0;
}

static void kprog_ib_remove_one(struct ib_device *ib, void *data)
{
	struct kprog_ib_dev *d = data;

	mutex_lock(&kprog_ib_dev_mutex);
	list_del(&d->node);
	/* No new remote message, then nothing left on the device. */
	if (list_empty(&kprog_ib_devs))
		kprog_xport_set_net(NULL);
	mutex_unlock(&kprog_ib_dev_mutex);
	kprog_ib_conn_dev_gone(ib);
	pr_info("kprog_ib: %s removed\n", dev_name(&ib->dev));
	kfree(d);
}

/* The IPv4 address of an active port's first IPv4-mapped GID. */
static bool kprog_ib_port_addr(struct ib_device *ib, u32 port, u8 *addr)
{
	struct ib_port_attr pa;
	union ib_gid gid;
	int i;

	if (!rdma_cap_ib_cm(ib, port) && !rdma_cap_iw_cm(ib, port))
		return false;
	if (ib_query_port(ib, port, &pa) || pa.state != IB_PORT_ACTIVE)
		return false;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (rdma_query_gid(ib, port, i, &gid))
			continue;
		/*
		 * rdma_cm takes any 127.0.0.0/8 address for "this host, any
		 * device" (cma_any_addr()), binds it to no netdev and then
		 * cannot resolve a RoCE route (ENODEV); it also drops
		 * requests from such an address: never use one.
		 */
		if (ipv6_addr_v4mapped((struct in6_addr *)gid.raw) &&
		    !ipv4_is_loopback(*(__be32 *)&gid.raw[12])) {
			memcpy(addr, &gid.raw[12], 4);
			return true;
		}
	}
	return false;
}

/**
 * kprog_ib_local_addr() - where other nodes reach this node
 * @addr: filled: AF_INET, the address, the module's port
 *
 * The transport's &kprog_transport.local_addr. Process context.
 *
 * Return: 0, or -ENODEV when no active port has an IPv4 GID and the
 * module parameter node_addr is not set.
 */
int kprog_ib_local_addr(struct kprog_node_addr *addr)
{
	struct kprog_ib_dev *d;
	bool found = false;
	u32 port;

	if (kprog_ib_fixed) {
		*addr = kprog_ib_fixed_addr;
		return 0;
	}
	memset(addr, 0, sizeof(*addr));
	mutex_lock(&kprog_ib_dev_mutex);
	list_for_each_entry(d, &kprog_ib_devs, node) {
		rdma_for_each_port(d->ib, port) {
			found = kprog_ib_port_addr(d->ib, port, addr->addr);
			if (found)
				break;
		}
		if (found)
			break;
	}
	mutex_unlock(&kprog_ib_dev_mutex);
	if (!found)
		return -ENODEV;
	addr->family = AF_INET;
	addr->port = htons(kprog_ib_port);
	return 0;
}

/**
 * kprog_ib_addr_is_local() - is an address one of this node's?
 * @a: an IPv4 address
 *
 * Return: true for the node_addr parameter or an address the kernel
 * routes to itself (the loopback of KPROG_JOIN_NET_ONLY).
 */
bool kprog_ib_addr_is_local(const struct kprog_ib_addr *a)
{
	__be32 ip;

	if (kprog_ib_fixed && !memcmp(a->addr, kprog_ib_fixed_addr.addr, 4))
		return true;
	memcpy(&ip, a->addr, 4);
	return inet_addr_type(&init_net, ip) == RTN_LOCAL;
}

/**
 * kprog_ib_parse_node_addr() - the module parameter node_addr
 * @s: "" (find it from the devices) or a dotted IPv4 address outside
 *     127.0.0.0/8
 *
 * Return: 0, or -EINVAL for anything else.
 */
int kprog_ib_parse_node_addr(const char *s)
{
	u8 ip[4];

	kprog_ib_fixed = false;
	if (!s || !*s)
		return 0;
	/* rdma_cm cannot connect 127.0.0.0/8 (see kprog_ib_port_addr()). */
	if (!in4_pton(s, -1, ip, '\0', NULL) ||
	    ipv4_is_loopback(*(__be32 *)ip))
		return -EINVAL;
	memset(&kprog_ib_fixed_addr, 0, sizeof(kprog_ib_fixed_addr));
	kprog_ib_fixed_addr.family = AF_INET;
	kprog_ib_fixed_addr.port = htons(kprog_ib_port);
	memcpy(kprog_ib_fixed_addr.addr, ip, 4);
	kprog_ib_fixed = true;
	return 0;
}

/**
 * kprog_ib_dev_init() - track RDMA devices
 *
 * Devices present now are added before this returns (the transport
 * registers with the core if one is usable).
 *
 * Return: 0 or a negative errno.
 */
int kprog_ib_dev_init(void)
{
	return ib_register_client(&kprog_ib_client);
}

/**
 * kprog_ib_dev_exit() - stop tracking devices; each is removed first
 */
void kprog_ib_dev_exit(void)
{
	ib_unregister_client(&kprog_ib_client);
}
