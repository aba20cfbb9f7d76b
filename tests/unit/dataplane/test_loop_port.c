/* SPDX-License-Identifier: MIT */
/* The loop fabric: opening ports, each impairment doing what it is
 * configured to (exact counts or wide statistical bounds, all for a fixed
 * seed), the rate limiter's bound, back-pressure, RX ring overflow,
 * corruption caught by the ICRC check, and determinism: the same seed
 * replays exactly, another seed does not. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <arpa/inet.h>

#include "loop_test.h"

#define MAXF (LOOP_MTU_DEFAULT + 18u)
#define ETHERTYPE_TEST 0x88b5u /* IEEE local experimental */

/* ---- raw sequenced frames: Ethernet header, seq (4 bytes), pattern ---- */

static uint8_t pattern_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31u + i * 13u);
}

static void fill_frame(uint8_t *d, uint32_t len, const struct port *from, const struct port *to, uint32_t seq)
{
	memcpy(d, to->mac, 6);
	memcpy(d + 6, from->mac, 6);
	roce_put_be16(d + 12, ETHERTYPE_TEST);
	roce_put_be32(d + 14, seq);
	for (uint32_t i = 18; i < len; i++)
		d[i] = pattern_byte(seq, i);
}

/* Send one frame of len bytes; returns 1 if the port took it, 0 if the
 * pool was empty or the port refused it (then it is freed here). */
static int send_one(struct port *from, const struct port *to, uint32_t seq, uint32_t len)
{
	struct uroce_frame f;

	if (port_alloc(from, &f, 1) != 1)
		return 0;
	REQUIRE(f.room >= len, "frame room %u < %u", f.room, len);
	fill_frame(f.data, len, from, to, seq);
	f.len = len;
	if (port_tx_burst(from, &f, 1) == 1)
		return 1;
	port_free(from, &f, 1);
	return 0;
}

struct rxlog {
	uint32_t n;
	uint32_t cap;
	uint32_t *seq;
	uint64_t *at;
	uint32_t *len;
	uint32_t bad_content; /* frames whose bytes differ from what was sent */
};

static void rxlog_init(struct rxlog *l, uint32_t cap)
{
	l->n = 0;
	l->cap = cap;
	l->seq = calloc(cap, sizeof(*l->seq));
	l->at = calloc(cap, sizeof(*l->at));
	l->len = calloc(cap, sizeof(*l->len));
	l->bad_content = 0;
	REQUIRE(l->seq && l->at && l->len, "out of memory");
}

static void rxlog_free(struct rxlog *l)
{
	free(l->seq);
	free(l->at);
	free(l->len);
}

/* Receive everything waiting on p, check content, free the frames. */
static unsigned drain(struct loop_fabric *fab, struct port *p, struct rxlog *l)
{
	struct uroce_frame f[PORT_BURST_MAX];
	unsigned total = 0;
	uint16_t n;

	while ((n = port_rx_burst(p, f, PORT_BURST_MAX)) > 0) {
		for (uint16_t i = 0; i < n; i++) {
			uint32_t seq = roce_get_be32(f[i].data + 14);
			bool ok = f[i].len >= 18 && roce_get_be16(f[i].data + 12) == ETHERTYPE_TEST &&
			          !memcmp(f[i].data, p->mac, 6);

			for (uint32_t k = 18; ok && k < f[i].len; k++)
				ok = f[i].data[k] == pattern_byte(seq, k);
			if (!ok)
				l->bad_content++;
			if (l->n < l->cap) {
				l->seq[l->n] = seq;
				l->at[l->n] = loop_fabric_now(fab);
				l->len[l->n] = f[i].len;
				l->n++;
			}
		}
		port_free(p, f, n);
		total += n;
	}
	return total;
}

/* Deliver everything still on the wires, event by event, receiving on p
 * as each arrives (so the log's times are arrival times). */
static void settle(struct loop_fabric *fab, struct port *p, struct rxlog *l)
{
	for (int i = 0; i < 100000 && loop_fabric_in_flight(fab); i++) {
		uint64_t next = loop_fabric_next_event(fab), now = loop_fabric_now(fab);

		loop_fabric_advance(fab, next > now ? next - now : 0);
		drain(fab, p, l);
	}
	CHECK(loop_fabric_in_flight(fab) == 0, "frames still in flight");
}

/* ---- tests ---- */

