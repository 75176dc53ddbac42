// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib devices: the RDMA devices the transport may use, tracked with
 * an ib_client, and the address other nodes reach this node at.
 *
 * A device is usable when it has kernel verbs (ib_core only offers those
 * to clients), supports fast registration (IB_DEVICE_MEM_MGT_EXTENSIONS:
 * IB_WR_REG_MR and remote invalidation) and has a port with a connection
 * manager (IB/RoCE). While at least one is, the transport is the
 * core's network transport (kprog_xport_set_net()); when the last one is
 * removed it stops being one (new remote sends fail with EHOSTUNREACH),
 * and before the removal returns every connection on the device is torn
 * down: their transfers fail, nothing stays registered or pinned.
 *
 * This node's port and address. Connections use one port: the first
 * active RoCE port (of the first usable device) with a RoCE v2 GID
 * holding an IPv4 address, that address being the node's name (GET_INFO's
 * node_addr, by which the shim's node map names the node); with the
 * module parameter node_addr, the port whose GID holds that address, or
 * else the first active InfiniBand port (GID 0 and its LID; node_addr is
 * then only the node's name, e.g. its IPoIB address). 127.0.0.0/8 works
 * like any other address: nothing here resolves it with rdma_cm.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/socket.h>
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
/* kprog_ib_dev_init()'s @gone: the connections on a device go first */
static void (*kprog_ib_dev_gone)(struct ib_device *dev);
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
		if (rdma_protocol_ib(ib, port) || rdma_protocol_roce(ib, port))
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
	kprog_ib_dev_gone(ib);
	pr_info("kprog_ib: %s removed\n", dev_name(&ib->dev));
	kfree(d);
}

/*
 * Whether @port of @ib can carry this node's connections, and with which
 * GID: RoCE, a v2 GID holding an IPv4 address (@want if given);
 * InfiniBand, GID 0 when @want is given. Fills @p (no device reference).
 */
static bool kprog_ib_port_pick(struct ib_device *ib, u32 port,
			       const u8 *want, struct kprog_ib_port *p)
{
	const struct ib_gid_attr *ga;
	struct ib_port_attr pa;
	bool found = false;
	int i;

	if (ib_query_port(ib, port, &pa) || pa.state != IB_PORT_ACTIVE)
		return false;
	if (rdma_protocol_ib(ib, port)) {
		if (!want)
			return false;
		ga = rdma_get_gid_attr(ib, port, 0);
		if (IS_ERR(ga))
			return false;
		p->gid = ga->gid;
		rdma_put_gid_attr(ga);
		p->gid_index = 0;
		found = true;
	} else if (rdma_protocol_roce(ib, port)) {
		for (i = 0; i < pa.gid_tbl_len && !found; i++) {
			ga = rdma_get_gid_attr(ib, port, i);
			if (IS_ERR(ga))
				continue;
			found = ga->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
				ipv6_addr_v4mapped((struct in6_addr *)ga->gid.raw) &&
				(!want || !memcmp(want, &ga->gid.raw[12], 4));
			if (found) {
				p->gid = ga->gid;
				p->gid_index = i;
			}
			rdma_put_gid_attr(ga);
		}
	}
	if (!found)
		return false;
	p->dev = ib;
	p->port = port;
	p->lid = pa.lid;
	p->mtu = pa.active_mtu;
	return true;
}

/* Under the device mutex: this node's port, no device reference. */
static bool kprog_ib_port_find(struct kprog_ib_port *p)
{
	const u8 *want = kprog_ib_fixed ? kprog_ib_fixed_addr.addr : NULL;
	struct kprog_ib_dev *d;
	u32 port;

	list_for_each_entry(d, &kprog_ib_devs, node)
		rdma_for_each_port(d->ib, port)
			if (kprog_ib_port_pick(d->ib, port, want, p))
				return true;
	return false;
}

/**
 * kprog_ib_port_get() - the port this node's connections use
 * @p: filled; its device referenced until kprog_ib_port_put()
 *
 * Process context.
 *
 * Return: 0, or -ENODEV when no usable port has the node's address.
 */
