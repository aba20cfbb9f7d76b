/* SPDX-License-Identifier: MIT */
/* The switch core over loop ports in simulated time: the rate limit
 * (departures len*8/rate apart), drop-tail at the bound, ECN marking from
 * the threshold on and only of ECT packets (step and RED-like), trimming
 * (a valid RoCEv2 packet without payload, the trim DSCP, ahead of data),
 * CNPs ahead of data, the delay line, ECMP (source ports spread, one
 * source port one member), TTL, drops by reason, queues deeper than the
 * port's frame pool, a port that refuses frames, and determinism. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fsw_test.h"

#define NS_PER_S 1000000000ull
#define PAYLOAD 1000u

static uint64_t ser(uint32_t len, uint64_t rate)
{
	return ((uint64_t)len * 8u * NS_PER_S + rate - 1) / rate;
}

static uint8_t rx_tos(const struct rx_entry *e)
{
	return e->pkt.tos;
}

/* ---- rate limit: departures exactly ceil(len*8/rate) apart ---- */

static void test_rate(uint64_t rate, uint32_t payload)
{
	struct roce_pkt p;
	struct rig r;
	uint32_t len = 0;
	uint64_t s;

	rig_cfg(&r, 2, 1);
	r.cfg.port[1].rate_bps = rate;
	rig_open(&r);
	for (uint32_t k = 0; k < 10; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, payload);
		len = rig_send(&r, 0, &p);
	}
	rig_run(&r);
	s = ser(len, rate);
	CHECK(r.nlog[1] == 10, "rate %llu: %u of 10 arrived", (unsigned long long)rate, r.nlog[1]);
	for (unsigned k = 0; k < r.nlog[1]; k++) {
		/* the first starts at 0 and has left after one serialisation */
		CHECK(r.log[1][k].t == (k + 1) * s, "rate %llu: frame %u left at %llu, wanted %llu",
		      (unsigned long long)rate, k, (unsigned long long)r.log[1][k].t, (unsigned long long)((k + 1) * s));
		CHECK(r.log[1][k].parse == UROCE_DROP_NONE && r.log[1][k].pkt.psn == k, "frame %u: parse %d psn %u", k,
		      r.log[1][k].parse, r.log[1][k].pkt.psn);
	}
	/* a later frame on an idle link starts at its arrival */
	loop_fabric_advance(r.fab, 1000000);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 99, payload);
	rig_send(&r, 0, &p);
	{
		uint64_t t0 = loop_fabric_now(r.fab);

		rig_run(&r);
		CHECK(r.nlog[1] == 11 && r.log[1][10].t == t0 + s, "idle link: left at %llu, wanted %llu",
		      (unsigned long long)r.log[1][10].t, (unsigned long long)(t0 + s));
	}
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- drop-tail at the bound ---- */

