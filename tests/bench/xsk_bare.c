/* SPDX-License-Identifier: MIT */
/* Baseline for `uroce-perf raw`: the barest AF_XDP loop libxdp allows.
 * The sender copies one prebuilt RoCEv2 frame into every UMEM frame once
 * and then only posts descriptors; the receiver only counts and recycles.
 * No parsing, no ICRC, no per-frame building: the ceiling for the port.
 *
 *   xsk_bare send --iface IF --dst-mac MAC --src-ip A --dst-ip B --size PAYLOAD [--duration S]
 *   xsk_bare recv --iface IF [--place] [--duration S] [--idle-ms MS]
 *
 * recv --place is the placement ceiling: the same loop plus the one copy
 * every RDMA WRITE over AF_XDP copy mode must make. Each frame's RDMA
 * payload (after Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 bytes, up
 * to the BTH pad and the 4-byte ICRC; its length from the IPv4 total length)
 * is copied, fragment by fragment, into a 64 MiB buffer at (RETH VA +
 * running offset) modulo the buffer's size, the running offset advancing by
 * each payload, so the destination walks the whole buffer like a stream of
 * WRITEs into a memory region. Fixed offsets only: no parse, no ICRC, no
 * rkey check. A checksum of the buffer in the JSON result keeps the copies.
 * The sender fills its payload with a byte pattern, so the checksum is not
 * that of zeros.
 *
 * Uses libxdp's own default XDP program (it redirects every frame of the
 * queue to the socket), queue 0, copy mode (veth has no zero-copy). When the
 * MTU is above what a one-page XDP buffer holds, libxdp's program cannot be
 * attached (it has no frags support), so the baseline loads its own
 * redirect-everything `xdp.frags` program and binds with XDP_USE_SG; a frame
 * then spans two UMEM chunks (head chunk + tail chunk).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "dataplane/wire.h"

#define NUM_FRAMES 4096u
#define FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
#define BATCH 64u
/* Largest MTU whose frames fit one page-sized XDP buffer on veth. */
#define LINEAR_MTU_MAX 3498u

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

extern const unsigned char xsk_bare_bpf[];
extern const size_t xsk_bare_bpf_len;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct bare {
	int sg;             /* multi-buffer mode, own frags program attached */
	int ifindex;
	struct bpf_object *obj;
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
};

static unsigned iface_mtu(const char *ifname)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	unsigned mtu = 1500;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = (unsigned)ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return mtu;
}

/* Attach the frags program and return the fd of its XSKMAP. */
static int load_frags_prog(struct bare *b)
{
	struct bpf_program *prog;
	int rc;

	b->obj = bpf_object__open_mem(xsk_bare_bpf, xsk_bare_bpf_len, NULL);
	if (!b->obj)
		return -errno;
	if ((rc = bpf_object__load(b->obj)))
		return rc;
	prog = bpf_object__find_program_by_name(b->obj, "xsk_bare_frags");
	if (!prog)
		return -ENOENT;
	rc = bpf_xdp_attach(b->ifindex, bpf_program__fd(prog), XDP_FLAGS_DRV_MODE, NULL);
	if (rc)
		return rc;
	return bpf_object__find_map_fd_by_name(b->obj, "xsks");
}