static void test_open(void)
{
	struct loop_fabric *fab = loop_fabric_create(3, 1);
	struct port_config cfg = { .kind = PORT_KIND_LOOP };
	struct port *p0, *p2, *x = NULL;
	char err[256];
	int rc;

	REQUIRE(fab, "fabric create failed");
	cfg.fabric = NULL;
	rc = port_open(&x, &cfg, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "fabric"), "no fabric: rc %d, '%s'", rc, err);
	cfg.fabric = fab;
	cfg.loop_index = 3;
	rc = port_open(&x, &cfg, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "0-2"), "index 3 of 3: rc %d, '%s'", rc, err);

	/* the spec parser's output opens as it is, once a fabric is set */
	REQUIRE(port_config_parse("loop:2", &cfg, err, sizeof(err)) == 0, "parse: %s", err);
	cfg.fabric = fab;
	REQUIRE(port_open(&p2, &cfg, err, sizeof(err)) == 0, "open loop:2: %s", err);
	rc = port_open(&x, &cfg, err, sizeof(err));
	CHECK(rc == -EBUSY && strstr(err, "already open"), "double open: rc %d, '%s'", rc, err);
	p0 = open_loop_port(fab, 0);

	static const uint8_t mac0[6] = { 2, 0, 0, 0, 0, 1 }, mac2[6] = { 2, 0, 0, 0, 0, 3 };
	CHECK(!memcmp(p0->mac, mac0, 6), "port 0 MAC");
	CHECK(!memcmp(p2->mac, mac2, 6), "port 2 MAC");
	CHECK(p0->ipv4_be == htonl(0x0a000001), "port 0 is 10.0.0.1");
	CHECK(p2->ipv4_be == htonl(0x0a000003), "port 2 is 10.0.0.3");
	CHECK(p0->mtu == LOOP_MTU_DEFAULT, "default MTU %u", p0->mtu);
	CHECK(!strcmp(p0->ops->name, "loop"), "ops name");

	CHECK(!port_link_up(p0), "unwired port must be down");
	CHECK(send_one(p0, p2, 1, 100) == 1, "tx on an unwired port is taken (and dropped)");
	REQUIRE(loop_fabric_connect(fab, 0, 2, NULL, NULL) == 0, "connect: %s", loop_fabric_last_error(fab));
	CHECK(port_link_up(p0) && port_link_up(p2), "wired ports are up");
	REQUIRE(loop_fabric_set_link(fab, 2, false) == 0, "set_link");
	CHECK(!port_link_up(p0) && !port_link_up(p2), "link down on both ends");
	CHECK(send_one(p0, p2, 2, 100) == 1, "tx on a down link");
	REQUIRE(loop_fabric_set_link(fab, 0, true) == 0, "set_link");
	CHECK(send_one(p0, p2, 3, 100) == 1, "tx on an up link");

	struct rxlog l;
	rxlog_init(&l, 16);
	CHECK(drain(fab, p2, &l) == 1 && l.seq[0] == 3, "only the frame sent while up arrives");
	CHECK(l.bad_content == 0, "content intact");
	struct loop_link_stats st;
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(st.link_down == 2 && st.delivered == 1, "link_down %llu delivered %llu",
	      (unsigned long long)st.link_down, (unsigned long long)st.delivered);
	CHECK(p2->stats.rx_packets == 1 && p0->stats.tx_packets == 3, "port counters");

	/* a frame longer than the MTU is refused and counted */
	struct uroce_frame f;
	REQUIRE(port_alloc(p0, &f, 1) == 1, "alloc");
	f.len = p0->mtu + 19;
	CHECK(port_tx_burst(p0, &f, 1) == 1, "oversize frame is consumed");
	/* and freeing it again is caught, not a corruption of the pool */
	port_free(p0, &f, 1);
	loop_fabric_stats(fab, &st);
	CHECK(st.tx_invalid == 1 && st.free_invalid == 1, "tx_invalid %llu free_invalid %llu",
	      (unsigned long long)st.tx_invalid, (unsigned long long)st.free_invalid);

	/* closing with a frame waiting gives it back; one in flight to the
	 * closed port is counted on arrival */
	struct loop_impairment slow = { .delay_ns = 1000 };
	REQUIRE(loop_fabric_set_impairment(fab, 0, &slow) == 0, "set_impairment: %s", loop_fabric_last_error(fab));
	CHECK(send_one(p2, p0, 4, 64) == 1, "tx");
	CHECK(loop_fabric_advance(fab, 0) == 1, "zero-delay frame not delivered by advance(0)");
	CHECK(send_one(p0, p2, 5, 64) == 1, "tx");
	port_close(p2);
	port_close(p0);
	loop_fabric_advance(fab, 1000);
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(st.rx_no_port == 1, "frame to a closed port: rx_no_port %llu", (unsigned long long)st.rx_no_port);
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "pool leaked: %u free",
	      loop_fabric_free_frames(fab));
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

