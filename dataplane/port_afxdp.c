/* SPDX-License-Identifier: MIT */
/* The afxdp port: one AF_XDP socket on one (interface, queue), its UMEM with
 * fill and completion rings, and the XDP program (ebpf/xdp_roce.bpf.c,
 * embedded) that steers RoCEv2 to the socket, shared by every port of this
 * process on the same interface through one XSKMAP keyed by queue.
 *
 * Sockets and rings are libxdp's (<xdp/xsk.h>), so the data path is the one
 * a bare libxdp loop runs. libxdp does not load a program
 * (XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD): ours is loaded here with libbpf,
 * which also keeps libxdp's multi-program dispatcher (refused by this
 * machine's kernel, where libxdp falls back to a single program) and its
 * bpffs needs out of the way.
 *
 * Frames: the UMEM is an array of slots of K chunks (K = 1 unless the MTU
 * needs multi-buffer frames); a frame's cookie is its slot's UMEM address.
 * Free slots sit on a stack; the fill ring and alloc() take from it, frees
 * and TX completions push back. Multi-buffer RX frames are made contiguous by
 * copying the later buffers behind the first, inside the first buffer's
 * slot, so callers always see one flat frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "dataplane/errbuf.h"
#include "dataplane/nic_ethtool.h"
#include "dataplane/port.h"
#include "dataplane/port_afxdp.h"
#include "ebpf/xdp_roce.h"

/* Missing from the Debian 6.1 uapi headers; values are kernel ABI. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif

/* The embedded program (ebpf/meson.build generates it). */
extern const unsigned char uroce_xdp_roce_bpf[];
extern const size_t uroce_xdp_roce_bpf_len;

#define AFXDP_CHUNK_DEFAULT 4096u
#define AFXDP_CHUNK_MIN 2048u           /* kernel's XDP_UMEM_MIN_CHUNK_SIZE */
#define AFXDP_RING_MAX 2048u            /* per ring; a power of two */
#define AFXDP_NFRAMES_DEFAULT 4096u     /* two rings' worth of frames */
#define AFXDP_NFRAMES_MIN 64u
#define AFXDP_NFRAMES_MAX (1u << 20)
/* A frame buffer as the kernel fills it in copy mode (and most drivers in
 * zero-copy mode): XDP_PACKET_HEADROOM bytes in front of the packet. */
#define AFXDP_RX_HEADROOM 256u
/* Largest frame a driver keeps in one buffer for an XDP program without
 * frags support: a page less the XDP headroom and skb_shared_info (veth
 * refuses such a program above an MTU of about 3500). */
#define AFXDP_LINEAR_MAX (4096u - 256u - 320u)
#define AFXDP_L2_OVERHEAD (14u + 4u)    /* Ethernet + one 802.1Q tag */
/* The kernel splits one packet into at most MAX_SKB_FRAGS + 1 buffers. */
#define AFXDP_MAX_FRAGS 18u
/* Queue release after a process exits is deferred in the kernel; bind gets
 * EBUSY for up to about a second. */
#define AFXDP_BIND_RETRY_MS 3000
/* Link state and kernel drop counters are re-read this often (ns), checked
 * every AFXDP_SLOW_POLLS polls, so poll() costs no syscall otherwise. */
#define AFXDP_SLOW_NS 50000000ull
#define AFXDP_SLOW_POLLS 64u

/* Copy mode transmits inside our own sendto(), at most 32 descriptors a
 * call: a deeper backlog only holds frames the fill ring needs (with
 * thousands of QPs it starved the receive side of ACKs) and adds local
 * queueing delay to every RTT sample. Zero-copy drivers get the ring. */
#define AFXDP_COPY_TX_INFLIGHT 256u

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* One interface's XDP program and XSKMAP, shared by this process's ports
 * on it. */
struct afxdp_iface {
	struct afxdp_iface *next;
	uint64_t netns; /* ifindexes repeat across network namespaces */
	int ifindex;
	char ifname[IF_NAMESIZE];
	unsigned refs;
	struct bpf_object *obj; /* NULL when we adopted another process's copy */
	int prog_fd;
	int xsks_fd;
	uint32_t xsks_max;
	uint32_t prog_id;
	/* The program is attached through a BPF link, so it is detached when
	 * the last holder of the link closes it, in whatever process, and
	 * also when a process dies without closing its ports. */
	int link_fd;           /* our reference to the XDP link; -1 if none */
	bool owner;            /* we created the link */
	bool frags;
	bool skb_mode;
	uint16_t extra_port;
	/* virtio_net before our attach: queue pairs in use and at most; XDP
	 * wants one more TX queue per CPU on top, else its TX is shared */
	uint32_t virtio_qp, virtio_max;
	char driver[32];       /* ethtool's driver name ("" when it does not say) */
	uint64_t queues_open[1024 / 64]; /* port_config_parse caps queues at 1023 */
};

static pthread_mutex_t ifaces_lock = PTHREAD_MUTEX_INITIALIZER;

/* What to do when the kernel refuses for want of privilege (EPERM, EACCES). */
#define AFXDP_PRIV_HINT "run as root (needs CAP_NET_ADMIN, CAP_BPF and CAP_SYS_ADMIN to load and attach the XDP " \
			"program, CAP_NET_RAW for the AF_XDP socket)"

static bool no_privilege(int rc)
{
	return rc == -EPERM || rc == -EACCES;
}

/* libbpf's own lines (its RLIMIT_MEMLOCK bump, "Couldn't load trivial BPF
 * program", "failed to load object") say less than our message and only
 * confuse; they go to stderr only with UROCE_LIBBPF_DEBUG set. */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!getenv("UROCE_LIBBPF_DEBUG"))
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, ap);
}
static struct afxdp_iface *ifaces;

struct afxdp {
	/* data path: the four rings and the frame stack */
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	uint8_t *umem;
	uint64_t *free_stack;
	uint32_t nfree;
	uint32_t nslots;
	uint32_t chunk_shift;
	uint32_t chunk_size;
	uint32_t slot_shift;
	uint32_t slot_size;
	uint32_t max_frame;    /* largest L2 frame the link carries */
	uint32_t fill_reserve; /* frames the fill ring leaves for TX */
	uint32_t ring_size;
	uint32_t tx_outstanding; /* descriptors the kernel has not completed */
	bool sg;
	bool link_up;
	int fd;
	uint8_t *tx_pend; /* multi-buffer: descriptors in flight per slot */
	uint32_t poll_count;

	/* slow path */
	uint64_t next_slow_ns;
	uint64_t kstat_drops; /* kernel drops already counted */
	uint64_t kick_errors;
	int ctl_fd; /* AF_INET datagram socket for interface ioctls */
	bool zero_copy;
	bool in_map; /* our socket is the XSKMAP entry of our queue */
	uint32_t queue;
	size_t umem_len;
	struct xsk_umem *umem_h;
	struct xsk_socket *xsk;
	struct afxdp_iface *ifc;
} __attribute__((aligned(64)));


static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t log2u(uint32_t v)
{
	return 31u - (uint32_t)__builtin_clz(v);
}

static uint32_t pow2_ceil(uint32_t v)
{
	return v <= 1 ? 1 : 1u << (32 - __builtin_clz(v - 1));
}

/* ---------------------------------------------------------------- data path */