static int bare_open(struct bare *b, const char *ifname, int rx)
{
	struct xsk_umem_config ucfg = {
		.fill_size = NUM_FRAMES / 2,
		.comp_size = NUM_FRAMES / 2,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = NUM_FRAMES / 2,
		.tx_size = NUM_FRAMES / 2,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	int rc, map_fd = -1;

	b->ifindex = (int)if_nametoindex(ifname);
	if (!b->ifindex)
		return -ENODEV;
	if (iface_mtu(ifname) > LINEAR_MTU_MAX) {
		b->sg = 1;
		map_fd = load_frags_prog(b);
		if (map_fd < 0)
			return map_fd;
		scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
		scfg.bind_flags |= XDP_USE_SG;
	}
	b->area = mmap(NULL, (size_t)NUM_FRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->area == MAP_FAILED)
		return -errno;
	rc = xsk_umem__create(&b->umem, b->area, (uint64_t)NUM_FRAMES * FRAME_SIZE, &b->fq, &b->cq, &ucfg);
	if (rc)
		return rc;
	for (int tries = 0;; tries++) {
		rc = xsk_socket__create(&b->xsk, ifname, 0, b->umem, &b->rx, &b->tx, &scfg);
		if (rc != -EBUSY || tries >= 30)
			break;
		usleep(100000); /* the queue may still be held by a process that just exited */
	}
	if (rc)
		return rc;
	if (b->sg && (rc = xsk_socket__update_xskmap(b->xsk, map_fd)))
		return rc;
	if (rx) {
		/* Give the kernel half the frames to receive into. */
		uint32_t idx, n = NUM_FRAMES / 2;
		if (xsk_ring_prod__reserve(&b->fq, n, &idx) != n)
			return -ENOSPC;
		for (uint32_t i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&b->fq, idx + i) = (uint64_t)i * FRAME_SIZE;
		xsk_ring_prod__submit(&b->fq, n);
	}
	return 0;
}

static void bare_close(struct bare *b)
{
	if (b->xsk)
		xsk_socket__delete(b->xsk);
	if (b->umem)
		xsk_umem__delete(b->umem);
	munmap(b->area, (size_t)NUM_FRAMES * FRAME_SIZE);
	if (b->sg) {
		bpf_xdp_detach(b->ifindex, XDP_FLAGS_DRV_MODE, NULL);
		bpf_object__close(b->obj);
	}
}

static int get_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc = 0;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		rc = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int do_send(const char *ifname, const uint8_t dmac[6], uint32_t sip, uint32_t dip, uint32_t size,
		   double duration)
{
	struct bare b = {0};
	struct roce_pkt pkt = {0};
	uint32_t free_stack[NUM_FRAMES], nfree = 0;
	int rc;

	if ((rc = get_mac(ifname, pkt.smac)) || (rc = bare_open(&b, ifname, 0))) {
		fprintf(stderr, "xsk_bare: %s: %s\n", ifname, strerror(-rc));
		return 1;
	}
	memcpy(pkt.dmac, dmac, 6);
	roce_ipv4_mapped(pkt.sip, sip);
	roce_ipv4_mapped(pkt.dip, dip);
	pkt.ttl = 64;
	pkt.dont_fragment = true;
	pkt.sport = 0xc000;
	pkt.dport = ROCE_UDP_PORT;
	pkt.opcode = ROCE_OP_WRITE_ONLY;
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.dqpn = 0x11;
	pkt.reth.rkey = 0x1234;
	pkt.reth.dma_len = size;
	pkt.payload_len = size;
	/* Build the frame once; in multi-buffer mode even chunks hold its first
	 * FRAME_SIZE bytes and odd chunks the rest, so a head and a tail chunk
	 * from the two free stacks always make the whole frame. */
	static uint8_t one[2 * FRAME_SIZE];
	/* A byte pattern in the payload (the builder leaves the payload area as
	 * it is), so what recv --place copies is not all zeros. */
	for (size_t i = 0; i < sizeof(one); i++)
		one[i] = (uint8_t)(i * 131 + 7);
	int flen = roce_build(one, sizeof(one), &pkt);
	if (flen < 0 || (!b.sg && flen > (int)FRAME_SIZE)) {
		fprintf(stderr, "xsk_bare: payload %u does not fit (MTU too small?)\n", size);
		return 1;
	}
	uint32_t head_len = flen > (int)FRAME_SIZE ? FRAME_SIZE : (uint32_t)flen;
	uint32_t tail_len = (uint32_t)flen - head_len;
	uint32_t tail_stack[NUM_FRAMES], ntail = 0;
	for (uint32_t i = 0; i < NUM_FRAMES; i++) {
		uint8_t *chunk = (uint8_t *)b.area + (size_t)i * FRAME_SIZE;
		if (tail_len && (i & 1)) {
			memcpy(chunk, one + FRAME_SIZE, tail_len);
			tail_stack[ntail++] = i * FRAME_SIZE;
		} else {
			memcpy(chunk, one, head_len);
			free_stack[nfree++] = i * FRAME_SIZE;
		}
	}
	uint32_t descs = tail_len ? 2 : 1;

	uint64_t sent = 0, t0 = now_ns(), t1, deadline = t0 + (uint64_t)(duration * 1e9);
	while ((t1 = now_ns()) < deadline) {
		uint32_t idx, n;

		n = xsk_ring_cons__peek(&b.cq, BATCH * descs, &idx);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t a = (uint32_t)*xsk_ring_cons__comp_addr(&b.cq, idx + i);
			if (tail_len && ((a / FRAME_SIZE) & 1))
				tail_stack[ntail++] = a;
			else
				free_stack[nfree++] = a;
		}
		xsk_ring_cons__release(&b.cq, n);

		n = nfree < BATCH ? nfree : BATCH;
		if (tail_len && ntail < n)
			n = ntail;
		n = n ? xsk_ring_prod__reserve(&b.tx, n * descs, &idx) / descs : 0;
		for (uint32_t i = 0; i < n; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&b.tx, idx + i * descs);
			d->addr = free_stack[--nfree];
			d->len = head_len;
			d->options = tail_len ? XDP_PKT_CONTD : 0;
			if (tail_len) {
				d = xsk_ring_prod__tx_desc(&b.tx, idx + i * descs + 1);
				d->addr = tail_stack[--ntail];
				d->len = tail_len;
				d->options = 0;
			}
		}
		xsk_ring_prod__submit(&b.tx, n * descs);
		sent += n;
		if (xsk_ring_prod__needs_wakeup(&b.tx))
			sendto(xsk_socket__fd(b.xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
	}
	double secs = (double)(t1 - t0) / 1e9;
	printf("{\"mode\":\"xsk_send\",\"payload\":%u,\"frame\":%d,\"frames\":%" PRIu64
	       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f}\n",
	       size, flen, sent, secs, sent / secs / 1e6, sent * (double)flen * 8 / secs / 1e9);
	bare_close(&b);
	return 0;
}

