/* SPDX-License-Identifier: MIT */
/* afxdp port checks that need several ports in one process: queues of one
 * interface sharing the XDP program and XSKMAP, steering by receive queue,
 * the program staying attached until the last port closes, frame
 * accounting (no slot leaks through TX, RX and rejected frames), and the
 * configuration conflicts a second port on the same interface can hit.
 *
 *   afxdp_queues NS_A IFACE_A NS_B IFACE_B
 * Both interfaces are the two ends of a veth pair with 2 queues each, in the
 * named network namespaces (ip netns add). Needs root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "dataplane/port.h"
#include "dataplane/port_afxdp.h"
#include "dataplane/wire.h"

#define NQ 2
#define FRAMES_PER_QUEUE 200u
#define WAIT_MS 2000

static int failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		failures++;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void enter_ns(const char *ns)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "afxdp_queues: cannot enter network namespace %s: %s\n", ns, strerror(errno));
		exit(1);
	}
	close(fd);
}

static int open_port(const char *ns, const char *ifname, unsigned queue, uint16_t extra, struct port **p,
		     char *err, size_t errlen)
{
	struct port_config cfg;
	char spec[64];
	int rc;

	enter_ns(ns);
	snprintf(spec, sizeof(spec), "afxdp:%s:%u", ifname, queue);
	rc = port_config_parse(spec, &cfg, err, errlen);
	if (rc)
		return rc;
	cfg.extra_udp_port = extra;
	return port_open(p, &cfg, err, errlen);
}

static uint32_t prog_on(const char *ns, const char *ifname)
{
	uint32_t id = 0;

	enter_ns(ns);
	if (bpf_xdp_query_id((int)if_nametoindex(ifname), 0, &id))
		return 0;
	return id;
}

/* Frames the port can hand out right now: everything not in the kernel's
 * fill ring. Taken and given back, so the port is left as it was. */
static unsigned count_free(struct port *p)
{
	static struct uroce_frame f[1u << 16];
	unsigned n = 0;
	uint16_t k;

	for (int i = 0; i < 50; i++)
		port_poll(p);
	while (n + PORT_BURST_MAX <= sizeof(f) / sizeof(f[0]) && (k = port_alloc(p, f + n, PORT_BURST_MAX)) > 0)
		n += k;
	for (unsigned i = 0; i < n; i += PORT_BURST_MAX)
		port_free(p, f + i, (uint16_t)(n - i < PORT_BURST_MAX ? n - i : PORT_BURST_MAX));
	return n;
}

static const uint32_t sizes[] = { 16, 700, 1400, 3000, 4000 };

static int build(struct port *from, struct port *to, unsigned q, uint32_t seq, struct uroce_frame *f)
{
	struct roce_pkt pkt;
	uint8_t pl[4096];
	uint32_t mtu_room = from->mtu - (IPV4_HDR_LEN + UDP_HDR_LEN + BTH_LEN + ICRC_LEN + 3);
	uint32_t len = sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];

	if (len > mtu_room)
		len = mtu_room;
	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.smac, from->mac, 6);
	memcpy(pkt.dmac, to->mac, 6);
	roce_ipv4_mapped(pkt.sip, htonl(0x0a000001));
	roce_ipv4_mapped(pkt.dip, htonl(0x0a000002));
	pkt.ttl = 64;
	pkt.sport = 0xc000;
	pkt.opcode = ROCE_TR_UC | ROCE_OP_SEND_ONLY;
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.dqpn = 0x100 + q;
	pkt.psn = seq;
	memset(pl, (int)(q * 16 + seq % 16), sizeof(pl));
	pkt.payload = pl;
	pkt.payload_len = len;
	int n = roce_build(f->data, f->room, &pkt);
	if (n < 0)
		return n;
	f->len = (uint32_t)n;
	return 0;
}

/* Send FRAMES_PER_QUEUE frames from tx to its peer on queue q and collect
 * what each receive queue got. */