static void test_config_errors(void)
{
	struct loop_fabric_opts o = { .nports = 0 };
	struct loop_fabric *fab;
	char err[256] = "";

	errno = 0;
	CHECK(!loop_fabric_create(0, 1) && errno == EINVAL, "0 ports");
	CHECK(!loop_fabric_create(LOOP_FABRIC_MAX_PORTS + 1, 1) && errno == EINVAL, "too many ports");
	CHECK(!loop_fabric_create_opts(&o, err, sizeof(err)) && strstr(err, "accepted"), "message: '%s'", err);
	o.nports = 2;
	o.rx_ring = 100;
	CHECK(!loop_fabric_create_opts(&o, err, sizeof(err)) && strstr(err, "power of two"), "message: '%s'", err);

	/* a configured MTU: the port reports it and frames longer than it
	 * plus Ethernet and one VLAN tag are refused */
	o = (struct loop_fabric_opts){ .nports = 2, .seed = 1, .mtu = 1500, .nframes = 16 };
	fab = loop_fabric_create_opts(&o, err, sizeof(err));
	REQUIRE(fab, "create with mtu 1500: %s", err);
	{
		struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
		struct loop_link_stats st;
		struct uroce_frame f;

		REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
		CHECK(a->mtu == 1500, "mtu %u", a->mtu);
		CHECK(port_alloc(a, &f, 1) == 1 && f.room >= 1518, "room %u", f.room);
		port_free(a, &f, 1);
		CHECK(send_one(a, b, 1, 1518) == 1 && send_one(a, b, 2, 1519) == 1, "tx");
		CHECK(port_rx_burst(b, &f, 1) == 1 && f.len == 1518, "the 1518-byte frame arrives");
		port_free(b, &f, 1);
		CHECK(port_rx_burst(b, &f, 1) == 0, "the 1519-byte frame must not");
		loop_fabric_link_stats(fab, 0, &st);
		CHECK(st.tx_invalid == 1, "tx_invalid %llu", (unsigned long long)st.tx_invalid);
		port_close(a);
		port_close(b);
		loop_fabric_destroy(fab);
	}
	o.mtu = 20;
	CHECK(!loop_fabric_create_opts(&o, err, sizeof(err)) && strstr(err, "68-65535"), "mtu 20: '%s'", err);

	fab = loop_fabric_create(2, 1);
	REQUIRE(fab, "create");
	struct loop_impairment bad = { .loss = 1.5 };
	CHECK(loop_fabric_connect(fab, 0, 1, &bad, NULL) == -EINVAL, "loss 1.5 accepted");
	CHECK(strstr(loop_fabric_last_error(fab), "loss") && strstr(loop_fabric_last_error(fab), "0 to 1"),
	      "message: '%s'", loop_fabric_last_error(fab));
	bad = (struct loop_impairment){ .burst.loss_bad = -0.1 };
	CHECK(loop_fabric_connect(fab, 0, 1, NULL, &bad) == -EINVAL, "negative probability accepted");
	bad = (struct loop_impairment){ .reorder = 0.1 };
	CHECK(loop_fabric_connect(fab, 0, 1, &bad, NULL) == -EINVAL &&
	      strstr(loop_fabric_last_error(fab), "reorder_max_ns"), "reorder without a bound: '%s'",
	      loop_fabric_last_error(fab));
	bad = (struct loop_impairment){ .rate_bps = 1000000, .queue_bytes = 100 };
	CHECK(loop_fabric_connect(fab, 0, 1, &bad, NULL) == -EINVAL &&
	      strstr(loop_fabric_last_error(fab), "queue_bytes"), "queue smaller than a frame: '%s'",
	      loop_fabric_last_error(fab));
	CHECK(loop_fabric_connect(fab, 0, 5, NULL, NULL) == -EINVAL &&
	      strstr(loop_fabric_last_error(fab), "0-1"), "port 5: '%s'", loop_fabric_last_error(fab));
	CHECK(loop_fabric_set_impairment(fab, 0, NULL) == -EINVAL, "impairment on an unwired port");
	loop_fabric_destroy(fab);
}

/* Zero delay: frames are receivable right after tx, in order, intact. */
static void test_perfect(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 5);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct rxlog l;
	unsigned sent = 0;

	rxlog_init(&l, 2000);
	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
	for (uint32_t i = 0; i < 1000; i++)
		sent += send_one(a, b, i, 60 + i % (MAXF - 60));
	CHECK(sent == 1000, "sent %u", sent);
	CHECK(drain(fab, b, &l) == 1000, "received %u", l.n);
	for (uint32_t i = 0; i < l.n; i++)
		CHECK(l.seq[i] == i && l.len[i] == 60 + i % (MAXF - 60), "frame %u: seq %u len %u", i, l.seq[i],
		      l.len[i]);
	CHECK(l.bad_content == 0, "%u frames changed on a perfect wire", l.bad_content);
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "frames leaked");
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