/* --place: the destination "memory region" and the placement of one frame.
 * Offsets of the RoCEv2 headers in an untagged IPv4 frame. */
#define PLACE_BUF_SIZE (64u << 20)
#define PLACE_IPLEN_OFF 16u                       /* IPv4 total length */
#define PLACE_PAD_OFF (14u + 20u + 8u + 1u)       /* BTH byte 1: SE, M, PadCnt, TVer */
#define PLACE_RETH_OFF (14u + 20u + 8u + 12u)     /* RETH: VA, rkey, length */
#define PLACE_PAYLOAD_OFF (PLACE_RETH_OFF + 16u)  /* first payload byte */
#define PLACE_ICRC_LEN 4u

struct place {
	uint8_t *buf;
	uint64_t run;    /* running offset: moves on even when the VA does not */
	uint64_t dst;    /* where the next byte of the current frame goes */
	uint32_t left;   /* payload bytes of the current frame still to copy */
	uint64_t placed; /* payload bytes copied */
};

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The head fragment of a frame: where its payload goes, and how long it is
 * (IPv4 total length less the IP, UDP, BTH, RETH headers, the BTH pad bytes
 * and the ICRC). */
static void place_start(struct place *pl, const uint8_t *f, uint32_t len)
{
	uint32_t iplen = (uint32_t)f[PLACE_IPLEN_OFF] << 8 | f[PLACE_IPLEN_OFF + 1];
	uint32_t hdrs = PLACE_PAYLOAD_OFF - 14u + PLACE_ICRC_LEN + (f[PLACE_PAD_OFF] >> 4 & 3u);

	pl->left = len >= PLACE_PAYLOAD_OFF && iplen > hdrs ? iplen - hdrs : 0;
	pl->dst = (get_be64(f + PLACE_RETH_OFF) + pl->run) & (PLACE_BUF_SIZE - 1);
	if (pl->dst + pl->left > PLACE_BUF_SIZE) /* wrap: the copy stays inside */
		pl->dst = 0;
	pl->run += pl->left;
}