static inline void kick_tx(struct port *p, struct afxdp *x)
{
	if (!xsk_ring_prod__needs_wakeup(&x->tx))
		return;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return;
	switch (errno) {
	case EAGAIN:  /* driver queue busy: the descriptor stays, next kick */
	case ENOBUFS: /* no skb right now: likewise */
	case EINTR:
		return;
	case EBUSY:
		/* Copy mode: the driver dropped one frame (NET_XMIT_DROP)
		 * and the kernel stopped there; it is completed unsent. */
		if (!x->zero_copy)
			port_count_drop(p, UROCE_DROP_TX_RING_FULL);
		return;
	case ENETDOWN:
	case ENXIO:
		x->link_up = false;
		return;
	default:
		x->kick_errors++;
	}
}

/* Hands the n descriptors written to the TX ring to the kernel. */
static inline void tx_submit(struct port *p, struct afxdp *x, uint32_t n)
{
	if (!n)
		return;
	xsk_ring_prod__submit(&x->tx, n);
	x->tx_outstanding += n;
	kick_tx(p, x);
}

static inline void reap_completions(struct afxdp *x)
{
	uint32_t idx, n = xsk_ring_cons__peek(&x->cq, x->ring_size, &idx);

	if (!n)
		return;
	if (likely(!x->sg)) {
		uint64_t mask = ~(uint64_t)(x->chunk_size - 1);

		for (uint32_t i = 0; i < n; i++)
			x->free_stack[x->nfree + i] = *xsk_ring_cons__comp_addr(&x->cq, idx + i) & mask;
		x->nfree += n;
	} else {
		/* One completion per descriptor; the slot is free when the
		 * last descriptor of its frame is back. */
		for (uint32_t i = 0; i < n; i++) {
			uint64_t slot = *xsk_ring_cons__comp_addr(&x->cq, idx + i) >> x->slot_shift;

			if (--x->tx_pend[slot] == 0)
				x->free_stack[x->nfree++] = slot << x->slot_shift;
		}
	}
	xsk_ring_cons__release(&x->cq, n);
	x->tx_outstanding -= n;
}

static inline void refill_fill_ring(struct afxdp *x)
{
	uint32_t want, space, idx;

	if (x->nfree <= x->fill_reserve)
		return;
	want = x->nfree - x->fill_reserve;
	space = xsk_prod_nb_free(&x->fq, want);
	if (space < want)
		want = space;
	if (!want || xsk_ring_prod__reserve(&x->fq, want, &idx) != want)
		return;
	for (uint32_t i = 0; i < want; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = x->free_stack[--x->nfree];
	xsk_ring_prod__submit(&x->fq, want);
}

/* Multi-buffer receive: descriptors with XDP_PKT_CONTD continue into the
 * next one. A packet whose last descriptor has not arrived yet is left in
 * the ring for the next call. */
static uint16_t rx_burst_sg(struct port *p, struct afxdp *x, struct uroce_frame *f, uint16_t n)
{
	uint32_t idx, avail, used = 0;
	uint16_t got = 0;

	avail = xsk_ring_cons__peek(&x->rx, (uint32_t)n + AFXDP_MAX_FRAGS, &idx);
	while (got < n && used < avail) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + used);
		uint32_t end = used;

		while (end < avail && (xsk_ring_cons__rx_desc(&x->rx, idx + end)->options & XDP_PKT_CONTD))
			end++;
		if (end == avail)
			break;

		uint64_t base = d->addr & ~(uint64_t)(x->slot_size - 1);
		uint32_t off = (uint32_t)(d->addr - base), len = d->len;
		bool fits = true;

		for (uint32_t j = used + 1; j <= end; j++) {
			const struct xdp_desc *c = xsk_ring_cons__rx_desc(&x->rx, idx + j);
			uint64_t cbase = c->addr & ~(uint64_t)(x->slot_size - 1);

			if (fits && off + len + c->len <= x->slot_size)
				memcpy(x->umem + base + off + len, x->umem + c->addr, c->len);
			else
				fits = false;
			len += c->len;
			x->free_stack[x->nfree++] = cbase;
		}
		if (likely(fits)) {
			f[got].data = x->umem + d->addr;
			f[got].len = len;
			f[got].room = x->slot_size - off;
			f[got].cookie = base;
			got++;
		} else {
			x->free_stack[x->nfree++] = base;
			port_count_drop(p, UROCE_DROP_NO_BUFFER);
		}
		used = end + 1;
	}
	xsk_ring_cons__cancel(&x->rx, avail - used);
	if (used)
		xsk_ring_cons__release(&x->rx, used);
	return got;
}

static uint16_t afxdp_rx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct afxdp *x = p->priv;
	uint32_t idx, got;
	uint64_t mask;

	if (unlikely(x->sg))
		return rx_burst_sg(p, x, f, n);
	got = xsk_ring_cons__peek(&x->rx, n, &idx);
	if (!got)
		return 0;
	mask = ~(uint64_t)(x->chunk_size - 1);
	for (uint32_t i = 0; i < got; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		uint64_t base = d->addr & mask;

		f[i].data = x->umem + d->addr;
		__builtin_prefetch(f[i].data);
		f[i].len = d->len;
		f[i].room = x->chunk_size - (uint32_t)(d->addr - base);
		f[i].cookie = base;
	}
	xsk_ring_cons__release(&x->rx, got);
	return (uint16_t)got;
}

/* A frame the kernel would reject (and never complete) is taken, freed
 * and counted instead of posted, so its slot does not leak. */
static inline bool tx_frame_bad(const struct afxdp *x, const struct uroce_frame *fr, uint32_t *off)
{
	*off = (uint32_t)((uint64_t)(fr->data - x->umem) - fr->cookie);
	return fr->len == 0 || fr->len > x->max_frame || (uint64_t)*off + fr->len > x->slot_size ||
	       (fr->cookie & (x->slot_size - 1)) || fr->cookie >= (uint64_t)x->nslots << x->slot_shift;
}

/* Only a cookie that names one of our slots goes back on the stack; any
 * other is not ours to recycle. */
static inline void tx_drop_bad(struct port *p, struct afxdp *x, const struct uroce_frame *fr)
{
	if (!(fr->cookie & (x->slot_size - 1)) && fr->cookie < (uint64_t)x->nslots << x->slot_shift &&
	    x->nfree < x->nslots)
		x->free_stack[x->nfree++] = fr->cookie;
	port_count_drop(p, UROCE_DROP_BAD_LENGTH);
}

/* Descriptors the TX ring may take now, of want. */
static inline uint32_t tx_space(struct afxdp *x, uint32_t want)
{
	uint32_t space = xsk_prod_nb_free(&x->tx, want);

	if (!x->zero_copy) {
		if (x->tx_outstanding + want > AFXDP_COPY_TX_INFLIGHT)
			reap_completions(x);
		uint32_t room = x->tx_outstanding < AFXDP_COPY_TX_INFLIGHT ? AFXDP_COPY_TX_INFLIGHT - x->tx_outstanding : 0;

		if (space > room)
			space = room;
	}
	return space;
}