/* Delay is exact, jitter stays within its bound and keeps FIFO order. */
static void test_delay_jitter(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 6);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .delay_ns = 10000 };
	struct rxlog l;

	rxlog_init(&l, 5000);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	send_one(a, b, 0, 100);
	loop_fabric_advance(fab, 9999);
	CHECK(drain(fab, b, &l) == 0, "delivered before the delay");
	loop_fabric_advance(fab, 1);
	CHECK(drain(fab, b, &l) == 1 && l.at[0] == 10000, "not delivered at exactly the delay");

	imp.jitter_ns = 5000;
	REQUIRE(loop_fabric_set_impairment(fab, 0, &imp) == 0, "set");
	l.n = 0;
	uint64_t t0 = loop_fabric_now(fab), min_extra = UINT64_MAX, max_extra = 0;
	for (uint32_t i = 0; i < 4000; i++) {
		send_one(a, b, i, 100);
		loop_fabric_advance(fab, 100); /* 100 ns apart: jitter could reorder, FIFO must not */
		drain(fab, b, &l);
	}
	settle(fab, b, &l);
	CHECK(l.n == 4000, "received %u of 4000", l.n);
	for (uint32_t i = 0; i < l.n; i++) {
		uint64_t sent_at = t0 + 100ull * l.seq[i];
		uint64_t extra = l.at[i] - sent_at - 10000;

		CHECK(l.seq[i] == i, "jitter reordered: position %u has seq %u", i, l.seq[i]);
		CHECK(l.at[i] >= sent_at + 10000, "frame %u arrived before the fixed delay", i);
		if (extra < min_extra)
			min_extra = extra;
		if (extra > max_extra)
			max_extra = extra;
	}
	/* received on the 100 ns grid: up to one step late, plus the FIFO
	 * floor that can hold a frame behind a slower predecessor (itself
	 * within the jitter bound of an earlier send) */
	CHECK(max_extra <= 5000 + 100, "extra delay %llu beyond jitter", (unsigned long long)max_extra);
	CHECK(max_extra > 2500, "jitter never used its range (max %llu)", (unsigned long long)max_extra);
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

/* Send n frames a -> b 1 us apart, receive as we go; return the log. */
static void run_stream(struct loop_fabric *fab, struct port *a, struct port *b, uint32_t n, uint32_t len,
                       struct rxlog *l)
{
	for (uint32_t i = 0; i < n; i++) {
		send_one(a, b, i, len);
		loop_fabric_advance(fab, 1000);
		drain(fab, b, l);
	}
	settle(fab, b, l);
}

/* Longest and mean run of consecutive missing sequence numbers. */
static double mean_loss_run(const struct rxlog *l, uint32_t n)
{
	uint8_t *got = calloc(n, 1);
	unsigned runs = 0, lost = 0;

	for (uint32_t i = 0; i < l->n; i++)
		got[l->seq[i]] = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (!got[i]) {
			lost++;
			if (i == 0 || got[i - 1])
				runs++;
		}
	}
	free(got);
	return runs ? (double)lost / runs : 0.0;
}

static void test_loss(void)
{
	enum { N = 100000 };
	struct loop_fabric *fab = loop_fabric_create(2, 7);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .loss = 0.1 };
	struct loop_link_stats st;
	struct rxlog l;
	double run_uniform, run_burst;

	rxlog_init(&l, N);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	run_stream(fab, a, b, N, 64, &l);
	loop_fabric_link_stats(fab, 0, &st);
	/* binomial(100000, 0.1): sd ~95; +-1000 is over 10 sd */
	CHECK(st.lost >= 9000 && st.lost <= 11000, "uniform loss 10%%: lost %llu of %d", (unsigned long long)st.lost, N);
	CHECK(st.lost + l.n == N && st.delivered == l.n, "lost %llu + received %u != %d",
	      (unsigned long long)st.lost, l.n, N);
	run_uniform = mean_loss_run(&l, N);
	for (uint32_t i = 1; i < l.n; i++)
		CHECK(l.seq[i] > l.seq[i - 1], "loss alone must not reorder");

	/* Gilbert-Elliott: enter bad with 1%, leave with 20% (mean burst 5),
	 * lose everything in bad: stationary loss 0.01/0.21 = 4.8% */
	imp = (struct loop_impairment){ .burst = { .p_good_bad = 0.01, .p_bad_good = 0.2, .loss_bad = 1.0 } };
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	struct loop_link_stats before;
	loop_fabric_link_stats(fab, 0, &before);
	l.n = 0;
	run_stream(fab, a, b, N, 64, &l);
	loop_fabric_link_stats(fab, 0, &st);
	uint64_t burst_lost = st.lost_burst - before.lost_burst;
	CHECK(burst_lost >= 3500 && burst_lost <= 6200, "bursty loss ~4.8%%: lost %llu of %d",
	      (unsigned long long)burst_lost, N);
	CHECK(st.lost == before.lost, "uniform loss is off here");
	CHECK(burst_lost + l.n == N, "lost + received != sent");
	run_burst = mean_loss_run(&l, N);
	/* geometric bursts of mean 5 vs. uniform runs of ~1.1 */
	CHECK(run_uniform < 1.3, "uniform loss runs average %.2f", run_uniform);
	CHECK(run_burst > 3.5, "bursty loss runs average only %.2f", run_burst);
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

