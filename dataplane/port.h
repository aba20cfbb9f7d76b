/* SPDX-License-Identifier: MIT */
/* The port interface: one table of burst operations that every backend
 * (afxdp, dpdk, loop) fills in. The engine and the transport only ever see
 * this; a backend never knows a QP.
 *
 * Frame ownership: a frame belongs to exactly one stage at a time.
 *  - rx_burst hands frames to the caller; the caller returns each with
 *    port_free() when done with it.
 *  - alloc hands empty TX frames to the caller; the caller fills data/len
 *    and passes them to tx_burst, which takes frames [0, ret) and leaves the
 *    rest with the caller (to retry or free).
 */
#ifndef UROCE_DATAPLANE_PORT_H
#define UROCE_DATAPLANE_PORT_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "uroce_config.h"

/* A frame descriptor. data points at the first byte of the Ethernet header;
 * room is how many bytes may be written from data on. cookie is the
 * backend's handle (UMEM address, rte_mbuf pointer, pool slot). */
struct uroce_frame {
	uint8_t *data;
	uint32_t len;
	uint32_t room;
	uint64_t cookie;
};

enum port_kind {
	PORT_KIND_LOOP = 0,
	PORT_KIND_AFXDP,
	PORT_KIND_DPDK,
	PORT_KIND_VERBS,
};

/* Largest burst any caller passes; backends size their scratch by it. */
#define PORT_BURST_MAX 64u

struct loop_fabric;

struct port_config {
	enum port_kind kind;

	/* afxdp */
	char ifname[IF_NAMESIZE];
	uint32_t queue;          /* first rx/tx queue */
	uint32_t frame_size;     /* UMEM frame size (0 = default 4096) */
	uint32_t nframes;        /* UMEM frames (0 = default) */
	uint16_t extra_udp_port; /* second UDP port the XDP program steers (0 = none) */
	bool force_copy;         /* skip the zero-copy attempt */
	bool want_zc;            /* zero-copy asked for: its refusal is a note the tools print */
	bool force_skb;          /* attach XDP in generic (skb) mode */

	/* dpdk: EAL arguments, passed through as they are (argv[0] included) */
	int eal_argc;
	char **eal_argv;
	uint16_t dpdk_port_id;
	uint32_t ipv4_be;        /* address the DPDK port answers ARP for */

	/* loop */
	struct loop_fabric *fabric;
	unsigned loop_index;

	/* verbs: an RDMA device by its name (ibv_get_device_name) and port */
	char ibdev[64];
	uint8_t ib_port;         /* 1.. (0 = 1) */
};

struct port;
struct port_capture;
struct nic_ops;

struct port_ops {
	const char *name;
	int (*open)(struct port *p, char *err, size_t errlen);
	void (*close)(struct port *p);
	uint16_t (*rx_burst)(struct port *p, struct uroce_frame *f, uint16_t n);
	uint16_t (*tx_burst)(struct port *p, struct uroce_frame *f, uint16_t n);
	uint16_t (*alloc)(struct port *p, struct uroce_frame *f, uint16_t n);
	void (*free)(struct port *p, struct uroce_frame *f, uint16_t n);
	bool (*link_up)(struct port *p);
	/* Read the link state from the device now, not at poll's next slow
	 * tick (a failover group asks every 100 us); NULL: link_up is live. */
	void (*link_refresh)(struct port *p);
	/* Housekeeping outside the burst calls: reap TX completions, refill the
	 * RX ring, kick the kernel when need_wakeup says so, answer ARP. Cheap
	 * enough to call every loop iteration. */
	void (*poll)(struct port *p);
	/* A backend whose device keeps its own GID table (verbs): copy up to
	 * max entries into gid, return how many. NULL: the table is built
	 * from the kernel interface (afxdp) or synthesised (loop, dpdk). */
	unsigned (*gids)(struct port *p, uint8_t (*gid)[16], unsigned max);
	/* A backend that moves the bytes itself (an RDMA NIC): the table
	 * through which the transport's objects (PD, MR, CQ, QP) live on the
	 * device (transport/core/nic.h). NULL: frames, built by the transport. */
	const struct nic_ops *nic;
};

struct port {
	const struct port_ops *ops;
	struct port_config cfg;
	uint8_t mac[6];
	uint32_t mtu;     /* L3 MTU of the link */
	int ifindex;      /* kernel interface, 0 when none */
	uint32_t ipv4_be; /* the port's IPv4 address (0 if unknown) */
	uint8_t completion_ts; /* a verbs port whose device stamps its completions */
	uint8_t max_mtu;  /* a verbs port's device's largest MTU (enum uroce_mtu); 0 on frame ports */
	char note[512];   /* what the backend could not do as asked, and why ("" when all went as asked) */
	struct uroce_port_stats stats;
	struct port_capture *cap; /* a capture running (port_capture.h), else NULL */
	void *priv;       /* backend state */
};