static uint16_t tx_burst_sg(struct port *p, struct afxdp *x, struct uroce_frame *f, uint16_t n)
{
	uint32_t space = tx_space(x, (uint32_t)n * 2), ndesc = 0, idx = 0;
	uint16_t taken = 0;

	/* Count what fits first, so the ring is reserved once. */
	for (; taken < n; taken++) {
		uint32_t off, k;

		if (tx_frame_bad(x, &f[taken], &off)) {
			k = 0;
		} else {
			k = ((off + f[taken].len - 1) >> x->chunk_shift) - (off >> x->chunk_shift) + 1;
		}
		if (ndesc + k > space)
			break;
		ndesc += k;
	}
	if (ndesc && xsk_ring_prod__reserve(&x->tx, ndesc, &idx) != ndesc)
		return 0;
	for (uint16_t i = 0; i < taken; i++) {
		uint32_t off, left;
		uint64_t addr;

		if (tx_frame_bad(x, &f[i], &off)) {
			tx_drop_bad(p, x, &f[i]);
			continue;
		}
		addr = f[i].cookie + off;
		left = f[i].len;
		x->tx_pend[f[i].cookie >> x->slot_shift] =
			(uint8_t)(((off + left - 1) >> x->chunk_shift) - (off >> x->chunk_shift) + 1);
		while (left) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx++);
			uint32_t room = x->chunk_size - (uint32_t)(addr & (x->chunk_size - 1));
			uint32_t len = left < room ? left : room;

			d->addr = addr;
			d->len = len;
			left -= len;
			d->options = left ? XDP_PKT_CONTD : 0;
			addr += len;
		}
	}
	tx_submit(p, x, ndesc);
	return taken;
}

static uint16_t afxdp_tx_burst(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct afxdp *x = p->priv;
	uint32_t idx, space, posted = 0;

	if (unlikely(x->sg))
		return tx_burst_sg(p, x, f, n);
	/* Frames that do not fit stay with the caller (port.h): not a drop. */
	space = tx_space(x, n);
	if (space < n)
		n = (uint16_t)space;
	if (!n || xsk_ring_prod__reserve(&x->tx, n, &idx) != n)
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t off;

		if (unlikely(tx_frame_bad(x, &f[i], &off))) {
			tx_drop_bad(p, x, &f[i]);
			continue;
		}
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + posted++);
		d->addr = f[i].cookie + off;
		d->len = f[i].len;
		d->options = 0;
	}
	/* Reserved slots left unused by bad frames are handed back: the
	 * producer only moves by what was written. */
	x->tx.cached_prod -= n - posted;
	tx_submit(p, x, posted);
	return n;
}

static uint16_t afxdp_alloc(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct afxdp *x = p->priv;

	if (x->nfree < n)
		reap_completions(x);
	if (n > x->nfree)
		n = (uint16_t)x->nfree;
	for (uint16_t i = 0; i < n; i++) {
		uint64_t addr = x->free_stack[--x->nfree];

		f[i].data = x->umem + addr;
		f[i].len = 0;
		f[i].room = x->slot_size;
		f[i].cookie = addr;
	}
	return n;
}

static void afxdp_free(struct port *p, struct uroce_frame *f, uint16_t n)
{
	struct afxdp *x = p->priv;

	/* More frees than frames exist means a double free by the caller;
	 * refusing it keeps the stack (and the UMEM) consistent. */
	if (unlikely(x->nfree + n > x->nslots))
		n = (uint16_t)(x->nslots - x->nfree);
	for (uint16_t i = 0; i < n; i++)
		x->free_stack[x->nfree + i] = f[i].cookie;
	x->nfree += n;
}

static void read_link(struct port *p, struct afxdp *x)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GLINK };
	struct ifreq ifr;
	short flags;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, p->cfg.ifname, sizeof(p->cfg.ifname));
	if (ioctl(x->ctl_fd, SIOCGIFFLAGS, &ifr)) {
		if (errno == ENODEV)
			x->link_up = false;
		return;
	}
	flags = ifr.ifr_flags;
	if (!(flags & IFF_UP)) {
		x->link_up = false;
		return;
	}
	/* The carrier itself where the driver reports it: IFF_RUNNING
	 * (operstate) follows the carrier only once the kernel's linkwatch
	 * work has run, up to a second later. */
	ifr.ifr_data = (void *)&ev;
	if (ioctl(x->ctl_fd, SIOCETHTOOL, &ifr) == 0)
		x->link_up = ev.data != 0;
	else
		x->link_up = (flags & IFF_RUNNING) != 0;
}

/* Drops inside the kernel (no fill buffer, RX ring full) belong to this
 * port's counters too. */
static void read_kernel_drops(struct port *p, struct afxdp *x)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	uint64_t drops;

	memset(&st, 0, sizeof(st));
	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return;
	drops = st.rx_dropped + st.rx_ring_full;
	if (drops > x->kstat_drops) {
		p->stats.drops[UROCE_DROP_NO_BUFFER] += drops - x->kstat_drops;
		x->kstat_drops = drops;
	}
}

static void afxdp_poll(struct port *p)
{
	struct afxdp *x = p->priv;

	reap_completions(x);
	refill_fill_ring(x);
	/* Copy mode sends at most 32 frames per wakeup: kick again while
	 * the kernel has not taken everything off the TX ring (descriptors
	 * it took but has not completed need no kick). */
	if (x->tx_outstanding && xsk_prod_nb_free(&x->tx, x->ring_size) < x->ring_size)
		kick_tx(p, x);
	/* Zero-copy drivers ask for a wakeup once they ran out of fill
	 * buffers; only then, and only with nothing to read, is it a syscall. */
	if (unlikely(xsk_ring_prod__needs_wakeup(&x->fq)) && !xsk_cons_nb_avail(&x->rx, 1))
		recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	if (unlikely(++x->poll_count % AFXDP_SLOW_POLLS == 0)) {
		uint64_t now = mono_ns();

		if (now >= x->next_slow_ns) {
			x->next_slow_ns = now + AFXDP_SLOW_NS;
			read_link(p, x);
			read_kernel_drops(p, x);
		}
	}
}

static void afxdp_link_refresh(struct port *p)
{
	read_link(p, p->priv);
}

static bool afxdp_link_up(struct port *p)
{
	struct afxdp *x = p->priv;

	return x->link_up;
}

/* ------------------------------------------------- XDP program, per interface */

/* Entries in the XSKMAP when the driver does not report its queues. */
#define AFXDP_QUEUES_UNKNOWN 64u

/* The most queues the interface can have (so every queue fits the XSKMAP
 * of the program loaded for the first one). */
static uint32_t iface_queue_count(const char *ifname)
{
	struct nic_channels c;
	uint32_t n;

	if (nic_channels(ifname, &c))
		return AFXDP_QUEUES_UNKNOWN;
	n = c.max_combined;
	if (c.max_rx > n)
		n = c.max_rx;
	if (c.max_tx > n)
		n = c.max_tx;
	return n ? n : 1;
}

/* The error for a queue past the interface's n queues. */
static int queue_missing(char *err, size_t errlen, const char *ifname, uint32_t n, uint32_t queue)
{
	return errbuf_fail(err, errlen, -EINVAL, "%s has %u queue%s (0-%u); queue %u does not exist", ifname, n,
		    n == 1 ? "" : "s", n - 1, queue);
}