static void test_reorder_dup(void)
{
	enum { N = 20000 };
	struct loop_fabric *fab = loop_fabric_create(2, 8);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .reorder = 0.05, .reorder_max_ns = 50000, .delay_ns = 2000 };
	struct loop_link_stats st;
	struct rxlog l;
	uint8_t *seen = calloc(N, 1);
	unsigned inversions = 0;

	rxlog_init(&l, 2 * N);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	run_stream(fab, a, b, N, 64, &l);
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(l.n == N, "reorder lost frames: %u of %d", l.n, N);
	for (uint32_t i = 0; i < l.n; i++) {
		CHECK(!seen[l.seq[i]]++, "seq %u delivered twice", l.seq[i]);
		if (i && l.seq[i] < l.seq[i - 1])
			inversions++;
		/* sent at seq us; due delay + at most reorder_max_ns later, seen
		 * at the next 1 us step */
		CHECK(l.at[i] <= 1000ull * l.seq[i] + 2000 + 50000 + 1000, "seq %u held longer than the bound", l.seq[i]);
	}
	CHECK(st.reordered >= 800 && st.reordered <= 1200, "reordered %llu, expected ~1000",
	      (unsigned long long)st.reordered);
	CHECK(inversions > 500, "reorder produced only %u inversions", inversions);

	/* duplication: each frame once or twice, copies identical */
	imp = (struct loop_impairment){ .duplicate = 0.1 };
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	l.n = 0;
	memset(seen, 0, N);
	run_stream(fab, a, b, N, 200, &l);
	loop_fabric_link_stats(fab, 0, &st);
	unsigned twice = 0;
	for (uint32_t i = 0; i < l.n; i++) {
		seen[l.seq[i]]++;
		if (i)
			CHECK(l.seq[i] >= l.seq[i - 1], "duplication reordered");
	}
	for (uint32_t i = 0; i < N; i++) {
		CHECK(seen[i] == 1 || seen[i] == 2, "seq %u delivered %u times", i, seen[i]);
		twice += seen[i] == 2;
	}
	CHECK(twice == st.duplicated && l.n == N + twice, "duplicated %llu, seen twice %u, received %u",
	      (unsigned long long)st.duplicated, twice, l.n);
	CHECK(twice >= 1700 && twice <= 2300, "dup 10%%: %u of %d", twice, N);
	CHECK(l.bad_content == 0, "a copy differs from its original");
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "frames leaked");
	free(seen);
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

/* Every corrupted frame differs from what was sent in exactly one bit, at
 * or after corrupt_skip. */
static void test_corrupt_bits(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 9);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .corrupt = 1.0, .corrupt_skip = 30 };
	struct loop_link_stats st;
	uint8_t want[MAXF];
	unsigned got = 0;

	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	for (uint32_t i = 0; i < 2000; i++) {
		uint32_t len = 40 + i % 1000;
		struct uroce_frame f;

		send_one(a, b, i, len);
		if (port_rx_burst(b, &f, 1) != 1)
			continue;
		got++;
		fill_frame(want, len, a, b, i);
		unsigned bits = 0, first = UINT32_MAX;
		for (uint32_t k = 0; k < f.len; k++) {
			uint8_t x = f.data[k] ^ want[k];
			if (x && first == UINT32_MAX)
				first = k;
			bits += (unsigned)__builtin_popcount(x);
		}
		CHECK(f.len == len && bits == 1, "frame %u: %u bits flipped", i, bits);
		CHECK(first >= 30, "frame %u: flip at byte %u, before corrupt_skip", i, first);
		port_free(b, &f, 1);
	}
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(got == 2000 && st.corrupted == 2000, "received %u, corrupted %llu", got, (unsigned long long)st.corrupted);
	port_close(a);
	port_close(b);
	loop_fabric_destroy(fab);
}