void port_capture_burst(struct port *p, const struct uroce_frame *f, uint16_t n);

/* Backends; a NULL-returning lookup means it was not built in. */
extern const struct port_ops port_loop_ops;
#if UROCE_HAVE_AFXDP
extern const struct port_ops port_afxdp_ops;
#endif
#if UROCE_HAVE_DPDK
extern const struct port_ops port_dpdk_ops;
#endif
#if UROCE_HAVE_VERBS
extern const struct port_ops port_verbs_ops;
#endif

/*
 * Parse a port spec: "afxdp:IFACE[:QUEUE[:generic|zc|copy]]", "dpdk[:PORTID]", "loop:INDEX"
 * or "verbs:DEV[:PORT]". Fills cfg (other fields zero). On error returns -EINVAL and
 * writes a message saying what is wrong and what is accepted.
 */
int port_config_parse(const char *spec, struct port_config *cfg, char *err, size_t errlen);

/*
 * Split a command line at its first "--": returns how many arguments come
 * before it (all of argc when there is none) and points *eal_argv at the
 * "--" itself, which serves EAL as its argv[0], with *eal_argc counting it;
 * both are left untouched when there is no "--".
 */
int port_split_eal_args(int argc, char **argv, int *eal_argc, char ***eal_argv);

/*
 * Split a device list "SPEC[,SPEC...]" (the tools' -d) into at most max
 * port specs, copied into buf (buflen bytes) and pointed at by specs[].
 * With bare_is_afxdp a spec without ':' other than "dpdk" gets "afxdp:" in
 * front (rdma-core's -d takes a bare device name). Returns how many, or
 * -EINVAL with a message in err (none named, more than max, buf too small).
 */
int port_split_spec_list(const char *list, bool bare_is_afxdp, char *buf, size_t buflen, const char **specs,
                         unsigned max, char *err, size_t errlen);

/*
 * The tools' -d (uroce-pingpong, uroce-perf): port_split_spec_list with a
 * bare IFACE meaning afxdp:IFACE, and each spec's kind checked against
 * what a tool can open: a loop port (it lives in one process's fabric)
 * and an unknown kind are refused with a message in the tools' terms.
 * Returns how many, or -EINVAL with the message in err.
 */
int port_tool_spec_list(const char *list, char *buf, size_t buflen, const char **specs, unsigned max, char *err,
                        size_t errlen);

/* Open a port. Returns 0 and *out, or -errno with a message in err. */
int port_open(struct port **out, const struct port_config *cfg, char *err, size_t errlen);
void port_close(struct port *p);

/* Adds a burst of n frames to one direction's packet and byte counters. */
static inline void port_count_burst(uint64_t *packets, uint64_t *bytes, const struct uroce_frame *f, uint16_t n)
{
	*packets += n;
	for (uint16_t i = 0; i < n; i++)
		*bytes += f[i].len;
}

static inline uint16_t port_rx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	uint16_t got = p->ops->rx_burst(p, f, n);

	port_count_burst(&p->stats.rx_packets, &p->stats.rx_bytes, f, got);
	if (__builtin_expect(p->cap != NULL, 0))
		port_capture_burst(p, f, got);
	return got;
}

static inline uint16_t port_tx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	uint16_t sent = p->ops->tx_burst(p, f, n);

	port_count_burst(&p->stats.tx_packets, &p->stats.tx_bytes, f, sent);
	/* after the send, so a frame the port refused (retried later) is
	 * captured once; a taken frame's bytes stay put until its completion
	 * is reaped, which tx_burst does not do for the frames it just took */
	if (__builtin_expect(p->cap != NULL, 0))
		port_capture_burst(p, f, sent);
	return sent;
}

static inline uint16_t port_alloc(struct port *p, struct uroce_frame *f, uint16_t n)
{
	return p->ops->alloc(p, f, n);
}

static inline void port_free(struct port *p, struct uroce_frame *f, uint16_t n)
{
	p->ops->free(p, f, n);
}

static inline void port_poll(struct port *p)
{
	p->ops->poll(p);
}

static inline bool port_link_up(struct port *p)
{
	return p->ops->link_up(p);
}

static inline void port_link_refresh(struct port *p)
{
	if (p->ops->link_refresh)
		p->ops->link_refresh(p);
}

static inline void port_count_drop(struct port *p, enum uroce_drop_reason r)
{
	p->stats.drops[r]++;
}

#endif /* UROCE_DATAPLANE_PORT_H */