static void iface_release_fds(struct afxdp_iface *ifc)
{
	/* Dropping our link reference detaches the program once no other
	 * process holds one. */
	if (ifc->link_fd >= 0)
		close(ifc->link_fd);
	ifc->link_fd = -1;
	ifc->owner = false;
	if (ifc->obj) {
		bpf_object__close(ifc->obj); /* closes prog_fd and the map fds */
	} else {
		if (ifc->prog_fd >= 0)
			close(ifc->prog_fd);
		if (ifc->xsks_fd >= 0)
			close(ifc->xsks_fd);
	}
	ifc->obj = NULL;
	ifc->prog_fd = ifc->xsks_fd = -1;
}

/* The XDP link that holds prog_id on ifindex, as a new fd (a reference that
 * keeps it attached), or -1 when the program was attached without a link
 * (ip link, libxdp). Link ifindexes are per network namespace, so the
 * program id, which is global, has to match too. */
static int find_xdp_link(int ifindex, uint32_t prog_id)
{
	uint32_t id = 0;

	/* Bounded: link ids are visited once each. */
	for (int n = 0; n < 1000000 && bpf_link_get_next_id(id, &id) == 0; n++) {
		struct bpf_link_info li;
		uint32_t len = sizeof(li);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&li, 0, sizeof(li));
		if (!bpf_obj_get_info_by_fd(fd, &li, &len) && li.type == BPF_LINK_TYPE_XDP &&
		    li.prog_id == prog_id && (int)li.xdp.ifindex == ifindex)
			return fd;
		close(fd);
	}
	return -1;
}

/* Another process (or an earlier run of this one that died) may have our
 * program attached already: use its XSKMAP when its configuration matches
 * ours, refuse a foreign program. */
static int iface_adopt(struct afxdp_iface *ifc, uint32_t prog_id, bool skb, bool frags, uint16_t extra_port,
		       char *err, size_t errlen)
{
	struct bpf_prog_info pinfo;
	uint32_t map_ids[8], len = sizeof(pinfo), nmaps;
	bool found_cfg = false;
	int fd, rc;

	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0) {
		rc = -errno;
		return errbuf_fail(err, errlen, rc, "%s: cannot open its XDP program (id %u), bpf(): %s%s%s", ifc->ifname,
			    prog_id, strerror(-rc), no_privilege(rc) ? "; " : "", no_privilege(rc) ? AFXDP_PRIV_HINT : "");
	}
	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.nr_map_ids = 8;
	pinfo.map_ids = (uint64_t)(uintptr_t)map_ids;
	rc = bpf_obj_get_info_by_fd(fd, &pinfo, &len);
	if (rc) {
		rc = -errno;
		close(fd);
		return errbuf_fail(err, errlen, rc, "%s: cannot inspect XDP program id %u: %s", ifc->ifname, prog_id,
			    strerror(-rc));
	}
	if (strcmp(pinfo.name, XDP_ROCE_PROG_NAME) && strcmp(pinfo.name, XDP_ROCE_PROG_FRAGS_NAME)) {
		close(fd);
		return errbuf_fail(err, errlen, -EBUSY,
			    "%s already has another XDP program attached ('%s', id %u); uroce needs its own there. "
			    "Detach it first: ip link set dev %s xdp off",
			    ifc->ifname, pinfo.name, prog_id, ifc->ifname);
	}
	if (frags && strcmp(pinfo.name, XDP_ROCE_PROG_FRAGS_NAME)) {
		close(fd);
		return errbuf_fail(err, errlen, -EBUSY,
			    "%s: the uroce XDP program attached there (id %u) has no multi-buffer support, which the "
			    "MTU now needs; close the ports using it or detach it: ip link set dev %s xdp off",
			    ifc->ifname, prog_id, ifc->ifname);
	}
	ifc->prog_fd = fd;
	ifc->xsks_fd = -1;
	nmaps = pinfo.nr_map_ids < 8 ? pinfo.nr_map_ids : 8;
	for (uint32_t i = 0; i < nmaps; i++) {
		struct bpf_map_info minfo;
		uint32_t mlen = sizeof(minfo);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);

		if (mfd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		if (bpf_obj_get_info_by_fd(mfd, &minfo, &mlen)) {
			close(mfd);
			continue;
		}
		if (minfo.type == BPF_MAP_TYPE_XSKMAP && ifc->xsks_fd < 0) {
			ifc->xsks_fd = mfd;
			ifc->xsks_max = minfo.max_entries;
			continue;
		}
		if (minfo.type == BPF_MAP_TYPE_ARRAY && minfo.value_size >= sizeof(struct xdp_roce_cfg) &&
		    strstr(minfo.name, ".rodata")) {
			uint8_t val[256];
			struct xdp_roce_cfg c;
			uint32_t key = 0;

			if (minfo.value_size <= sizeof(val) && !bpf_map_lookup_elem(mfd, &key, val)) {
				memcpy(&c, val, sizeof(c));
				found_cfg = c.version == XDP_ROCE_CFG_VERSION;
				if (found_cfg && c.extra_port_be != htons(extra_port)) {
					close(mfd);
					iface_release_fds(ifc);
					return errbuf_fail(err, errlen, -EBUSY,
						    "%s: the uroce XDP program attached there (id %u) steers extra UDP "
						    "port %u, this port asks for %u; use the same extra port or detach it: "
						    "ip link set dev %s xdp off",
						    ifc->ifname, prog_id, ntohs(c.extra_port_be), extra_port, ifc->ifname);
				}
			}
		}
		close(mfd);
	}
	if (ifc->xsks_fd < 0 || !found_cfg) {
		iface_release_fds(ifc);
		return errbuf_fail(err, errlen, -EBUSY,
			    "%s: XDP program id %u looks like uroce's but its maps do not match this version; "
			    "detach it: ip link set dev %s xdp off",
			    ifc->ifname, prog_id, ifc->ifname);
	}
	ifc->prog_id = prog_id;
	ifc->owner = false;
	ifc->link_fd = find_xdp_link(ifc->ifindex, prog_id);
	ifc->frags = !strcmp(pinfo.name, XDP_ROCE_PROG_FRAGS_NAME);
	ifc->skb_mode = skb;
	ifc->extra_port = extra_port;
	return 0;
}