static void traffic(struct port *tx, struct port *rx[NQ], unsigned q, unsigned got[NQ], unsigned *bad)
{
	struct uroce_frame f[PORT_BURST_MAX];
	uint32_t sent = 0;
	uint64_t deadline = now_ms() + WAIT_MS;

	memset(got, 0, sizeof(unsigned) * NQ);
	*bad = 0;
	while (now_ms() < deadline) {
		if (sent < FRAMES_PER_QUEUE) {
			uint16_t n = port_alloc(tx, f, 8), k;

			for (uint16_t i = 0; i < n; i++)
				if (build(tx, rx[q], q, sent + i, &f[i]))
					(*bad)++;
			k = port_tx_burst(tx, f, n);
			if (k < n)
				port_free(tx, f + k, (uint16_t)(n - k));
			sent += k;
		}
		port_poll(tx);
		for (unsigned r = 0; r < NQ; r++) {
			uint16_t n;

			port_poll(rx[r]);
			n = port_rx_burst(rx[r], f, PORT_BURST_MAX);
			for (uint16_t i = 0; i < n; i++) {
				struct roce_pkt pkt;
				struct roce_parse_opts po = { 0 };

				if (roce_parse(f[i].data, f[i].len, &pkt, &po) != UROCE_DROP_NONE ||
				    pkt.dqpn != 0x100 + q || pkt.payload[pkt.payload_len - 1] != (uint8_t)(q * 16 + pkt.psn % 16))
					(*bad)++;
				else
					got[r]++;
			}
			if (n)
				port_free(rx[r], f, n);
		}
		if (got[q] + *bad >= FRAMES_PER_QUEUE && sent == FRAMES_PER_QUEUE)
			break;
	}
}