/* RoCE frames corrupted past their headers all fail the ICRC check; the
 * rest parse cleanly. */
static void test_corrupt_icrc(void)
{
	enum { N = 3000 };
	struct loop_fabric *fab = loop_fabric_create(2, 10);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct roce_pkt pkt;
	unsigned reasons[UROCE_DROP__COUNT] = { 0 };
	struct loop_link_stats st;

	test_roce_pkt(&pkt, a, b, 0, 256);
	struct loop_impairment imp = { .corrupt = 0.3, .corrupt_skip = roce_hdr_len(&pkt) };
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	for (uint32_t i = 0; i < N; i++) {
		struct uroce_frame f;
		enum uroce_drop_reason r;

		REQUIRE(port_alloc(a, &f, 1) == 1, "alloc");
		test_build_roce(&f, a, b, i, 256);
		REQUIRE(port_tx_burst(a, &f, 1) == 1, "tx");
		REQUIRE(port_rx_burst(b, &f, 1) == 1, "rx");
		r = roce_parse(f.data, f.len, &pkt, NULL);
		reasons[r]++;
		if (r == UROCE_DROP_NONE)
			CHECK(pkt.psn == i && pkt.payload_len == 256 && pkt.payload[7] == test_payload_byte(i, 7),
			      "frame %u parsed wrong", i);
		port_free(b, &f, 1);
	}
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(st.corrupted > 700 && st.corrupted < 1100, "corrupt 30%%: %llu of %d", (unsigned long long)st.corrupted, N);
	CHECK(reasons[UROCE_DROP_BAD_ICRC] == st.corrupted, "bad_icrc %u != corrupted %llu",
	      reasons[UROCE_DROP_BAD_ICRC], (unsigned long long)st.corrupted);
	CHECK(reasons[UROCE_DROP_NONE] + reasons[UROCE_DROP_BAD_ICRC] == N, "other drop reasons appeared");
	port_close(a);
	port_close(b);
	loop_fabric_destroy(fab);
}

/* Offer twice the rate: delivered bytes never exceed rate x time plus one
 * frame, the queue overflows and is counted; with back-pressure the sender
 * is refused instead and nothing is dropped. */
static void test_rate(bool backpressure)
{
	const uint64_t rate = 1000000000ull; /* 1 Gbit/s */
	const uint32_t len = 1500;
	struct loop_fabric *fab = loop_fabric_create(2, 11);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .rate_bps = rate, .queue_bytes = 30000, .delay_ns = 5000,
		                       .backpressure = backpressure };
	struct loop_link_stats st;
	struct rxlog l;
	uint64_t bytes = 0, t0, offered = 0, accepted = 0, refused_calls = 0;
	unsigned over = 0;

	rxlog_init(&l, 100000);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	t0 = loop_fabric_now(fab);
	/* 1500 bytes every 6 us = 2 Gbit/s for 10 ms, observed every 1 us */
	for (uint64_t us = 0; us < 10000 + 200; us++) {
		if (us < 10000 && us % 6 == 0) {
			offered++;
			if (send_one(a, b, (uint32_t)offered, len))
				accepted++;
			else
				refused_calls++;
		}
		loop_fabric_advance(fab, 1000);
		uint32_t before = l.n;
		drain(fab, b, &l);
		for (uint32_t i = before; i < l.n; i++)
			bytes += l.len[i];
		/* nothing can have left the link before the first bit went in */
		if (bytes * 8 * 1000000000ull > rate * (loop_fabric_now(fab) - t0) + 8ull * 1000000000ull * len)
			over++;
	}
	settle(fab, b, &l);
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(over == 0, "delivered more than rate x time + one frame at %u observations", over);
	/* the link stayed busy: it delivered close to its rate over 10 ms */
	CHECK(st.delivered_bytes * 8 > rate / 100 * 95 / 100, "delivered only %llu bytes in 10 ms",
	      (unsigned long long)st.delivered_bytes);
	if (backpressure) {
		CHECK(st.queue_drops == 0, "back-pressure must not drop");
		CHECK(st.refused == refused_calls && refused_calls > 0, "refused %llu, calls refused %llu",
		      (unsigned long long)st.refused, (unsigned long long)refused_calls);
		CHECK(st.delivered == accepted, "accepted %llu, delivered %llu", (unsigned long long)accepted,
		      (unsigned long long)st.delivered);
	} else {
		CHECK(st.queue_drops > 0 && refused_calls == 0, "no queue drops while offering twice the rate");
		CHECK(st.delivered + st.queue_drops == offered, "delivered %llu + dropped %llu != offered %llu",
		      (unsigned long long)st.delivered, (unsigned long long)st.queue_drops,
		      (unsigned long long)offered);
	}
	CHECK(l.bad_content == 0, "content changed");
	for (uint32_t i = 1; i < l.n; i++)
		CHECK(l.seq[i] > l.seq[i - 1], "rate limiter reordered");
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