static int iface_load(struct afxdp_iface *ifc, uint32_t xsks_max, bool frags, uint16_t extra_port, char *err,
		      size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .object_name = "xdp_roce");
	struct bpf_program *prog, *other;
	struct bpf_map *xsks, *rodata;
	const void *init;
	struct xdp_roce_cfg cfg;
	size_t cfg_len = 0;
	int rc;

	ifc->obj = bpf_object__open_mem(uroce_xdp_roce_bpf, uroce_xdp_roce_bpf_len, &oopts);
	if (!ifc->obj) {
		rc = -errno;
		return errbuf_fail(err, errlen, rc, "cannot open the embedded XDP program: %s", strerror(-rc));
	}
	prog = bpf_object__find_program_by_name(ifc->obj, frags ? XDP_ROCE_PROG_FRAGS_NAME : XDP_ROCE_PROG_NAME);
	other = bpf_object__find_program_by_name(ifc->obj, frags ? XDP_ROCE_PROG_NAME : XDP_ROCE_PROG_FRAGS_NAME);
	xsks = bpf_object__find_map_by_name(ifc->obj, "xsks");
	rodata = bpf_object__find_map_by_name(ifc->obj, ".rodata");
	init = rodata ? bpf_map__initial_value(rodata, &cfg_len) : NULL;
	/* .rodata holds exactly the one config struct (see the program). */
	if (!prog || !other || !xsks || !init || cfg_len != sizeof(cfg)) {
		rc = errbuf_fail(err, errlen, -EINVAL, "the embedded XDP program lacks its programs or maps (build problem)");
		goto out_close;
	}
	bpf_program__set_autoload(other, false);
	bpf_map__set_max_entries(xsks, xsks_max);
	memcpy(&cfg, init, sizeof(cfg));
	cfg.extra_port_be = htons(extra_port);
	rc = bpf_map__set_initial_value(rodata, &cfg, sizeof(cfg));
	if (rc) {
		errbuf_fail(err, errlen, rc, "cannot configure the XDP program: %s", strerror(-rc));
		goto out_close;
	}

	rc = bpf_object__load(ifc->obj);
	if (rc) {
		if (frags)
			errbuf_fail(err, errlen, rc,
			     "%s: the kernel refused the multi-buffer XDP program (%s); the MTU needs frames over "
			     "%u bytes, which needs XDP frags support (Linux 5.18+): lower the MTU to %u or less",
			     ifc->ifname, strerror(-rc), AFXDP_LINEAR_MAX, AFXDP_LINEAR_MAX - AFXDP_L2_OVERHEAD);
		else if (no_privilege(rc))
			errbuf_fail(err, errlen, rc, "%s: the kernel refused to load the XDP program, bpf(): %s; "
				    AFXDP_PRIV_HINT, ifc->ifname, strerror(-rc));
		else
			errbuf_fail(err, errlen, rc, "%s: the kernel refused the XDP program: %s (UROCE_LIBBPF_DEBUG=1 "
				    "shows libbpf's log)", ifc->ifname, strerror(-rc));
		goto out_close;
	}
	ifc->prog_fd = bpf_program__fd(prog);
	ifc->xsks_fd = bpf_map__fd(xsks);
	ifc->xsks_max = xsks_max;
	ifc->frags = frags;
	ifc->extra_port = extra_port;
	return 0;

out_close:
	bpf_object__close(ifc->obj);
	ifc->obj = NULL;
	return rc;
}

/* Why a driver refused our program in native mode, as far as we can tell
 * from outside: virtio_net's refusals each have a cause the user can fix. */
static void native_refusal(const struct afxdp_iface *ifc, int rc, char *why, size_t len)
{
	const char *drv = ifc->driver;

	if (!strcmp(drv, "virtio_net") && rc == -EINVAL)
		snprintf(why, len, "virtio_net refused XDP (%s): before Linux 6.3 it takes XDP only on frames of one "
			 "page (MTU 3506 or less; multi-buffer XDP came in 6.3), and uroce keeps room for a VLAN tag: "
			 "ip link set %s mtu %u", strerror(-rc), ifc->ifname, AFXDP_LINEAR_MAX - AFXDP_L2_OVERHEAD);
	else if (!strcmp(drv, "virtio_net") && rc == -EOPNOTSUPP)
		snprintf(why, len, "virtio_net refused XDP (%s): the device merges received segments (guest "
			 "TSO/ECN/UFO/checksum offloads) and gives the guest no control of them; turn them off on "
			 "the host (QEMU: virtio-net-pci,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off,"
			 "guest_csum=off, or ctrl_guest_offloads=on)", strerror(-rc));
	else
		snprintf(why, len, "the driver (%s) takes no XDP program in native mode (%s)", drv[0] ? drv : "unknown",
			 strerror(-rc));
}

static int iface_attach(struct afxdp_iface *ifc, const struct port_config *cfg, char *err, size_t errlen)
{
	struct bpf_prog_info pinfo;
	uint32_t len = sizeof(pinfo);
	int fd = -EOPNOTSUPP;

	/* Native mode, or generic (skb) mode when asked: generic works
	 * everywhere but costs an skb per frame, so it is never a silent
	 * fallback. A link never replaces an attached program. */
	if (!cfg->force_skb) {
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);
		struct nic_rss *rss = NULL;
		struct nic_channels ch;

		if (!strcmp(ifc->driver, "virtio_net")) {
			if (!nic_channels(ifc->ifname, &ch)) {
				ifc->virtio_qp = ch.combined;
				ifc->virtio_max = ch.max_combined;
			}
			rss = malloc(sizeof(*rss));
			if (rss && nic_rss_read(ifc->ifname, rss)) {
				free(rss);
				rss = NULL;
			}
		}
		fd = bpf_link_create(ifc->prog_fd, ifc->ifindex, BPF_XDP, &lo);
		if (fd < 0)
			fd = -errno;
		/* virtio_net takes queue pairs for XDP's TX when XDP comes in,
		 * and in doing so turns the device's RSS off (Linux 6.1 sends
		 * VQ_PAIRS_SET, which ends RSS in QEMU) or spreads its table
		 * over the new queues (later kernels), where no socket listens:
		 * write the table back as it was, so flows keep their queues
		 * (and ports steered by it, uroce_steer_sports, hold) */
		if (fd >= 0 && rss)
			nic_rss_write_indir(ifc->ifname, rss->indir, rss->indir_n);
		free(rss);
		ifc->skb_mode = false;
		if (no_privilege(fd))
			return errbuf_fail(err, errlen, fd, "cannot attach the XDP program to %s, bpf(): %s; "
				    AFXDP_PRIV_HINT, ifc->ifname, strerror(-fd));
		if (fd < 0 && fd != -EBUSY && fd != -EEXIST) {
			char why[320];

			native_refusal(ifc, fd, why, sizeof(why));
			return errbuf_fail(err, errlen, fd, "%s: %s; generic (skb) XDP costs an skb per frame and "
				    "runs only when asked: afxdp:%s:%u:generic", ifc->ifname, why, ifc->ifname,
				    cfg->queue);
		}
	}
	if (cfg->force_skb) {
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
		fd = bpf_link_create(ifc->prog_fd, ifc->ifindex, BPF_XDP, &lo);
		if (fd < 0)
			fd = -errno;
		ifc->skb_mode = true;
	}
	if (fd < 0)
		return fd == -EBUSY || fd == -EEXIST
			       ? fd
			       : errbuf_fail(err, errlen, fd, "cannot attach the XDP program to %s: %s%s%s", ifc->ifname,
				      strerror(-fd), no_privilege(fd) ? "; " : "", no_privilege(fd) ? AFXDP_PRIV_HINT : "");
	ifc->link_fd = fd;
	ifc->owner = true;
	memset(&pinfo, 0, sizeof(pinfo));
	if (!bpf_obj_get_info_by_fd(ifc->prog_fd, &pinfo, &len))
		ifc->prog_id = pinfo.id;
	return 0;
}

/* Identity of the calling thread's network namespace (0 if unknown). */
static uint64_t netns_id(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_dev << 32 ^ (uint64_t)st.st_ino;
}