int kprog_ib_port_get(struct kprog_ib_port *p)
{
	int err = -ENODEV;

	memset(p, 0, sizeof(*p));
	mutex_lock(&kprog_ib_dev_mutex);
	if (kprog_ib_port_find(p) && ib_device_try_get(p->dev))
		err = 0;
	mutex_unlock(&kprog_ib_dev_mutex);
	if (err)
		p->dev = NULL;
	return err;
}

/**
 * kprog_ib_port_put() - drop the device reference of kprog_ib_port_get()
 * @p: the port
 */
void kprog_ib_port_put(struct kprog_ib_port *p)
{
	if (p->dev)
		ib_device_put(p->dev);
	p->dev = NULL;
}

/**
 * kprog_ib_dev_present() - is a device still in use by the transport?
 * @dev: the device
 *
 * A connection listed after this returned true is torn down by the
 * device's removal, which takes the device off the list first.
 *
 * Return: false once its removal began.
 */
bool kprog_ib_dev_present(struct ib_device *dev)
{
	struct kprog_ib_dev *d;
	bool found = false;

	mutex_lock(&kprog_ib_dev_mutex);
	list_for_each_entry(d, &kprog_ib_devs, node)
		found |= d->ib == dev;
	mutex_unlock(&kprog_ib_dev_mutex);
	return found;
}

/**
 * kprog_ib_local_addr() - the name other nodes know this node by
 * @addr: filled: AF_INET, the address, port 0
 *
 * The transport's &kprog_transport.local_addr. Process context.
 *
 * Return: 0, or -ENODEV when no usable port has the node's address.
 */
int kprog_ib_local_addr(struct kprog_node_addr *addr)
{
	struct kprog_ib_port p;
	bool found;

	memset(addr, 0, sizeof(*addr));
	mutex_lock(&kprog_ib_dev_mutex);
	found = kprog_ib_port_find(&p);
	mutex_unlock(&kprog_ib_dev_mutex);
	if (!found)
		return -ENODEV;
	addr->family = AF_INET;
	if (kprog_ib_fixed)
		memcpy(addr->addr, kprog_ib_fixed_addr.addr, 4);
	else
		memcpy(addr->addr, &p.gid.raw[12], 4);
	return 0;
}

/**
 * kprog_ib_addr_is_local() - is an address this node's?
 * @a: an IPv4 address
 *
 * Return: true for this node's address (kprog_ib_local_addr()): a node map
 * naming it means the loopback of KPROG_JOIN_NET_ONLY. Only the node's
 * name counts, not every address the kernel routes to itself (all of
 * 127.0.0.0/8 on a machine whose rxe runs over a veth pair).
 */
bool kprog_ib_addr_is_local(const struct kprog_ib_addr *a)
{
	struct kprog_node_addr self;

	return !kprog_ib_local_addr(&self) && !memcmp(self.addr, a->addr, 4);
}

/**
 * kprog_ib_parse_node_addr() - the module parameter node_addr
 * @s: "" (find it from the devices) or a dotted IPv4 address
 *
 * Return: 0, or -EINVAL for anything else.
 */
int kprog_ib_parse_node_addr(const char *s)
{
	u8 ip[4];

	kprog_ib_fixed = false;
	if (!s || !*s)
		return 0;
	if (!in4_pton(s, -1, ip, '\0', NULL))
		return -EINVAL;
	memset(&kprog_ib_fixed_addr, 0, sizeof(kprog_ib_fixed_addr));
	kprog_ib_fixed_addr.family = AF_INET;
	memcpy(kprog_ib_fixed_addr.addr, ip, 4);
	kprog_ib_fixed = true;
	return 0;
}

/**
 * kprog_ib_dev_init() - track RDMA devices
 * @gone: called when a device is being removed, in process context,
 *	before this file lets go of it: everything made on the device must
 *	be gone when it returns (the connections, kprog_ib_conn_dev_gone())
 *
 * Devices present now are added before this returns (the transport
 * registers with the core if one is usable).
 *
 * Return: 0 or a negative errno.
 */
int kprog_ib_dev_init(void (*gone)(struct ib_device *dev))
{
	kprog_ib_dev_gone = gone;
	return ib_register_client(&kprog_ib_client);
}

/**
 * kprog_ib_dev_exit() - stop tracking devices; each is removed first
 */
void kprog_ib_dev_exit(void)
{
	ib_unregister_client(&kprog_ib_client);
}