/* A full RX ring drops on the receiving port as no_buffer; a pool too
 * small for a duplicate counts dup_no_frame; alloc stops at the pool. */
static void test_buffers(void)
{
	struct loop_fabric_opts o = { .nports = 2, .seed = 12, .nframes = 64, .rx_ring = 16 };
	char err[256];
	struct loop_fabric *fab = loop_fabric_create_opts(&o, err, sizeof(err));
	REQUIRE(fab, "create: %s", err);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_link_stats st;
	struct uroce_frame f[PORT_BURST_MAX];

	struct rxlog l;

	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
	/* drained as they arrive, 40 frames pass a ring of 16 */
	rxlog_init(&l, 64);
	for (uint32_t i = 0; i < 40; i++) {
		send_one(a, b, i, 100);
		drain(fab, b, &l);
	}
	CHECK(l.n == 40 && b->stats.drops[UROCE_DROP_NO_BUFFER] == 0, "received %u", l.n);
	rxlog_free(&l);

	/* not drained: arrivals beyond 16 are dropped on b */
	for (uint32_t i = 0; i < 40; i++)
		send_one(a, b, i, 100);
	loop_fabric_advance(fab, 0);
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(b->stats.drops[UROCE_DROP_NO_BUFFER] == 24, "no_buffer drops %llu, expected 24",
	      (unsigned long long)b->stats.drops[UROCE_DROP_NO_BUFFER]);
	CHECK(st.rx_ring_full == 24, "rx_ring_full %llu", (unsigned long long)st.rx_ring_full);
	CHECK(port_rx_burst(b, f, PORT_BURST_MAX) == 16, "ring held 16");
	port_free(b, f, 16);

	/* the pool: 64 frames */
	uint16_t got = port_alloc(a, f, PORT_BURST_MAX);
	CHECK(got == 64, "allocated %u of a 64-frame pool", got);
	CHECK(port_alloc(a, f + got, 1) == 0, "allocated past the pool");
	port_free(a, f, got);
	CHECK(loop_fabric_free_frames(fab) == 64, "pool not whole");

	/* duplicates with the pool almost empty */
	struct loop_impairment dup = { .duplicate = 1.0 };
	REQUIRE(loop_fabric_set_impairment(fab, 0, &dup) == 0, "set");
	got = port_alloc(a, f, 63); /* keep 1 free */
	CHECK(got == 63, "alloc 63");
	f[0].len = 100;
	fill_frame(f[0].data, 100, a, b, 1);
	port_tx_burst(a, f, 1); /* its copy takes the last free frame */
	f[1].len = 100;
	fill_frame(f[1].data, 100, a, b, 2);
	port_tx_burst(a, f + 1, 1); /* no frame left for this copy */
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(st.duplicated == 1 && st.dup_no_frame == 1, "duplicated %llu, dup_no_frame %llu",
	      (unsigned long long)st.duplicated, (unsigned long long)st.dup_no_frame);
	port_free(a, f + 2, 61);
	rxlog_init(&l, 8);
	CHECK(drain(fab, b, &l) == 3, "received %u", l.n);
	rxlog_free(&l);
	CHECK(loop_fabric_free_frames(fab) == 64, "pool leaked");
	port_close(a);
	port_close(b);
	loop_fabric_destroy(fab);
}