static struct afxdp_iface *iface_get(int ifindex, const struct port_config *cfg, bool frags, char *err,
				     size_t errlen, int *rcp)
{
	struct afxdp_iface *ifc;
	uint64_t netns = netns_id();
	libbpf_print_fn_t prev_print;
	uint32_t want_max;
	int rc;

	for (ifc = ifaces; ifc; ifc = ifc->next) {
		if (ifc->ifindex != ifindex || ifc->netns != netns)
			continue;
		if (ifc->extra_port != cfg->extra_udp_port) {
			*rcp = errbuf_fail(err, errlen, -EINVAL,
				    "%s: another port of this process steers extra UDP port %u; this one asks for %u "
				    "(one XDP program per interface: use the same extra port)",
				    cfg->ifname, ifc->extra_port, cfg->extra_udp_port);
			return NULL;
		}
		if (frags && !ifc->frags) {
			*rcp = errbuf_fail(err, errlen, -EINVAL,
				    "%s: the MTU grew past %u bytes after another port opened; close all ports on "
				    "it and reopen",
				    cfg->ifname, AFXDP_LINEAR_MAX - AFXDP_L2_OVERHEAD);
			return NULL;
		}
		if (cfg->queue >= ifc->xsks_max) {
			*rcp = queue_missing(err, errlen, cfg->ifname, ifc->xsks_max, cfg->queue);
			return NULL;
		}
		ifc->refs++;
		return ifc;
	}

	ifc = calloc(1, sizeof(*ifc));
	if (!ifc) {
		*rcp = errbuf_fail(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	ifc->ifindex = ifindex;
	ifc->netns = netns;
	ifc->prog_fd = ifc->xsks_fd = ifc->link_fd = -1;
	memcpy(ifc->ifname, cfg->ifname, sizeof(ifc->ifname));
	nic_driver(cfg->ifname, ifc->driver, sizeof(ifc->driver));
	want_max = iface_queue_count(cfg->ifname);
	if (want_max <= cfg->queue)
		want_max = cfg->queue + 1;

	/* Two tries: a program attached between our query and our attach
	 * (another process opening the same interface) is adopted. libbpf
	 * speaks only through our messages meanwhile (ifaces_lock keeps the
	 * save and the restore paired). */
	prev_print = libbpf_set_print(libbpf_quiet);
	for (int attempt = 0; attempt < 2; attempt++) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);
		uint32_t id;

		rc = bpf_xdp_query(ifindex, 0, &q);
		if (rc) {
			errbuf_fail(err, errlen, rc, "%s: cannot query its XDP state: %s%s%s", cfg->ifname, strerror(-rc),
				    no_privilege(rc) ? "; " : "", no_privilege(rc) ? AFXDP_PRIV_HINT : "");
			goto out_free;
		}
		id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;
		if (id) {
			rc = iface_adopt(ifc, id, !q.drv_prog_id && q.skb_prog_id, frags, cfg->extra_udp_port, err,
					 errlen);
			if (rc)
				goto out_free;
			if (ifc->skb_mode && !cfg->force_skb) {
				rc = errbuf_fail(err, errlen, -EINVAL, "%s: its XDP program runs in generic (skb) mode, "
					  "attached by a port that asked for it; to share it ask too: afxdp:%s:%u:generic",
					  cfg->ifname, cfg->ifname, cfg->queue);
				iface_release_fds(ifc);
				goto out_free;
			}
			if (cfg->queue >= ifc->xsks_max) {
				rc = errbuf_fail(err, errlen, -EINVAL, "%s: queue %u is beyond the adopted XSKMAP (%u queues)",
					  cfg->ifname, cfg->queue, ifc->xsks_max);
				iface_release_fds(ifc);
				goto out_free;
			}
			break;
		}
		rc = iface_load(ifc, want_max, frags, cfg->extra_udp_port, err, errlen);
		if (rc)
			goto out_free;
		rc = iface_attach(ifc, cfg, err, errlen);
		if (rc == 0)
			break;
		iface_release_fds(ifc);
		if (rc != -EBUSY && rc != -EEXIST)
			goto out_free;
		rc = errbuf_fail(err, errlen, rc, "%s: XDP program attach kept racing with another process", cfg->ifname);
	}
	libbpf_set_print(prev_print);
	if (rc)
		goto out_free_ifc;
	ifc->refs = 1;
	ifc->next = ifaces;
	ifaces = ifc;
	return ifc;

out_free:
	libbpf_set_print(prev_print);
out_free_ifc:
	free(ifc);
	*rcp = rc;
	return NULL;
}

static void iface_put(struct afxdp_iface *ifc)
{
	struct afxdp_iface **pp;

	if (--ifc->refs)
		return;
	iface_release_fds(ifc);
	for (pp = &ifaces; *pp; pp = &(*pp)->next) {
		if (*pp == ifc) {
			*pp = ifc->next;
			break;
		}
	}
	free(ifc);
}

/* ------------------------------------------------------------ socket setup */