static void test_drop_tail(uint32_t extra)
{
	struct fsw_port_stats ps;
	struct fsw_stats st;
	struct roce_pkt p;
	struct rig r;
	uint32_t len;

	rig_cfg(&r, 2, 1);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	len = roce_frame_len(&p);
	r.cfg.port[1].rate_bps = 1000000000;
	r.cfg.port[1].queue_bytes = 10 * len + extra;
	rig_open(&r);
	for (uint32_t k = 0; k < 30; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	ps = rig_port_stats(&r, 1);
	fsw_stats(r.s, &st);
	/* the first is on the wire at once; ten fill the queue */
	CHECK(r.nlog[1] == 11, "queue 10 frames + %u: %u delivered, wanted 11", extra, r.nlog[1]);
	for (unsigned k = 0; k < r.nlog[1]; k++)
		CHECK(r.log[1][k].pkt.psn == k, "delivered #%u is PSN %u", k, r.log[1][k].pkt.psn);
	CHECK(ps.data.tail_drops == 19 && st.drops[FSW_DROP_QUEUE_FULL] == 19, "tail drops %llu / %llu, wanted 19",
	      (unsigned long long)ps.data.tail_drops, (unsigned long long)st.drops[FSW_DROP_QUEUE_FULL]);
	CHECK(ps.data.max_depth_bytes == 10 * len, "max depth %u, wanted %u", ps.data.max_depth_bytes, 10 * len);
	CHECK(ps.data.depth_bytes == 0 && ps.data.sent == 11 && ps.tx_frames == 11, "depth %u sent %llu tx %llu",
	      ps.data.depth_bytes, (unsigned long long)ps.data.sent, (unsigned long long)ps.tx_frames);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- ECN: CE from the threshold on, only on ECT ---- */

static void test_ecn_step(uint32_t kmin_extra)
{
	static const uint8_t ecn_of[4] = { 2, 0, 1, 3 }; /* ECT(0), Not-ECT, ECT(1), CE, in turn */
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;
	uint32_t len;
	uint64_t marked = 0;

	rig_cfg(&r, 2, 1);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	len = roce_frame_len(&p);
	r.cfg.port[1].rate_bps = 10000000;
	r.cfg.port[1].ecn_kmin = 5 * len + kmin_extra;
	rig_open(&r);
	for (uint32_t k = 0; k < 40; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		p.tos = (uint8_t)(0x28 | ecn_of[k % 4]); /* DSCP 10 */
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	REQUIRE(r.nlog[1] == 40, "%u of 40 arrived", r.nlog[1]);
	for (unsigned k = 0; k < 40; k++) {
		const struct rx_entry *e = &r.log[1][k];
		/* frame k (from 0) found max(0, k-1) frames queued: the
		 * first was on the wire before the second arrived */
		uint32_t depth = k ? (k - 1) * len : 0;
		bool ect = ecn_of[k % 4] == 1 || ecn_of[k % 4] == 2;
		bool want_ce = ecn_of[k % 4] == 3 || (ect && depth >= 5 * len + kmin_extra);

		CHECK(e->parse == UROCE_DROP_NONE, "frame %u: parse %d (checksum or ICRC broken by marking?)", k,
		      e->parse);
		CHECK(((rx_tos(e) & 3) == 3) == want_ce, "frame %u (ecn %u, depth %u): tos 0x%02x", k, ecn_of[k % 4],
		      depth, rx_tos(e));
		CHECK(rx_tos(e) >> 2 == 10, "frame %u: DSCP changed to %u", k, rx_tos(e) >> 2);
		if (want_ce && ect)
			marked++;
		CHECK(e->pkt.ttl == 63, "frame %u: ttl %u", k, e->pkt.ttl);
	}
	ps = rig_port_stats(&r, 1);
	CHECK(ps.data.ecn_marked == marked && marked > 0, "ecn_marked %llu, wanted %llu",
	      (unsigned long long)ps.data.ecn_marked, (unsigned long long)marked);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* IPv6: CE in the traffic class, DSCP and flow label untouched. */
static void test_ecn_ipv6(void)
{
	struct roce_pkt p;
	struct rig r;
	uint32_t len;

	rig_cfg(&r, 2, 1);
	rig_pkt6(&r, &p, 0, 1, 1000, 0, PAYLOAD);
	len = roce_frame_len(&p);
	r.cfg.port[1].rate_bps = 10000000;
	r.cfg.port[1].ecn_kmin = 2 * len;
	rig_open(&r);
	for (uint32_t k = 0; k < 8; k++) {
		rig_pkt6(&r, &p, 0, 1, 1000, k, PAYLOAD);
		p.tos = (uint8_t)(46 << 2 | (k & 1 ? 1 : 2));
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	REQUIRE(r.nlog[1] == 8, "%u of 8 arrived", r.nlog[1]);
	for (unsigned k = 0; k < 8; k++) {
		const struct rx_entry *e = &r.log[1][k];
		bool want_ce = k >= 3; /* frame k found k-1 frames queued */

		CHECK(e->parse == UROCE_DROP_NONE && e->pkt.ipv6 && e->pkt.ttl == 63, "IPv6 frame %u: parse %d ttl %u", k,
		      e->parse, e->pkt.ttl);
		CHECK(((e->pkt.tos & 3) == 3) == want_ce && e->pkt.tos >> 2 == 46 && e->pkt.flow_label == 0x12345,
		      "IPv6 frame %u: traffic class 0x%02x flow label 0x%x", k, e->pkt.tos, e->pkt.flow_label);
	}
	rig_check_accounting(&r);
	rig_close(&r);
}

/* RED-like: none below KMIN, all at or above KMAX, some between. */
static uint64_t test_ecn_red(uint64_t seed, uint64_t *pattern)
{
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;
	uint32_t len, kmin, kmax;
	unsigned below = 0, above = 0, mid = 0, mid_marked = 0;

	rig_cfg(&r, 2, seed);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	len = roce_frame_len(&p);
	kmin = 10 * len;
	kmax = 60 * len;
	r.cfg.port[1].rate_bps = 10000000;
	r.cfg.port[1].queue_bytes = 100 * len;
	r.cfg.port[1].ecn_kmin = kmin;
	r.cfg.port[1].ecn_kmax = kmax;
	r.cfg.port[1].ecn_pmax = 0.5;
	rig_open(&r);
	for (uint32_t k = 0; k < 80; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		p.tos = 2;
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	REQUIRE(r.nlog[1] == 80, "%u of 80 arrived", r.nlog[1]);
	*pattern = 0;
	for (unsigned k = 0; k < 80; k++) {
		uint32_t depth = k ? (k - 1) * len : 0;
		bool ce = (rx_tos(&r.log[1][k]) & 3) == 3;

		if (depth < kmin)
			below += ce;
		else if (depth >= kmax)
			above += !ce;
		else {
			mid++;
			mid_marked += ce;
			*pattern = *pattern << 1 | ce;
		}
	}
	CHECK(below == 0, "RED: %u marked below KMIN", below);
	CHECK(above == 0, "RED: %u not marked at or above KMAX", above);
	CHECK(mid_marked > 0 && mid_marked < mid, "RED: %u of %u marked between KMIN and KMAX", mid_marked, mid);
	ps = rig_port_stats(&r, 1);
	rig_check_accounting(&r);
	rig_close(&r);
	return ps.data.ecn_marked;
}

/* ---- trimming ---- */

static void check_trimmed(const struct rx_entry *e, bool ipv6, uint8_t dscp, uint8_t ecn, uint32_t payload)
{
	struct roce_pkt want;
	uint32_t hdr;

	CHECK(e->parse == UROCE_DROP_NONE, "trimmed PSN %u does not parse: %d", e->pkt.psn, e->parse);
	CHECK(e->pkt.payload_len == 0 && e->pkt.pad == 0, "trimmed PSN %u: payload %u pad %u", e->pkt.psn,
	      e->pkt.payload_len, e->pkt.pad);
	CHECK(e->pkt.tos >> 2 == dscp && (e->pkt.tos & 3) == ecn, "trimmed PSN %u: tos 0x%02x, wanted DSCP %u ECN %u",
	      e->pkt.psn, e->pkt.tos, dscp, ecn);
	memset(&want, 0, sizeof(want));
	want.ipv6 = ipv6;
	want.opcode = e->pkt.opcode;
	hdr = roce_hdr_len(&want);
	CHECK(e->len == hdr + ICRC_LEN, "trimmed PSN %u: %u bytes, wanted headers %u + ICRC", e->pkt.psn, e->len, hdr);
	CHECK(e->pkt.reth.rkey == 0x77 && e->pkt.reth.dma_len == payload && e->pkt.ttl == 63,
	      "trimmed PSN %u: RETH or TTL changed", e->pkt.psn);
}

/* payload: a length that is not a multiple of 4 has pad the cut removes */
static void test_trim(bool ipv6, uint32_t payload)
{
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;
	uint32_t len;
	unsigned k;

	rig_cfg(&r, 2, 1);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, payload);
	p.ipv6 = ipv6;
	len = roce_frame_len(&p);
	r.cfg.port[1].rate_bps = 1000000000;
	r.cfg.port[1].queue_bytes = 4 * len;
	r.cfg.port[1].trim = true;
	rig_open(&r);
	for (k = 0; k < 20; k++) {
		if (ipv6)
			rig_pkt6(&r, &p, 0, 1, 1000, k, payload);
		else
			rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, payload);
		p.tos = 0x0a; /* DSCP 2, ECT(0) */
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	ps = rig_port_stats(&r, 1);
	REQUIRE(r.nlog[1] == 20, "%u of 20 arrived", r.nlog[1]);
	/* PSN 0 was on the wire; PSN 1-4 queued; 5-19 trimmed, and they
	 * overtake the queued data at strict priority */
	CHECK(r.log[1][0].pkt.psn == 0 && r.log[1][0].len == len, "first out: PSN %u, %u bytes", r.log[1][0].pkt.psn,
	      r.log[1][0].len);
	for (k = 1; k <= 15; k++) {
		CHECK(r.log[1][k].pkt.psn == k + 4, "#%u out: PSN %u, wanted trimmed %u", k, r.log[1][k].pkt.psn, k + 4);
		check_trimmed(&r.log[1][k], ipv6, FSW_TRIM_DSCP_DEFAULT, 2, payload);
	}
	for (k = 16; k < 20; k++)
		CHECK(r.log[1][k].pkt.psn == k - 15 && r.log[1][k].len == len && r.log[1][k].pkt.tos == 0x0a,
		      "#%u out: PSN %u, %u bytes, tos 0x%02x: wanted whole PSN %u", k, r.log[1][k].pkt.psn,
		      r.log[1][k].len, r.log[1][k].pkt.tos, k - 15);
	CHECK(ps.data.trimmed == 15 && ps.prio.enqueued == 15 && ps.data.tail_drops == 0 && ps.data.trim_drops == 0,
	      "trimmed %llu prio %llu tail %llu trim_drops %llu", (unsigned long long)ps.data.trimmed,
	      (unsigned long long)ps.prio.enqueued, (unsigned long long)ps.data.tail_drops,
	      (unsigned long long)ps.data.trim_drops);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* A full priority queue drops trimmed frames; a non-RoCEv2 or
 * payload-less frame is never trimmed; the DSCP is the configured one. */
static void test_trim_limits(void)
{
	struct fsw_port_stats ps;
	struct fsw_stats st;
	struct roce_pkt p;
	struct rig r;
	uint32_t len, tlen;
	unsigned trimmed = 0, whole = 0;

	rig_cfg(&r, 2, 1);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	len = roce_frame_len(&p);
	p.payload_len = 0;
	tlen = roce_frame_len(&p);
	r.cfg.port[1].rate_bps = 1000000000;
	r.cfg.port[1].queue_bytes = 2 * len;
	r.cfg.port[1].prio_bytes = 3 * tlen;
	r.cfg.port[1].trim = true;
	r.cfg.port[1].trim_dscp = 46;
	rig_open(&r);
	for (uint32_t k = 0; k < 10; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		rig_send(&r, 0, &p);
	}
	/* queue full: UDP to another port and an ACK cannot be trimmed */
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 100, PAYLOAD);
	p.dport = 4792;
	rig_send(&r, 0, &p);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 101, 0);
	p.opcode = ROCE_TR_RC | ROCE_OP_ACK;
	p.aeth.syndrome = AETH_ACK_UNLIMITED;
	rig_send(&r, 0, &p);
	rig_run(&r);
	ps = rig_port_stats(&r, 1);
	fsw_stats(r.s, &st);
	for (unsigned k = 0; k < r.nlog[1]; k++) {
		if (r.log[1][k].len == tlen) {
			check_trimmed(&r.log[1][k], false, 46, 0, PAYLOAD);
			trimmed++;
		} else {
			whole++;
		}
	}
	/* 1 on the wire + 2 queued whole; 7 trimmed, 3 fit the priority queue */
	CHECK(whole == 3 && trimmed == 3, "whole %u trimmed %u, wanted 3 and 3", whole, trimmed);
	CHECK(ps.data.trimmed == 7 && ps.data.trim_drops == 4 && ps.prio.tail_drops == 4 && ps.data.tail_drops == 2,
	      "trimmed %llu trim_drops %llu prio tail %llu data tail %llu", (unsigned long long)ps.data.trimmed,
	      (unsigned long long)ps.data.trim_drops, (unsigned long long)ps.prio.tail_drops,
	      (unsigned long long)ps.data.tail_drops);
	CHECK(st.drops[FSW_DROP_PRIO_FULL] == 4 && st.drops[FSW_DROP_QUEUE_FULL] == 2, "prio_full %llu queue_full %llu",
	      (unsigned long long)st.drops[FSW_DROP_PRIO_FULL], (unsigned long long)st.drops[FSW_DROP_QUEUE_FULL]);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- CNPs at strict priority ---- */

static void test_cnp_priority(void)
{
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;

	rig_cfg(&r, 2, 1);
	r.cfg.port[1].rate_bps = 1000000000;
	rig_open(&r);
	for (uint32_t k = 0; k < 5; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		rig_send(&r, 0, &p);
	}
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 50, 0);
	p.opcode = ROCE_OP_CNP;
	p.becn = true;
	rig_send(&r, 0, &p);
	rig_run(&r);
	ps = rig_port_stats(&r, 1);
	REQUIRE(r.nlog[1] == 6, "%u of 6 arrived", r.nlog[1]);
	CHECK(r.log[1][0].pkt.psn == 0 && r.log[1][1].pkt.opcode == ROCE_OP_CNP && r.log[1][1].parse == UROCE_DROP_NONE,
	      "second out: opcode 0x%02x PSN %u, wanted the CNP behind the frame on the wire", r.log[1][1].pkt.opcode,
	      r.log[1][1].pkt.psn);
	CHECK(ps.prio.enqueued == 1 && ps.data.enqueued == 5, "prio %llu data %llu",
	      (unsigned long long)ps.prio.enqueued, (unsigned long long)ps.data.enqueued);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- the delay line ---- */

static void test_delay(void)
{
	const uint64_t delay = 10000, rate = 1000000000;
	struct roce_pkt p;
	struct rig r;
	uint32_t len = 0;

	rig_cfg(&r, 2, 1);
	r.cfg.port[1].delay_ns = delay;
	r.cfg.port[0].delay_ns = 3 * delay;
	r.cfg.port[0].rate_bps = rate;
	rig_open(&r);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	rig_send(&r, 0, &p);
	for (uint32_t k = 0; k < 5; k++) {
		rig_pkt(&r, &p, 1, rig_host_ip(0), 1000, k, PAYLOAD);
		len = rig_send(&r, 1, &p);
	}
	rig_run(&r);
	REQUIRE(r.nlog[1] == 1 && r.nlog[0] == 5, "arrived %u and %u", r.nlog[1], r.nlog[0]);
	CHECK(r.log[1][0].t == delay, "unlimited rate: arrived at %llu, wanted %llu",
	      (unsigned long long)r.log[1][0].t, (unsigned long long)delay);
	for (unsigned k = 0; k < 5; k++)
		CHECK(r.log[0][k].t == (k + 1) * ser(len, rate) + 3 * delay, "rate + delay: #%u at %llu, wanted %llu", k,
		      (unsigned long long)r.log[0][k].t, (unsigned long long)((k + 1) * ser(len, rate) + 3 * delay));
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- ECMP ---- */

#define ECMP_SPORTS 256u

/* Which member each source port took, for one seed. */
static void ecmp_map(uint64_t seed, uint8_t member[ECMP_SPORTS], unsigned count[4])
{
	struct roce_pkt p;
	struct rig r;

	rig_cfg(&r, 4, seed);
	/* 10.9.0.0/16 over ports 1, 2 and 3 */
	rig_route(&r, "10.9.0.0/16=1+2+3");
	rig_open(&r);
	memset(count, 0, 4 * sizeof(count[0]));
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 1; i < 4; i++)
			r.nlog[i] = 0;
		for (uint32_t sp = 0; sp < ECMP_SPORTS; sp++) {
			rig_pkt(&r, &p, 0, htonl(0x0a090001u), (uint16_t)(0xc000 + sp), round * ECMP_SPORTS + sp, 64);
			rig_send(&r, 0, &p);
			rig_run(&r);
			for (unsigned i = 1; i < 4; i++) {
				if (!r.nlog[i])
					continue;
				if (round == 0) {
					member[sp] = (uint8_t)i;
					count[i]++;
				} else {
					CHECK(member[sp] == i, "seed %llu: source port %u took port %u, before %u",
					      (unsigned long long)seed, sp, i, member[sp]);
				}
				r.nlog[i] = 0;
			}
		}
	}
	rig_check_accounting(&r);
	rig_close(&r);
}

static void test_ecmp(void)
{
	uint8_t m1[ECMP_SPORTS], m2[ECMP_SPORTS];
	unsigned c1[4], c2[4], differ = 0;

	ecmp_map(1, m1, c1);
	ecmp_map(2, m2, c2);
	for (unsigned i = 1; i < 4; i++) {
		/* 256 ports over 3 members: about 85 each */
		CHECK(c1[i] > 50 && c1[i] < 120, "seed 1: port %u took %u of %u source ports", i, c1[i], ECMP_SPORTS);
		CHECK(c2[i] > 50 && c2[i] < 120, "seed 2: port %u took %u of %u source ports", i, c2[i], ECMP_SPORTS);
	}
	for (unsigned sp = 0; sp < ECMP_SPORTS; sp++)
		differ += m1[sp] != m2[sp];
	CHECK(differ > ECMP_SPORTS / 4, "seeds 1 and 2 map only %u of %u source ports differently", differ, ECMP_SPORTS);
}

/* ---- TTL, drops by reason, longest prefix ---- */

static void test_ttl_and_drops(void)
{
	uint8_t buf[256];
	struct fsw_stats st;
	struct roce_pkt p;
	struct rig r;
	int len;

	rig_cfg(&r, 3, 1);
	rig_route(&r, "10.2.7.0/24=2"); /* inside port 1's 10.2.0.0/16: longer wins */
	rig_route(&r, "10.2.7.9=0");    /* a host route, longer still */
	rig_open(&r);

	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 1, 64);
	p.ttl = 1;
	rig_send(&r, 0, &p);
	p.psn = 2;
	p.ttl = 2;
	rig_send(&r, 0, &p);
	rig_pkt6(&r, &p, 0, 1, 1000, 3, 64);
	p.ttl = 1;
	rig_send(&r, 0, &p);
	p.psn = 4;
	p.ttl = 2;
	rig_send(&r, 0, &p);
	rig_pkt(&r, &p, 0, htonl(0xc0a80001u), 1000, 5, 64); /* 192.168.0.1: no route */
	rig_send(&r, 0, &p);
	rig_pkt(&r, &p, 0, htonl(0x0a020705u), 1000, 6, 64); /* 10.2.7.5: port 2 */
	rig_send(&r, 0, &p);
	rig_pkt(&r, &p, 1, htonl(0x0a020709u), 1000, 7, 64); /* 10.2.7.9: port 0 */
	rig_send(&r, 1, &p);

	/* not IP (ARP), not UDP (TCP), a bad IPv4 checksum, a fragment, a
	 * truncated frame */
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 8, 64);
	len = roce_build(buf, sizeof(buf), &p);
	REQUIRE(len > 0, "build");
	buf[12] = 0x08;
	buf[13] = 0x06;
	rig_send_raw(&r, 0, buf, (uint32_t)len);
	len = roce_build(buf, sizeof(buf), &p);
	buf[ETH_HDR_LEN + 9] = 6;
	buf[ETH_HDR_LEN + 10] = buf[ETH_HDR_LEN + 11] = 0;
	roce_put_be16(buf + ETH_HDR_LEN + 10, ipv4_csum(buf + ETH_HDR_LEN, IPV4_HDR_LEN));
	rig_send_raw(&r, 0, buf, (uint32_t)len);
	len = roce_build(buf, sizeof(buf), &p);
	buf[ETH_HDR_LEN + 10] ^= 1;
	rig_send_raw(&r, 0, buf, (uint32_t)len);
	len = roce_build(buf, sizeof(buf), &p);
	roce_put_be16(buf + ETH_HDR_LEN + 6, 0x2000); /* MF */
	buf[ETH_HDR_LEN + 10] = buf[ETH_HDR_LEN + 11] = 0;
	roce_put_be16(buf + ETH_HDR_LEN + 10, ipv4_csum(buf + ETH_HDR_LEN, IPV4_HDR_LEN));
	rig_send_raw(&r, 0, buf, (uint32_t)len);
	len = roce_build(buf, sizeof(buf), &p);
	rig_send_raw(&r, 0, buf, ETH_HDR_LEN + 10);
	rig_run(&r);

	fsw_stats(r.s, &st);
	CHECK(r.nlog[1] == 2, "port 1 got %u frames, wanted the two with TTL 2", r.nlog[1]);
	for (unsigned k = 0; k < r.nlog[1]; k++)
		CHECK(r.log[1][k].parse == UROCE_DROP_NONE && r.log[1][k].pkt.ttl == 1 &&
		      r.log[1][k].pkt.psn == (k ? 4u : 2u), "port 1 #%u: parse %d ttl %u psn %u", k, r.log[1][k].parse,
		      r.log[1][k].pkt.ttl, r.log[1][k].pkt.psn);
	CHECK(r.nlog[2] == 1 && r.log[2][0].pkt.psn == 6, "10.2.7.5: port 2 got %u", r.nlog[2]);
	CHECK(r.nlog[0] == 1 && r.log[0][0].pkt.psn == 7, "10.2.7.9: port 0 got %u", r.nlog[0]);
	/* MACs rewritten: the switch port's own as source, the peer's as destination */
	if (r.nlog[2]) {
		CHECK(!memcmp(r.log[2][0].head, r.host[2]->mac, 6) && !memcmp(r.log[2][0].head + 6, r.sw[2]->mac, 6),
		      "port 2: MACs not rewritten");
	}
	CHECK(st.drops[FSW_DROP_TTL] == 2, "ttl drops %llu", (unsigned long long)st.drops[FSW_DROP_TTL]);
	CHECK(st.drops[FSW_DROP_NO_ROUTE] == 1, "no_route %llu", (unsigned long long)st.drops[FSW_DROP_NO_ROUTE]);
	CHECK(st.drops[FSW_DROP_NOT_IP] == 1, "not_ip %llu", (unsigned long long)st.drops[FSW_DROP_NOT_IP]);
	CHECK(st.drops[FSW_DROP_NOT_UDP] == 1, "not_udp %llu", (unsigned long long)st.drops[FSW_DROP_NOT_UDP]);
	CHECK(st.drops[FSW_DROP_PARSE] == 3, "parse %llu", (unsigned long long)st.drops[FSW_DROP_PARSE]);
	CHECK(st.drops_total == 8, "drops_total %llu", (unsigned long long)st.drops_total);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- a queue far deeper than the loop pool ---- */

static void test_deep_queue(void)
{
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;
	uint32_t sent = 0;

	rig_cfg(&r, 2, 1);
	r.cfg.port[1].rate_bps = 1000000;
	r.cfg.port[1].queue_bytes = 4u << 20;
	rig_open_opts(&r, 128, NULL);
	/* 2000 frames arrive within 2 ms; the link drains one per 8 ms */
	while (sent < 2000) {
		for (unsigned k = 0; k < 64 && sent < 2000; k++, sent++) {
			rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, sent, PAYLOAD);
			rig_send(&r, 0, &p);
		}
		rig_run_until(&r, loop_fabric_now(r.fab) + 1000);
		loop_fabric_advance(r.fab, 1000);
	}
	ps = rig_port_stats(&r, 1);
	CHECK(ps.data.depth_frames > 1900, "%u frames queued, wanted nearly 2000 (pool of 128)", ps.data.depth_frames);
	CHECK(ps.data.tail_drops == 0, "tail drops %llu", (unsigned long long)ps.data.tail_drops);
	rig_close(&r);
}

/* ---- a port that refuses frames: they wait in the delay line ---- */

static void test_tx_refused(void)
{
	struct loop_impairment slow = { .rate_bps = 100000000, .queue_bytes = 4 * 1100, .backpressure = true };
	struct loop_link_stats ls;
	struct fsw_port_stats ps;
	struct roce_pkt p;
	struct rig r;

	rig_cfg(&r, 2, 1);
	rig_open_opts(&r, 0, &slow);
	for (uint32_t k = 0; k < 100; k++) {
		rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, k, PAYLOAD);
		rig_send(&r, 0, &p);
	}
	rig_run(&r);
	ps = rig_port_stats(&r, 1);
	loop_fabric_link_stats(r.fab, 1, &ls);
	CHECK(ls.refused > 0, "the loop link never refused a frame");
	CHECK(r.nlog[1] == 100 && ps.tx_full == 0, "%u of 100 arrived, tx_full %llu", r.nlog[1],
	      (unsigned long long)ps.tx_full);
	for (unsigned k = 0; k < r.nlog[1]; k++)
		CHECK(r.log[1][k].pkt.psn == k, "#%u is PSN %u", k, r.log[1][k].pkt.psn);
	rig_check_accounting(&r);
	rig_close(&r);
}

/* ---- determinism ---- */

struct replay {
	uint64_t hash;
	struct fsw_stats st;
	struct fsw_port_stats ps[4];
};

/* Three senders into an ECMP group and a congested, trimming, RED-marking
 * port, random sizes and source ports from the seed. */
static void replay_run(uint64_t seed, struct replay *out)
{
	struct test_rng rng = { seed * 1000003u };
	struct roce_pkt p;
	struct rig r;

	rig_cfg(&r, 4, seed);
	rig_route(&r, "10.9.0.0/16=2+3");
	for (unsigned i = 1; i < 4; i++) {
		r.cfg.port[i].rate_bps = 1000000000;
		r.cfg.port[i].queue_bytes = 16 * 1024;
		r.cfg.port[i].ecn_kmin = 2 * 1024;
		r.cfg.port[i].ecn_kmax = 12 * 1024;
		r.cfg.port[i].ecn_pmax = 0.2;
		r.cfg.port[i].trim = true;
		r.cfg.port[i].delay_ns = 2000;
	}
	rig_open(&r);
	for (uint32_t k = 0; k < 3000; k++) {
		unsigned from = (unsigned)test_rng_below(&rng, 4);
		uint32_t dst = test_rng_below(&rng, 2) ? htonl(0x0a090001u) : rig_host_ip(1);

		if (from == 1)
			from = 0;
		rig_pkt(&r, &p, from, dst, (uint16_t)(0xc000 + test_rng_below(&rng, 4096)), k,
			(uint32_t)(64 + test_rng_below(&rng, 1400)));
		p.tos = (uint8_t)test_rng_below(&rng, 4);
		rig_send(&r, from, &p);
		if (test_rng_below(&rng, 8) == 0)
			rig_run_until(&r, loop_fabric_now(r.fab) + test_rng_below(&rng, 20000));
	}
	rig_run(&r);
	memset(out, 0, sizeof(*out));
	out->hash = r.hash;
	fsw_stats(r.s, &out->st);
	for (unsigned i = 0; i < 4; i++)
		out->ps[i] = rig_port_stats(&r, i);
	rig_check_accounting(&r);
	rig_close(&r);
}

static void test_determinism(void)
{
	struct replay a, b, c;

	replay_run(7, &a);
	replay_run(7, &b);
	replay_run(8, &c);
	CHECK(a.hash == b.hash, "seed 7 twice: delivered frames differ");
	CHECK(!memcmp(&a.st, &b.st, sizeof(a.st)) && !memcmp(a.ps, b.ps, sizeof(a.ps)), "seed 7 twice: counters differ");
	CHECK(a.hash != c.hash, "seeds 7 and 8 delivered the same frames");
	CHECK(a.ps[1].data.ecn_marked > 0 && a.ps[1].data.trimmed > 0 && a.ps[2].data.enqueued > 0 &&
	      a.ps[3].data.enqueued > 0, "the replay did not exercise marking (%llu), trimming (%llu) and ECMP (%llu, %llu)",
	      (unsigned long long)a.ps[1].data.ecn_marked, (unsigned long long)a.ps[1].data.trimmed,
	      (unsigned long long)a.ps[2].data.enqueued, (unsigned long long)a.ps[3].data.enqueued);
}

/* ---- the JSON dump ---- */

static void test_json(void)
{
	struct roce_pkt p;
	struct rig r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	rig_cfg(&r, 2, 1);
	rig_open(&r);
	rig_pkt(&r, &p, 0, rig_host_ip(1), 1000, 0, PAYLOAD);
	rig_send(&r, 0, &p);
	rig_run(&r);
	f = open_memstream(&buf, &len);
	REQUIRE(f, "open_memstream");
	CHECK(fsw_stats_json(r.s, f) == 0, "fsw_stats_json failed");
	fclose(f);
	CHECK(strstr(buf, "\"rx_frames\":1,") && strstr(buf, "\"name\":\"p1\"") && strstr(buf, "\"no_route\":0") &&
	      strstr(buf, "\"data\":{\"enqueued\":1,") && buf[len - 1] == '\n', "JSON: %s", buf);
	free(buf);
	rig_close(&r);
}

int main(void)
{
	uint64_t pat1, pat2, pat3, m1, m2, m3;

	test_rate(1000000000, PAYLOAD);
	test_rate(100000000, 333);
	test_rate(25000000000ull, 4000);
	test_drop_tail(0);
	test_drop_tail(100);
	test_ecn_step(0);
	test_ecn_step(1);
	test_ecn_ipv6();
	m1 = test_ecn_red(1, &pat1);
	m2 = test_ecn_red(1, &pat2);
	m3 = test_ecn_red(2, &pat3);
	CHECK(m1 == m2 && pat1 == pat2, "RED with one seed twice: %llu and %llu marks", (unsigned long long)m1,
	      (unsigned long long)m2);
	CHECK(pat1 != pat3, "RED: seeds 1 and 2 marked the same packets (%llu marks)", (unsigned long long)m3);
	test_trim(false, PAYLOAD);
	test_trim(true, PAYLOAD);
	test_trim(false, 1001);
	test_trim(true, 1003);
	test_trim_limits();
	test_cnp_priority();
	test_delay();
	test_ecmp();
	test_ttl_and_drops();
	test_deep_queue();
	test_tx_refused();
	test_determinism();
	test_json();
	return test_done("fsw");
}