/* A port wired to itself receives what it sends. */
static void test_loopback(void)
{
	struct loop_fabric *fab = loop_fabric_create(1, 13);
	struct port *a = open_loop_port(fab, 0);
	struct rxlog l;

	rxlog_init(&l, 8);
	REQUIRE(loop_fabric_connect(fab, 0, 0, NULL, NULL) == 0, "self connect: %s", loop_fabric_last_error(fab));
	CHECK(send_one(a, a, 77, 64) == 1, "tx");
	CHECK(drain(fab, a, &l) == 1 && l.seq[0] == 77, "loopback");
	port_close(a);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

/*
 * Every impairment at once, both directions, random sizes and timing: the
 * fingerprint of all deliveries (port, time, bytes) and of the counters.
 */
static uint64_t scenario(uint64_t seed)
{
	enum { N = 6000 };
	struct loop_fabric *fab = loop_fabric_create(4, seed);
	struct port *p[4];
	struct test_rng traffic = { 1234 }; /* the offered load is the same for every seed */
	uint64_t h = TEST_HASH_INIT;
	struct loop_impairment imp = {
		.loss = 0.02,
		.burst = { .p_good_bad = 0.005, .p_bad_good = 0.3, .loss_bad = 0.8 },
		.corrupt = 0.03,
		.duplicate = 0.03,
		.reorder = 0.05,
		.reorder_max_ns = 40000,
		.delay_ns = 3000,
		.jitter_ns = 2000,
		.rate_bps = 5000000000ull,
		.queue_bytes = 40000,
	};

	REQUIRE(fab, "create");
	for (unsigned i = 0; i < 4; i++)
		p[i] = open_loop_port(fab, i);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, &imp) == 0, "connect");
	imp.rate_bps = 0;
	imp.delay_ns = 500;
	REQUIRE(loop_fabric_connect(fab, 2, 3, &imp, NULL) == 0, "connect");
	for (uint32_t i = 0; i < N; i++) {
		unsigned from = (unsigned)test_rng_below(&traffic, 4);
		unsigned burst = 1 + (unsigned)test_rng_below(&traffic, 8);

		for (unsigned k = 0; k < burst; k++)
			send_one(p[from], p[from ^ 1], i * 8 + k, 60 + (uint32_t)test_rng_below(&traffic, 3000));
		loop_fabric_advance(fab, test_rng_below(&traffic, 3000));
		for (unsigned q = 0; q < 4; q++) {
			struct uroce_frame f[PORT_BURST_MAX];
			uint16_t n;

			while ((n = port_rx_burst(p[q], f, PORT_BURST_MAX)) > 0) {
				uint64_t now = loop_fabric_now(fab);
				for (uint16_t j = 0; j < n; j++) {
					h = test_hash(h, &q, sizeof(q));
					h = test_hash(h, &now, sizeof(now));
					h = test_hash(h, &f[j].len, sizeof(f[j].len));
					h = test_hash(h, f[j].data, f[j].len);
				}
				port_free(p[q], f, n);
			}
		}
	}
	for (unsigned i = 0; i < 4; i++) {
		struct loop_link_stats st;
		loop_fabric_link_stats(fab, i, &st);
		h = test_hash(h, &st, sizeof(st));
		port_close(p[i]);
	}
	loop_fabric_destroy(fab);
	return h;
}

static void test_determinism(void)
{
	uint64_t h1 = scenario(42), h2 = scenario(42), h3 = scenario(43);

	CHECK(h1 == h2, "same seed, different runs: %016llx vs %016llx", (unsigned long long)h1,
	      (unsigned long long)h2);
	CHECK(h1 != h3, "different seeds gave the same run (%016llx)", (unsigned long long)h1);
}

/* Real time: a frame is never received before its delay has passed on
 * the monotonic clock. */
static void test_real_time(void)
{
	struct loop_fabric_opts o = { .nports = 2, .seed = 14, .real_time = true };
	char err[256];
	struct loop_fabric *fab = loop_fabric_create_opts(&o, err, sizeof(err));
	REQUIRE(fab, "create: %s", err);
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);
	struct loop_impairment imp = { .delay_ns = 2000000 }; /* 2 ms */
	struct rxlog l;
	uint64_t sent_at, deadline = test_mono_ns() + TEST_HANG_NS;

	rxlog_init(&l, 4);
	REQUIRE(loop_fabric_connect(fab, 0, 1, &imp, NULL) == 0, "connect");
	sent_at = loop_fabric_now(fab);
	CHECK(send_one(a, b, 5, 64) == 1, "tx");
	while (!drain(fab, b, &l) && test_mono_ns() < deadline)
		;
	CHECK(l.n == 1 && l.seq[0] == 5, "frame did not arrive in real time");
	CHECK(l.n == 1 && l.at[0] >= sent_at + 2000000, "received %llu ns after send, delay is 2 ms",
	      (unsigned long long)(l.at[0] - sent_at));
	port_close(a);
	port_close(b);
	rxlog_free(&l);
	loop_fabric_destroy(fab);
}

int main(void)
{
	test_open();
	test_config_errors();
	test_perfect();
	test_delay_jitter();
	test_loss();
	test_reorder_dup();
	test_corrupt_bits();
	test_corrupt_icrc();
	test_rate(false);
	test_rate(true);
	test_buffers();
	test_loopback();
	test_determinism();
	test_real_time();
	return test_done("loop_port");
}