static int umem_create(struct afxdp *x, char *err, size_t errlen)
{
	struct xsk_umem_config uc = {
		.fill_size = x->ring_size,
		.comp_size = x->ring_size,
		.frame_size = x->chunk_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	int rc = xsk_umem__create(&x->umem_h, x->umem, x->umem_len, &x->fq, &x->cq, &uc);

	/* socket(AF_XDP) wants CAP_NET_RAW: EPERM is privilege, not memory */
	if (no_privilege(rc))
		return errbuf_fail(err, errlen, rc, "%s: cannot create an AF_XDP socket for the UMEM, socket(AF_XDP): %s; "
			    AFXDP_PRIV_HINT, x->ifc->ifname, strerror(-rc));
	if (rc)
		return errbuf_fail(err, errlen, rc, "cannot register %zu bytes of UMEM: %s%s", x->umem_len, strerror(-rc),
			    rc == -ENOMEM || rc == -ENOBUFS
				    ? " (raise the locked-memory limit, ulimit -l, or lower nframes)"
				    : rc == -EAFNOSUPPORT ? " (kernel built without CONFIG_XDP_SOCKETS)" : "");
	return 0;
}

static void zc_note(struct port *p, const char *drv, int rc)
{
	size_t used = strlen(p->note);

	snprintf(p->note + used, sizeof(p->note) - used, "%szero-copy refused by %s on %s queue %u (%s): copy mode%s",
		 used ? "; " : "", drv[0] ? drv : "the driver", p->cfg.ifname, p->cfg.queue, strerror(-rc),
		 !strcmp(drv, "virtio_net") ? " (virtio_net has AF_XDP zero-copy from Linux 6.13, on a device that "
					      "uses the DMA API: QEMU virtio-net-pci,iommu_platform=on with an IOMMU)"
					    : "");
}

/* Create and bind the socket, with the fallbacks the hardware and the
 * kernel force on us; a failed xsk_socket__create leaves the UMEM ready
 * for the next try. */
static int xsk_create(struct port *p, struct afxdp *x, bool skb_mode, char *err, size_t errlen)
{
	struct xsk_socket_config sc = {
		.rx_size = x->ring_size,
		.tx_size = x->ring_size,
		/* The program is ours (loaded and attached per interface). */
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	};
	bool try_zc = !p->cfg.force_copy && !skb_mode;
	uint64_t deadline = mono_ns() + AFXDP_BIND_RETRY_MS * 1000000ull;
	useconds_t backoff = 10000;
	int rc;

	for (;;) {
		sc.bind_flags = (uint16_t)(XDP_USE_NEED_WAKEUP | (try_zc ? XDP_ZEROCOPY : XDP_COPY) |
					   (x->sg ? XDP_USE_SG : 0));
		rc = xsk_socket__create(&x->xsk, p->cfg.ifname, x->queue, x->umem_h, &x->rx, &x->tx, &sc);
		if (rc == 0) {
			x->zero_copy = try_zc;
			x->fd = xsk_socket__fd(x->xsk);
			return 0;
		}
		x->xsk = NULL;
		if (try_zc && rc != -EBUSY) {
			/* No zero-copy in this driver (veth, virtio_net before
			 * 6.13 or without a DMA-capable device, a driver
			 * without multi-buffer zero-copy): copy mode, said
			 * when zero-copy was asked for. */
			if (p->cfg.want_zc)
				zc_note(p, x->ifc->driver, rc);
			try_zc = false;
			continue;
		}
		if (rc == -EBUSY && mono_ns() < deadline) {
			usleep(backoff);
			backoff = backoff * 2 > 200000 ? 200000 : backoff * 2;
			continue;
		}
		break;
	}
	if (rc == -EBUSY)
		return errbuf_fail(err, errlen, -EBUSY,
			    "%s queue %u is busy: another AF_XDP socket holds it (waited %d ms for a closing one "
			    "to let go)",
			    p->cfg.ifname, x->queue, AFXDP_BIND_RETRY_MS);
	if (rc == -EINVAL) {
		uint32_t nq = nic_rx_queues(p->cfg.ifname);

		if (nq && x->queue >= nq)
			return queue_missing(err, errlen, p->cfg.ifname, nq, x->queue);
		if (x->sg) {
			/* one buffer per frame: it fits a chunk, and the
			 * driver keeps it linear (no frags program) */
			uint32_t lin = x->chunk_size - AFXDP_RX_HEADROOM;

			if (lin > AFXDP_LINEAR_MAX)
				lin = AFXDP_LINEAR_MAX;
			return errbuf_fail(err, errlen, -EINVAL,
				    "%s: the kernel refused multi-buffer AF_XDP (XDP_USE_SG, Linux 6.6+), which MTU %u "
				    "needs with %u-byte frames; lower the MTU to %u or less",
				    p->cfg.ifname, p->mtu, x->chunk_size, lin - AFXDP_L2_OVERHEAD);
		}
	}
	return errbuf_fail(err, errlen, rc, "cannot bind an AF_XDP socket to %s queue %u: %s%s%s", p->cfg.ifname,
		    x->queue, strerror(-rc), no_privilege(rc) ? "; " : "", no_privilege(rc) ? AFXDP_PRIV_HINT : "");
}

/* ------------------------------------------------------------ open / close */

static int iface_basics(struct port *p, struct afxdp *x, char *err, size_t errlen)
{
	struct ifreq ifr;
	const char *name = p->cfg.ifname;

	p->ifindex = (int)if_nametoindex(name);
	if (!p->ifindex)
		return errbuf_fail(err, errlen, -ENODEV, "no interface '%s' in this network namespace", name);
	x->ctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (x->ctl_fd < 0)
		return errbuf_fail(err, errlen, -errno, "socket: %s", strerror(errno));

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, sizeof(p->cfg.ifname));
	if (ioctl(x->ctl_fd, SIOCGIFHWADDR, &ifr))
		return errbuf_fail(err, errlen, -errno, "%s: cannot read its MAC address: %s", name, strerror(errno));
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return errbuf_fail(err, errlen, -EINVAL, "%s is not an Ethernet interface (link type %u); afxdp needs one",
			    name, ifr.ifr_hwaddr.sa_family);
	memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, sizeof(p->cfg.ifname));
	if (ioctl(x->ctl_fd, SIOCGIFMTU, &ifr))
		return errbuf_fail(err, errlen, -errno, "%s: cannot read its MTU: %s", name, strerror(errno));
	p->mtu = (uint32_t)ifr.ifr_mtu;

	/* No IPv4 address is fine (IPv6-only, or addressing done by the
	 * caller); it only leaves ipv4_be at 0. */
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, sizeof(p->cfg.ifname));
	ifr.ifr_addr.sa_family = AF_INET;
	if (ioctl(x->ctl_fd, SIOCGIFADDR, &ifr) == 0)
		p->ipv4_be = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;

	read_link(p, x);
	return 0;
}

static void afxdp_teardown(struct port *p, struct afxdp *x)
{
	if (x->in_map)
		bpf_map_delete_elem(x->ifc->xsks_fd, &x->queue);
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem_h)
		xsk_umem__delete(x->umem_h);
	if (x->umem)
		munmap(x->umem, x->umem_len);
	if (x->ctl_fd >= 0)
		close(x->ctl_fd);
	if (x->ifc) {
		pthread_mutex_lock(&ifaces_lock);
		x->ifc->queues_open[x->queue / 64] &= ~(1ull << (x->queue % 64));
		iface_put(x->ifc);
		pthread_mutex_unlock(&ifaces_lock);
	}
	free(x->free_stack);
	free(x->tx_pend);
	free(x);
	p->priv = NULL;
}

static int check_config(const struct port_config *c, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);

	if (c->frame_size &&
	    (c->frame_size < AFXDP_CHUNK_MIN || c->frame_size > (uint32_t)page || (c->frame_size & (c->frame_size - 1))))
		return errbuf_fail(err, errlen, -EINVAL,
			    "afxdp frame_size %u: must be a power of two from %u to the page size (%ld)", c->frame_size,
			    AFXDP_CHUNK_MIN, page);
	if (c->nframes && (c->nframes < AFXDP_NFRAMES_MIN || c->nframes > AFXDP_NFRAMES_MAX))
		return errbuf_fail(err, errlen, -EINVAL, "afxdp nframes %u: must be from %u to %u", c->nframes,
			    AFXDP_NFRAMES_MIN, AFXDP_NFRAMES_MAX);
	if (c->queue >= 1024)
		return errbuf_fail(err, errlen, -EINVAL, "afxdp queue %u: must be 0-1023", c->queue);
	if (!c->ifname[0])
		return errbuf_fail(err, errlen, -EINVAL, "afxdp port without an interface name");
	return 0;
}

/* The queue must carry traffic now: a queue the device has but does not
 * use gets nothing, and the fix is the user's (ethtool -L). */
static int check_queue(const struct port_config *c, char *err, size_t errlen)
{
	struct nic_channels ch;
	uint32_t now, max;

	if (!(now = nic_rx_queues(c->ifname)) || c->queue < now)
		return 0;
	if (nic_channels(c->ifname, &ch))
		memset(&ch, 0, sizeof(ch));
	/* drivers with separate RX channels count them there, the others
	 * (virtio_net, most NICs) in combined ones */
	max = ch.rx ? ch.max_rx : ch.max_combined;
	if (c->queue < max)
		return errbuf_fail(err, errlen, -EINVAL, "%s uses %u queue%s now (0-%u) of the %u it has: queue %u "
			    "needs more: ethtool -L %s %s %u", c->ifname, now, now == 1 ? "" : "s", now - 1, max,
			    c->queue, c->ifname, ch.rx ? "rx" : "combined", c->queue + 1);
	if (max < now)
		max = now;
	return queue_missing(err, errlen, c->ifname, max, c->queue);
}

/* virtio_net gives XDP a TX queue per CPU of its own only when the device
 * has that many queue pairs beyond those in use; else XDP transmits over
 * the stack's queues, under a lock. */