int main(int argc, char **argv)
{
	struct port *a[NQ] = { 0 }, *b[NQ] = { 0 }, *extra = NULL;
	struct port_afxdp_info ia[NQ], ib;
	unsigned free_a0, free_b0, got[NQ], bad;
	char err[512];
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: afxdp_queues NS_A IFACE_A NS_B IFACE_B\n");
		return 2;
	}
	const char *nsa = argv[1], *ifa = argv[2], *nsb = argv[3], *ifb = argv[4];

	for (unsigned q = 0; q < NQ; q++) {
		rc = open_port(nsa, ifa, q, 0, &a[q], err, sizeof(err));
		check(rc == 0, "open %s queue %u%s%s", ifa, q, rc ? ": " : "", rc ? err : "");
		rc = open_port(nsb, ifb, q, 0, &b[q], err, sizeof(err));
		check(rc == 0, "open %s queue %u%s%s", ifb, q, rc ? ": " : "", rc ? err : "");
		if (!a[q] || !b[q])
			return 1;
	}
	port_afxdp_info(a[0], &ia[0]);
	port_afxdp_info(a[1], &ia[1]);
	port_afxdp_info(b[0], &ib);
	check(ia[0].prog_id && ia[0].prog_id == ia[1].prog_id, "queues 0 and 1 of %s share one XDP program (%u, %u)",
	      ifa, ia[0].prog_id, ia[1].prog_id);
	check(ia[0].prog_owner && ib.prog_owner && ib.prog_id != ia[0].prog_id,
	      "each end of the pair has its own program (%u, %u), attached by us", ia[0].prog_id, ib.prog_id);
	check(prog_on(nsa, ifa) == ia[0].prog_id, "the kernel reports program %u on %s", ia[0].prog_id, ifa);

	/* Conflicts a second port on the same interface must refuse. */
	rc = open_port(nsa, ifa, 0, 0, &extra, err, sizeof(err));
	check(rc == -EBUSY && strstr(err, "already open"), "queue 0 twice is refused: %s", err);
	rc = open_port(nsa, ifa, NQ, 0, &extra, err, sizeof(err));
	check(rc < 0 && strstr(err, "queue"), "queue %u of a %u-queue veth is refused: %s", NQ, NQ, err);
	rc = open_port(nsa, ifa, 1, 4792, &extra, err, sizeof(err));
	check(rc < 0 && strstr(err, "extra UDP port"), "a different extra port on a shared program is refused: %s",
	      err);

	free_a0 = count_free(a[0]);
	free_b0 = count_free(b[0]);
	check(free_a0 > 0 && free_b0 > 0, "frames free before traffic: %u and %u", free_a0, free_b0);

	/* Steering: what leaves on queue q must arrive on queue q only. */
	for (unsigned q = 0; q < NQ; q++) {
		traffic(a[q], b, q, got, &bad);
		check(got[q] == FRAMES_PER_QUEUE && got[1 - q] == 0 && bad == 0,
		      "%s queue %u -> %s: %u on queue %u, %u on queue %u, %u bad", ifa, q, ifb, got[q], q, got[1 - q],
		      1 - q, bad);
	}

	/* Forwarding: a received frame goes back out as it is, from its
	 * receive slot (multi-buffer frames included). */
	{
		struct uroce_frame f[PORT_BURST_MAX];
		unsigned echoed = 0, back = 0;
		uint64_t deadline;

		deadline = now_ms() + WAIT_MS;
		for (uint32_t sent = 0; sent < 64 && now_ms() < deadline;) {
			uint16_t n = port_alloc(a[0], f, (uint16_t)(64 - sent)), k;

			for (uint16_t i = 0; i < n; i++)
				build(a[0], b[0], 0, sent + i, &f[i]);
			k = port_tx_burst(a[0], f, n);
			if (k < n)
				port_free(a[0], f + k, (uint16_t)(n - k));
			sent += k;
			port_poll(a[0]);
		}
		while (back < 64 && now_ms() < deadline) {
			uint16_t n, k;

			port_poll(a[0]);
			port_poll(b[0]);
			n = port_rx_burst(b[0], f, PORT_BURST_MAX);
			for (uint16_t i = 0; i < n; i++) {
				uint8_t mac[6];

				memcpy(mac, f[i].data, 6);
				memcpy(f[i].data, f[i].data + 6, 6);
				memcpy(f[i].data + 6, mac, 6);
			}
			k = port_tx_burst(b[0], f, n);
			if (k < n)
				port_free(b[0], f + k, (uint16_t)(n - k));
			echoed += k;
			n = port_rx_burst(a[0], f, PORT_BURST_MAX);
			for (uint16_t i = 0; i < n; i++) {
				struct roce_pkt pkt;
				struct roce_parse_opts po = { 0 };

				if (roce_parse(f[i].data, f[i].len, &pkt, &po) == UROCE_DROP_NONE &&
				    !memcmp(pkt.dmac, a[0]->mac, 6) &&
				    pkt.payload[pkt.payload_len - 1] == (uint8_t)(pkt.psn % 16))
					back++;
			}
			if (n)
				port_free(a[0], f, n);
		}
		check(echoed == 64 && back == 64, "received frames sent back from their receive slots: %u echoed, %u "
		      "came back intact", echoed, back);
	}

	/* A frame the kernel would reject is taken, counted, and its slot
	 * comes back. */
	{
		struct uroce_frame f;
		uint64_t before = a[0]->stats.drops[UROCE_DROP_BAD_LENGTH];

		if (port_alloc(a[0], &f, 1) == 1) {
			f.len = 0;
			check(port_tx_burst(a[0], &f, 1) == 1 &&
				      a[0]->stats.drops[UROCE_DROP_BAD_LENGTH] == before + 1,
			      "an empty frame is taken and counted as bad_length");
		}
	}
	check(count_free(a[0]) == free_a0, "no frame leaked on the sender (%u free)", free_a0);
	check(count_free(b[0]) == free_b0, "no frame leaked on the receiver (%u free)", free_b0);

	/* The program stays while any port on the interface is open. */
	port_close(a[0]);
	a[0] = NULL;
	check(prog_on(nsa, ifa) == ia[1].prog_id, "program still attached with queue 1 open");
	traffic(a[1], b, 1, got, &bad);
	check(got[1] == FRAMES_PER_QUEUE && bad == 0, "queue 1 still delivers after queue 0 closed (%u)", got[1]);
	port_close(a[1]);
	a[1] = NULL;
	check(prog_on(nsa, ifa) == 0, "program detached when the last port on %s closed", ifa);

	/* Reopen right away: the kernel releases the queue lazily (EBUSY),
	 * which the port waits out. */
	rc = open_port(nsa, ifa, 0, 0, &a[0], err, sizeof(err));
	check(rc == 0, "queue 0 reopens right after close%s%s", rc ? ": " : "", rc ? err : "");
	port_close(a[0]);

	for (unsigned q = 0; q < NQ; q++)
		port_close(b[q]);
	check(prog_on(nsb, ifb) == 0, "program detached from %s", ifb);
	printf("%s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