/* Copy this fragment's part of the payload (from..len of the fragment). */
static inline void place_frag(struct place *pl, const uint8_t *f, uint32_t from, uint32_t len)
{
	if (!pl->left || len <= from)
		return;
	uint32_t n = len - from < pl->left ? len - from : pl->left;
	memcpy(pl->buf + pl->dst, f + from, n);
	pl->dst += n;
	pl->left -= n;
	pl->placed += n;
}

/* 64-bit words from all over the buffer, so the copies are not dead stores. */
static uint64_t place_sum(const struct place *pl)
{
	uint64_t sum = 0, w;
	for (size_t off = 0; off < PLACE_BUF_SIZE; off += 4096 + 8) {
		memcpy(&w, pl->buf + off, sizeof(w));
		sum = (sum ^ w) * 0x100000001b3ull;
	}
	return sum;
}

static int do_recv(const char *ifname, double duration, long idle_ms, int do_place)
{
	struct bare b = {0};
	struct place pl = {0};
	int rc;

	if (do_place) {
		/* Faulted in before the first frame: a registered region is pinned. */
		pl.buf = mmap(NULL, PLACE_BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pl.buf == MAP_FAILED) {
			fprintf(stderr, "xsk_bare: cannot map the placement buffer: %s\n", strerror(errno));
			return 1;
		}
		memset(pl.buf, 0, PLACE_BUF_SIZE);
	}
	if ((rc = bare_open(&b, ifname, 1))) {
		fprintf(stderr, "xsk_bare: %s: %s\n", ifname, strerror(-rc));
		return 1;
	}
	fprintf(stderr, "xsk_bare: receiving on %s\n", ifname);
	uint64_t got = 0, bytes = 0, first = 0, last = 0, start = now_ns();
	uint64_t deadline = start + (uint64_t)(duration * 1e9);
	int in_frame = 0, counting = 0; /* inside a multi-buffer frame; is it ours */
	for (;;) {
		uint32_t idx_rx, idx_fq, n, ours = 0;
		uint64_t t;

		n = xsk_ring_cons__peek(&b.rx, BATCH, &idx_rx);
		t = now_ns();
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&b.fq))
				recvfrom(xsk_socket__fd(b.xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			if (t >= deadline || (first && t - last >= (uint64_t)idle_ms * 1000000ull))
				break;
			continue;
		}
		while (xsk_ring_prod__reserve(&b.fq, n, &idx_fq) != n)
			;
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&b.rx, idx_rx + i);
			const uint8_t *f = xsk_umem__get_data(b.area, d->addr);
			int head = !in_frame;
			if (head) {
				/* The program takes every frame (IPv6 ND, ARP too): count
				 * only IPv4 UDP to 4791, as the uroce receiver does. */
				counting = d->len >= 38 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 &&
					   f[36] == (4791 >> 8) && f[37] == (4791 & 0xff);
			}
			in_frame = (d->options & XDP_PKT_CONTD) != 0;
			if (counting) {
				bytes += d->len;
				ours += !in_frame; /* a frame ends here */
				if (do_place) {
					if (head)
						place_start(&pl, f, d->len);
					place_frag(&pl, f, head ? PLACE_PAYLOAD_OFF : 0, d->len);
				}
			}
			*xsk_ring_prod__fill_addr(&b.fq, idx_fq + i) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&b.fq, n);
		xsk_ring_cons__release(&b.rx, n);
		if (ours) {
			if (!first)
				first = t;
			last = t;
			got += ours;
		}
	}
	double secs = last > first ? (double)(last - first) / 1e9 : 0;
	/* What the kernel could not hand over (ring full, no fill buffers). */
	struct xdp_statistics st = {0};
	socklen_t slen = sizeof(st);
	getsockopt(xsk_socket__fd(b.xsk), SOL_XDP, XDP_STATISTICS, &st, &slen);
	char place_json[128] = "";
	if (do_place)
		snprintf(place_json, sizeof(place_json),
			 ",\"placed_bytes\":%" PRIu64 ",\"place_gbps\":%.3f,\"place_sum\":\"%016" PRIx64 "\"",
			 pl.placed, secs > 0 ? pl.placed * 8 / secs / 1e9 : 0, place_sum(&pl));
	printf("{\"mode\":\"%s\",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f%s,\"drops\":{\"rx_dropped\":%llu,"
	       "\"rx_ring_full\":%llu,\"fill_ring_empty\":%llu}}\n",
	       do_place ? "xsk_recv_place" : "xsk_recv", got, bytes, secs, secs > 0 ? got / secs / 1e6 : 0,
	       secs > 0 ? bytes * 8 / secs / 1e9 : 0, place_json, (unsigned long long)st.rx_dropped,
	       (unsigned long long)st.rx_ring_full, (unsigned long long)st.rx_fill_ring_empty_descs);
	bare_close(&b);
	if (do_place)
		munmap(pl.buf, PLACE_BUF_SIZE);
	return got ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *ifname = NULL;
	uint8_t dmac[6] = {0};
	struct in_addr sip = {0}, dip = {0};
	double duration = -1;
	long size = -1, idle_ms = 1000;
	int have_mac = 0, place = 0;

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) {
		fprintf(stderr, "usage: xsk_bare send --iface IF --dst-mac MAC --src-ip A --dst-ip B --size N "
				"[--duration S]\n       xsk_bare recv --iface IF [--place] [--duration S] [--idle-ms MS]\n");
		return 2;
	}
	for (int i = 2; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		unsigned m[6];
		if (!strcmp(k, "--place")) {
			place = 1;
			i--; /* a flag: no value */
		} else if (i + 1 >= argc) {
			fprintf(stderr, "xsk_bare: %s needs a value\n", k);
			return 2;
		} else if (!strcmp(k, "--iface"))
			ifname = v;
		else if (!strcmp(k, "--dst-mac") &&
			 sscanf(v, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6) {
			for (int j = 0; j < 6; j++)
				dmac[j] = (uint8_t)m[j];
			have_mac = 1;
		} else if (!strcmp(k, "--src-ip") && inet_pton(AF_INET, v, &sip) == 1)
			;
		else if (!strcmp(k, "--dst-ip") && inet_pton(AF_INET, v, &dip) == 1)
			;
		else if (!strcmp(k, "--size"))
			size = strtol(v, NULL, 10);
		else if (!strcmp(k, "--duration"))
			duration = strtod(v, NULL);
		else if (!strcmp(k, "--idle-ms"))
			idle_ms = strtol(v, NULL, 10);
		else {
			fprintf(stderr, "xsk_bare: bad option %s %s\n", k, v);
			return 2;
		}
	}
	if (!ifname) {
		fprintf(stderr, "xsk_bare: --iface is required\n");
		return 2;
	}
	if (!strcmp(argv[1], "send")) {
		if (place) {
			fprintf(stderr, "xsk_bare: --place is a recv option\n");
			return 2;
		}
		if (!have_mac || !sip.s_addr || !dip.s_addr || size < 0 || size > 8000) {
			fprintf(stderr, "xsk_bare: send needs --dst-mac, --src-ip, --dst-ip and --size 0-8000\n");
			return 2;
		}
		return do_send(ifname, dmac, sip.s_addr, dip.s_addr, (uint32_t)size, duration < 0 ? 3 : duration);
	}
	return do_recv(ifname, duration < 0 ? 30 : duration, idle_ms, place);
}
