/* SPDX-License-Identifier: MIT */
/* uroce_steer_sports: UDP source ports that bring a peer's packets to the
 * receive queue this port's engine polls. A NIC spreads flows over its
 * queues by RSS, a Toeplitz hash of the addresses and ports under its key
 * and an indirection table; both are readable (ethtool -x), so the
 * receiver can tell which source ports land on its queue and give them to
 * the peer at connect (attr.sports). Several engines, each on a queue of
 * its own, then never see each other's packets. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "dataplane/neigh.h"
#include "dataplane/nic_ethtool.h"
#include "dataplane/rss.h"
#include "transport/core/qp_internal.h"

#define STEER_SPORT_MIN 0xc000u /* the RoCEv2 source port range rdma-core uses */

int uroce_steer_sports(struct uroce_context *ctx, uint8_t port_num, const uint8_t local_gid[16],
                       const uint8_t peer_gid[16], uint16_t *sports, unsigned n)
{
	const char *fn = "uroce_steer_sports";
	const struct port *p;
	struct nic_rss r;
	uint32_t saddr, daddr, queue, start = 0;
	unsigned found = 0;
	bool in_table = false;
	int pi, rc;

	if (!ctx || !peer_gid || !sports)
		return uroce_fail(-EINVAL, "%s: ctx, peer_gid and sports are required", fn);
	if (n < 1 || n > UROCE_MAX_SPORTS)
		return uroce_fail(-EINVAL, "%s: n %u; accepted 1-%u", fn, n, UROCE_MAX_SPORTS);
	pi = ctx_port_index(ctx, port_num, fn);
	if (pi < 0)
		return pi;
	p = ctx->ports[pi].port;
	if (p->cfg.kind != PORT_KIND_AFXDP)
		return uroce_fail(-EOPNOTSUPP, "%s: port %u is not an afxdp port; steering by RSS needs the kernel "
		                               "interface whose queue the port polls", fn, port_num);
	if (!neigh_addr_is_v4(peer_gid) || (local_gid && !neigh_addr_is_v4(local_gid)))
		return uroce_fail(-EOPNOTSUPP, "%s: IPv6 GIDs are not steered yet; use the IPv4-mapped GIDs", fn);
	memcpy(&saddr, peer_gid + 12, 4);
	if (local_gid)
		memcpy(&daddr, local_gid + 12, 4);
	else
		daddr = p->ipv4_be;
	if (!daddr)
		return uroce_fail(-EINVAL, "%s: port %u has no IPv4 address; give local_gid", fn, port_num);
	rc = nic_rss_read(p->cfg.ifname, &r);
	if (rc)
		return uroce_fail(rc, "%s: %s has no RSS configuration to read (%s): a NIC with RSS spreads flows "
		                      "by a hash it reports (ethtool -x %s); virtio_net needs the device's RSS "
		                      "(QEMU: virtio-net-pci,rss=on)", fn, p->cfg.ifname, strerror(-rc), p->cfg.ifname);
	if (r.hfunc && !(r.hfunc & NIC_RSS_HASH_TOP))
		return uroce_fail(-EOPNOTSUPP, "%s: %s hashes with function 0x%x, not Toeplitz: ethtool -X %s hfunc "
		                               "toeplitz", fn, p->cfg.ifname, r.hfunc, p->cfg.ifname);
	if (!r.udp4_ports)
		return uroce_fail(-EOPNOTSUPP, "%s: %s hashes UDP/IPv4 by its addresses only, so no source port "
		                               "steers: ethtool -N %s rx-flow-hash udp4 sdfn", fn, p->cfg.ifname,
		                  p->cfg.ifname);
	queue = p->cfg.queue;
	for (uint32_t i = 0; i < r.indir_n; i++)
		in_table |= r.indir[i] == queue;
	if (!in_table)
		return uroce_fail(-EOPNOTSUPP, "%s: no RSS table entry of %s points at queue %u, so no flow reaches "
		                               "it: ethtool -X %s equal N (N > %u)", fn, p->cfg.ifname, queue,
		                  p->cfg.ifname, queue);
	/* a random start, so QPs spread over the ports that qualify */
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
		start = (uint32_t)(uintptr_t)sports;
	for (uint32_t k = 0; k < 0x4000u && found < n; k++) {
		uint16_t s = (uint16_t)(STEER_SPORT_MIN + ((start + k) & 0x3fffu));

		if (rss_queue_udp4(&r, saddr, daddr, s, ROCE_UDP_PORT) == queue)
			sports[found++] = s;
	}
	if (found < n)
		return uroce_fail(-ENOSPC, "%s: only %u of the 16384 source ports reach queue %u of %s", fn, found,
		                  queue, p->cfg.ifname);
	return 0;
}