static void virtio_txq_note(struct port *p, const struct afxdp_iface *ifc)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t used = strlen(p->note);

	if (ncpu < 1 || ifc->virtio_qp + (uint32_t)ncpu <= ifc->virtio_max)
		return;
	if (ifc->virtio_max > (uint32_t)ncpu)
		snprintf(p->note + used, sizeof(p->note) - used,
			 "%svirtio_net on %s: %u queue pairs in use of %u, and XDP wants %ld more (one per CPU) for TX "
			 "of its own, so it shares the stack's under a lock: ethtool -L %s combined %u leaves it room",
			 used ? "; " : "", p->cfg.ifname, ifc->virtio_qp, ifc->virtio_max, ncpu, p->cfg.ifname,
			 ifc->virtio_max - (uint32_t)ncpu);
	else
		snprintf(p->note + used, sizeof(p->note) - used,
			 "%svirtio_net on %s: %u queue pairs in use of %u, and XDP wants %ld more (one per CPU) for TX "
			 "of its own, so it shares the stack's under a lock: give the device %u queue pairs (QEMU: "
			 "-netdev tap,queues=%u and virtio-net-pci,mq=on)", used ? "; " : "", p->cfg.ifname,
			 ifc->virtio_qp, ifc->virtio_max, ncpu, ifc->virtio_qp + (uint32_t)ncpu,
			 ifc->virtio_qp + (uint32_t)ncpu);
}

static int afxdp_open(struct port *p, char *err, size_t errlen)
{
	const struct port_config *c = &p->cfg;
	struct afxdp *x;
	uint32_t l2max, k;
	bool frags;
	int rc;

	rc = check_config(c, err, errlen);
	if (rc)
		return rc;
	x = aligned_alloc(64, sizeof(*x));
	if (!x)
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory");
	memset(x, 0, sizeof(*x));
	x->fd = x->ctl_fd = -1;
	x->queue = c->queue;
	p->priv = x;

	rc = iface_basics(p, x, err, errlen);
	if (!rc)
		rc = check_queue(c, err, errlen);
	if (rc)
		goto out;

	x->chunk_size = c->frame_size ? c->frame_size : AFXDP_CHUNK_DEFAULT;
	x->chunk_shift = log2u(x->chunk_size);
	l2max = p->mtu + AFXDP_L2_OVERHEAD;
	x->max_frame = l2max;
	/* Past a page, drivers split frames into buffers and the program must
	 * say it handles that; the socket then must accept split frames, and
	 * so it must whenever one chunk cannot hold a frame. */
	frags = l2max > AFXDP_LINEAR_MAX;
	x->sg = frags || l2max > x->chunk_size - AFXDP_RX_HEADROOM;
	k = x->sg ? pow2_ceil((AFXDP_RX_HEADROOM + l2max + x->chunk_size - 1) / x->chunk_size) : 1;
	if (k > AFXDP_MAX_FRAGS) {
		rc = errbuf_fail(err, errlen, -EINVAL, "%s: MTU %u is too large for %u-byte frames", c->ifname, p->mtu,
			  x->chunk_size);
		goto out;
	}
	x->slot_size = x->chunk_size * k;
	x->slot_shift = log2u(x->slot_size);
	x->nslots = c->nframes ? c->nframes : AFXDP_NFRAMES_DEFAULT;
	x->ring_size = pow2_ceil(x->nslots) / 2 > AFXDP_RING_MAX ? AFXDP_RING_MAX : pow2_ceil(x->nslots) / 2;
	x->fill_reserve = x->nslots / 4;
	x->umem_len = (size_t)x->nslots * x->slot_size;

	x->free_stack = malloc(sizeof(*x->free_stack) * x->nslots);
	x->tx_pend = x->sg ? calloc(x->nslots, 1) : NULL;
	if (!x->free_stack || (x->sg && !x->tx_pend)) {
		rc = errbuf_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	x->umem = mmap(NULL, x->umem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->umem == MAP_FAILED) {
		x->umem = NULL;
		rc = errbuf_fail(err, errlen, -ENOMEM, "cannot map %zu bytes of UMEM: %s", x->umem_len, strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < x->nslots; i++)
		x->free_stack[i] = (uint64_t)(x->nslots - 1 - i) << x->slot_shift;
	x->nfree = x->nslots;

	pthread_mutex_lock(&ifaces_lock);
	x->ifc = iface_get(p->ifindex, c, frags, err, errlen, &rc);
	if (x->ifc) {
		if (x->ifc->queues_open[c->queue / 64] & (1ull << (c->queue % 64))) {
			iface_put(x->ifc);
			x->ifc = NULL;
			rc = errbuf_fail(err, errlen, -EBUSY, "%s queue %u is already open in this process", c->ifname,
				  c->queue);
		} else {
			x->ifc->queues_open[c->queue / 64] |= 1ull << (c->queue % 64);
		}
	}
	pthread_mutex_unlock(&ifaces_lock);
	if (!x->ifc)
		goto out;

	if (x->ifc->virtio_max && !x->ifc->skb_mode)
		virtio_txq_note(p, x->ifc);
	rc = umem_create(x, err, errlen);
	if (rc)
		goto out;
	rc = xsk_create(p, x, x->ifc->skb_mode, err, errlen);
	if (rc)
		goto out;

	/* Buffers in the fill ring before the XSKMAP points at us, so the
	 * first frames steered here find room. */
	refill_fill_ring(x);
	rc = xsk_socket__update_xskmap(x->xsk, x->ifc->xsks_fd);
	if (rc) {
		rc = rc < 0 ? rc : -errno;
		errbuf_fail(err, errlen, rc, "%s queue %u: cannot enter the socket in the XSKMAP: %s", c->ifname, c->queue,
		     strerror(-rc));
		goto out;
	}
	x->in_map = true;
	x->next_slow_ns = mono_ns() + AFXDP_SLOW_NS;
	return 0;

out:
	afxdp_teardown(p, x);
	return rc;
}

static void afxdp_close(struct port *p)
{
	struct afxdp *x = p->priv;

	if (x)
		afxdp_teardown(p, x);
}

int port_afxdp_info(const struct port *p, struct port_afxdp_info *info)
{
	const struct afxdp *x;

	if (!p || p->ops != &port_afxdp_ops || !p->priv)
		return -EINVAL;
	x = p->priv;
	memset(info, 0, sizeof(*info));
	info->zero_copy = x->zero_copy;
	info->multi_buffer = x->sg;
	info->skb_mode = x->ifc->skb_mode;
	info->prog_owner = x->ifc->owner;
	info->prog_id = x->ifc->prog_id;
	info->queue = x->queue;
	info->chunk_size = x->chunk_size;
	info->frame_room = x->slot_size;
	info->nframes = x->nslots;
	info->ring_size = x->ring_size;
	info->kick_errors = x->kick_errors;
	return 0;
}

const struct port_ops port_afxdp_ops = {
	.name = "afxdp",
	.open = afxdp_open,
	.close = afxdp_close,
	.rx_burst = afxdp_rx_burst,
	.tx_burst = afxdp_tx_burst,
	.alloc = afxdp_alloc,
	.free = afxdp_free,
	.link_up = afxdp_link_up,
	.link_refresh = afxdp_link_refresh,
	.poll = afxdp_poll,
};
