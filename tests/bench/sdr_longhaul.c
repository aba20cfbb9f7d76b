/* SPDX-License-Identifier: MIT */
/* SDR-RDMA's long-haul experiment (paper section 5.2, Figure 10) on the loop
 * fabric: message completion time of uroce's sr and ec reliability modes
 * over an emulated long-haul link, for tests/bench/sdr_longhaul.py to hold
 * against the analytical model of section 4.2 (tests/bench/sdr_model.py).
 *
 * Two contexts on one loop fabric, one link between them. Each direction
 * has a fixed delay of RTT/2 and a rate limit (--gbps); the data direction
 * (sender -> receiver) loses each frame with probability p, the control
 * direction (SACKs, NACKs) loses nothing unless --ctrl-loss (the model's
 * assumption: only chunks are dropped). The rate limiter's queue is deep
 * enough never to drop (--queue-kib, default 64 MiB, more than the
 * sender's window can put in it).
 *
 * Variants (one sr/ec QP pair each, reused for every sample of a row):
 *   sr_rto   sr, loss = UROCE_LOSS_RTO (RTO only), rto_rtts 3     SDR's "SR RTO"
 *   sr_nack  sr, loss = UROCE_LOSS_RACK (RACK, tail probe, RTO),
 *            rto_rtts 3 as the backstop                         SDR's "SR NACK"
 *   ec_xor   ec XOR(32,8), loss = RTO, rto_rtts 3, ec_fto_us = beta x RTT
 *   ec_rs    ec RS(32,8),  the same
 * All with rto_min_us 1 (the 200 us default floor would raise a 3-RTT RTO
 * at 10 us RTT; it does not bind at >= 100 us), window_pkts 1024 (the most:
 * the SACK bitmap's size), MTU 4096 and one bitmap chunk per MTU.
 *
 * uroce dates a packet when it hands it to the port, so whatever the window
 * lets into the rate limiter's queue counts in srtt, and the RTO (3 x srtt)
 * grows with it. --window-bdp MARGIN sets the byte window of each row to
 * its bandwidth-delay product in full frames plus MARGIN frames (x 4 KiB),
 * as a deployment sizes it: the queue then holds about MARGIN frames and
 * srtt stays near the path RTT, while window_pkts (the PSN range) stays
 * 1024 so a hole waiting for its RTO does not stop the sender. Messages
 * smaller than that window still go to the queue whole.
 *
 * One sample: one RDMA WRITE with immediate of the message size is posted at
 * simulated time t0 (loop_fabric_now); its completion time is the time of
 * the sender's CQE minus t0. A WRITE with immediate because a plain WRITE on
 * an ec QP carries no parity (it is placed by its RETH, with no message
 * slot), and the paper's experiment is a Write. Samples run one after the
 * other on the same QPs. Each chunk of the target is checked to hold this
 * sample's data when the sender completes, and the receiver's completion
 * must have come, whole.
 *
 * Time is the fabric's simulated clock only. The driver loop settles both
 * engines at the current time (progress until neither has work), then moves
 * the clock straight to the next thing that can happen: the next frame
 * arrival (loop_fabric_next_event), the earlier of the two QPs' timers
 * (read from the QP's retry timer, the only timer an sr/ec QP arms; its
 * wheel fires it at the first tick at or after the deadline), or one frame
 * time when the link refused a frame (with --backpressure). Results do not
 * depend on the speed of this machine.
 *
 *   sdr_longhaul [--sizes LIST] [--drops LIST] [--rtts-us LIST] [--gbps G]
 *                [--samples N|LIST] [--variants LIST] [--beta B] [--seed S]
 *                [--queue-kib Q] [--backpressure] [--window-pkts N]
 *                [--window-kib W] [--window-bdp MARGIN] [--ctrl-loss] [--csv] [--trace]
 *                [--quick] [-h]
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "loop_pair.h"
/* the QP's retry timer: the next deadline the engine would act on */
#include "transport/core/qp_internal.h"

#define MTU_BYTES 4096u
#define MAX_MSG_BYTES ((uint64_t)(1u << 17) * MTU_BYTES) /* sr/ec: 2^17 packets a message */
#define MAX_LIST 32
#define TICK_NS ENGINE_TICK_NS_DEFAULT /* the contexts' engines use the default tick */

enum variant { V_SR_RTO, V_SR_NACK, V_EC_XOR, V_EC_RS, V__COUNT };
static const char *const variant_name[V__COUNT] = { "sr_rto", "sr_nack", "ec_xor", "ec_rs" };

struct opts {
	uint64_t sizes[MAX_LIST];
	unsigned nsizes;
	double drops[MAX_LIST];
	unsigned ndrops;
	double rtts_us[MAX_LIST];
	unsigned nrtts;
	uint32_t samples[MAX_LIST]; /* per size; 0 = automatic */
	unsigned nsamples;
	bool variants[V__COUNT];
	double gbps;
	double beta;
	uint64_t seed;
	uint32_t queue_kib;
	bool backpressure;
	uint32_t window_pkts;
	uint32_t window_kib;
	int32_t window_bdp; /* >= 0: window_bytes = (BDP in frames + this) x 4 KiB per row */
	bool ctrl_loss;
	bool csv;
	bool trace;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: sdr_longhaul [options]\n"
	        "Completion time of one RDMA WRITE with immediate over an emulated long-haul link\n"
	        "(loop fabric, simulated time), SDR-RDMA section 5.2 / Figure 10.\n"
	        "  --sizes LIST      message sizes: bytes, or with K/KiB, M/MiB, G/GiB (binary);\n"
	        "                    1 byte to 512 MiB (2^17 packets of 4096 B). Default 128K,1M,8M,64M\n"
	        "  --drops LIST      drop probability of a data frame, each in [0, 0.5].\n"
	        "                    Default 1e-5,1e-4,1e-3,1e-2\n"
	        "  --rtts-us LIST    round-trip propagation times in us (each direction gets half),\n"
	        "                    each in [1, 1000000]. Default 100,1000\n"
	        "  --gbps G          link rate each way in Gbit/s, (0, 1000]. Default 10\n"
	        "  --samples N|LIST  samples per row: one number for every size, or one per size;\n"
	        "                    0 = automatic (2000 at <= 32 packets, fewer for bigger\n"
	        "                    messages, down to 10). Default 0\n"
	        "  --variants LIST   of sr_rto, sr_nack, ec_xor, ec_rs (default all four)\n"
	        "  --beta B          ec fallback timeout ec_fto_us = B x RTT, [0, 100]. Default 1\n"
	        "  --seed S          fabric seed (loss pattern). Default 1\n"
	        "  --queue-kib Q     rate limiter queue per direction in KiB, [8, 4194303].\n"
	        "                    Default 65536 (64 MiB: never full)\n"
	        "  --backpressure    a full queue refuses frames back to the sender (a NIC's\n"
	        "                    TX ring) instead of dropping them\n"
	        "  --window-pkts N   sr/ec packets in flight, 16..1024. Default 1024\n"
	        "  --window-kib W    sr/ec bytes in flight in KiB, 0 = window-pkts x 4 KiB. Default 0\n"
	        "  --window-bdp MARGIN  sr/ec bytes in flight per row = (the row's bandwidth-delay\n"
	        "                    product in full data frames, rounded up, + MARGIN) x 4 KiB, 0..1024;\n"
	        "                    overrides --window-kib (window-pkts stays the PSN range)\n"
	        "  --ctrl-loss       lose control frames (SACK, NACK) with the same p\n"
	        "  --csv             print CSV rows instead of the table\n"
	        "  --trace           drop data frames in a filter of the bench (same p, its own\n"
	        "                    generator) and print every sample that lost one or left\n"
	        "                    the link idle to stderr: time, each lost frame as\n"
	        "                    kind:index (d data, l last, D descriptor, P parity) with\n"
	        "                    its send time from the post, and idle:D@T where the data\n"
	        "                    link ran empty for D us (50 frame times or more) from T us\n"
	        "                    (the sender was held)\n"
	        "  --quick           sizes 128K,1M, drops 1e-4,1e-2, RTT 100 us, 200 samples\n"
	        "  -h, --help        this text\n");
}

/* --- argument parsing ----------------------------------------------------- */

static char *next_item(char **s)
{
	char *b = *s, *c;

	if (!b || !*b)
		return NULL;
	c = strchr(b, ',');
	if (c) {
		*c = 0;
		*s = c + 1;
	} else {
		*s = b + strlen(b);
	}
	return b;
}

static uint64_t parse_size(const char *t)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno || end == t || t[0] == '-')
		bench_die("--sizes: '%s' is not a size; accepted: bytes, or a number with K, KiB, M, MiB, G, GiB", t);
	if (!strcmp(end, "K") || !strcmp(end, "KiB") || !strcmp(end, "k"))
		mul = 1024;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		mul = 1024 * 1024;
	else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
		mul = 1024ull * 1024 * 1024;
	else if (*end)
		bench_die("--sizes: '%s' has an unknown unit '%s'; accepted: none (bytes), K, KiB, M, MiB, G, GiB", t, end);
	if (v == 0 || v > MAX_MSG_BYTES / mul || v * mul > MAX_MSG_BYTES)
		bench_die("--sizes: '%s' is out of range; accepted: 1 byte to 512 MiB (sr/ec carry 2^17 packets of %u B)", t,
		    MTU_BYTES);
	return v * mul;
}

static double parse_double(const char *opt, const char *t, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(t, &end);
	if (errno || end == t || *end || isnan(v))
		bench_die("%s: '%s' is not a number; accepted: a number in [%g, %g]", opt, t, lo, hi);
	if (v < lo || v > hi)
		bench_die("%s: %s is out of range; accepted: [%g, %g]", opt, t, lo, hi);
	return v;
}

static uint64_t parse_u64(const char *opt, const char *t, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno || end == t || *end || t[0] == '-')
		bench_die("%s: '%s' is not an integer; accepted: %" PRIu64 " to %" PRIu64, opt, t, lo, hi);
	if (v < lo || v > hi)
		bench_die("%s: %s is out of range; accepted: %" PRIu64 " to %" PRIu64, opt, t, lo, hi);
	return v;
}

static unsigned parse_list(const char *opt, char *arg, unsigned max)
{
	unsigned n = 0;

	for (const char *p = arg; *p; p++)
		n += *p == ',';
	if (!*arg)
		bench_die("%s: empty list", opt);
	if (n + 1 > max)
		bench_die("%s: %u items; accepted: at most %u", opt, n + 1, max);
	return n + 1;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	bool quick = false, set_sizes = false, set_drops = false, set_rtts = false, set_samples = false;

	memset(o, 0, sizeof(*o));
	o->gbps = 10;
	o->beta = 1;
	o->seed = 1;
	o->queue_kib = 65536;
	o->window_pkts = 1024;
	o->window_bdp = -1;
	for (int v = 0; v < V__COUNT; v++)
		o->variants[v] = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *val = NULL, *s, *item;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(a, "--csv")) {
			o->csv = true;
			continue;
		}
		if (!strcmp(a, "--quick")) {
			quick = true;
			continue;
		}
		if (!strcmp(a, "--backpressure")) {
			o->backpressure = true;
			continue;
		}
		if (!strcmp(a, "--trace")) {
			o->trace = true;
			continue;
		}
		if (!strcmp(a, "--ctrl-loss")) {
			o->ctrl_loss = true;
			continue;
		}
		if (strncmp(a, "--", 2) || !strcmp(a, "--")) {
			usage(stderr);
			bench_die("unexpected argument '%s'", a);
		}
		s = strchr(a, '=');
		if (s) {
			val = s + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		}
		{
			size_t nl = s ? (size_t)(s - a) : strlen(a);
			char name[32];

			if (nl >= sizeof(name))
				nl = sizeof(name) - 1;
			memcpy(name, a, nl);
			name[nl] = 0;
			{
				static const char *const known[] = { "--sizes", "--drops", "--rtts-us", "--samples",
				                                     "--variants", "--gbps", "--beta", "--seed",
				                                     "--queue-kib", "--window-pkts", "--window-kib",
				                                     "--window-bdp" };
				bool ok = false;

				for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
					ok |= !strcmp(name, known[k]);
				if (!ok) {
					usage(stderr);
					bench_die("unknown option '%s'", name);
				}
			}
			if (!val)
				bench_die("%s needs a value (see -h)", name);
			s = val;
			if (!strcmp(name, "--sizes")) {
				o->nsizes = parse_list(name, val, MAX_LIST);
				for (unsigned k = 0; (item = next_item(&s)); k++)
					o->sizes[k] = parse_size(item);
				set_sizes = true;
			} else if (!strcmp(name, "--drops")) {
				o->ndrops = parse_list(name, val, MAX_LIST);
				for (unsigned k = 0; (item = next_item(&s)); k++)
					o->drops[k] = parse_double(name, item, 0, 0.5);
				set_drops = true;
			} else if (!strcmp(name, "--rtts-us")) {
				o->nrtts = parse_list(name, val, MAX_LIST);
				for (unsigned k = 0; (item = next_item(&s)); k++)
					o->rtts_us[k] = parse_double(name, item, 1, 1e6);
				set_rtts = true;
			} else if (!strcmp(name, "--samples")) {
				o->nsamples = parse_list(name, val, MAX_LIST);
				for (unsigned k = 0; (item = next_item(&s)); k++)
					o->samples[k] = (uint32_t)parse_u64(name, item, 0, 10000000);
				set_samples = true;
			} else if (!strcmp(name, "--variants")) {
				parse_list(name, val, MAX_LIST);
				memset(o->variants, 0, sizeof(o->variants));
				while ((item = next_item(&s))) {
					int v;

					for (v = 0; v < V__COUNT && strcmp(item, variant_name[v]); v++)
						;
					if (v == V__COUNT)
						bench_die("--variants: '%s' is not a variant; accepted: sr_rto, sr_nack, ec_xor, ec_rs", item);
					o->variants[v] = true;
				}
			} else if (!strcmp(name, "--gbps")) {
				o->gbps = parse_double(name, val, 1e-3, 1000);
			} else if (!strcmp(name, "--beta")) {
				o->beta = parse_double(name, val, 0, 100);
			} else if (!strcmp(name, "--seed")) {
				o->seed = parse_u64(name, val, 0, UINT64_MAX);
			} else if (!strcmp(name, "--queue-kib")) {
				o->queue_kib = (uint32_t)parse_u64(name, val, 8, UINT32_MAX / 1024);
			} else if (!strcmp(name, "--window-pkts")) {
				o->window_pkts = (uint32_t)parse_u64(name, val, 16, 1024);
			} else if (!strcmp(name, "--window-kib")) {
				o->window_kib = (uint32_t)parse_u64(name, val, 0, 4096);
			} else if (!strcmp(name, "--window-bdp")) {
				o->window_bdp = (int32_t)parse_u64(name, val, 0, 1024);
			} else {
				usage(stderr);
				bench_die("unknown option '%s'", name);
			}
		}
	}
	if (quick) {
		if (!set_sizes) {
			o->sizes[0] = 128 * 1024;
			o->sizes[1] = 1024 * 1024;
			o->nsizes = 2;
		}
		if (!set_drops) {
			o->drops[0] = 1e-4;
			o->drops[1] = 1e-2;
			o->ndrops = 2;
		}
		if (!set_rtts) {
			o->rtts_us[0] = 100;
			o->nrtts = 1;
		}
		if (!set_samples) {
			o->samples[0] = 200;
			o->nsamples = 1;
		}
	}
	if (!o->nsizes) {
		static const uint64_t def[] = { 128u << 10, 1u << 20, 8u << 20, 64u << 20 };

		memcpy(o->sizes, def, sizeof(def));
		o->nsizes = 4;
	}
	if (!o->ndrops) {
		static const double def[] = { 1e-5, 1e-4, 1e-3, 1e-2 };

		memcpy(o->drops, def, sizeof(def));
		o->ndrops = 4;
	}
	if (!o->nrtts) {
		o->rtts_us[0] = 100;
		o->rtts_us[1] = 1000;
		o->nrtts = 2;
	}
	if (o->nsamples > 1 && o->nsamples != o->nsizes)
		bench_die("--samples: %u numbers for %u sizes; accepted: one number, or one per size", o->nsamples, o->nsizes);
	if ((uint64_t)o->queue_kib * 1024 < 2 * (MTU_BYTES + 128))
		bench_die("--queue-kib: %u KiB holds less than two full frames", o->queue_kib);
}

/* --- the two ends ----------------------------------------------------------- */

struct bench {
	struct loop_fabric *fab;
	struct loop_side s[2]; /* 0 sends, 1 receives */
	uint8_t *src, *dst;
	uint64_t buf_bytes;
	uint8_t recv_buf[64];
	struct uroce_mr *recv_mr;
	uint64_t t_frame_ns; /* serialisation of one full data frame */
	uint32_t frame_bytes; /* a full data frame on the wire */
	uint32_t win_bytes;   /* the row's byte window (0: window_pkts x 4 KiB) */
	uint64_t refused_seen;
	/* --trace: losses made by the filter and idle spells of the data link,
	 * logged per sample */
	bool trace;
	double trace_p;
	uint64_t trace_rng;
	uint64_t trace_t0;
	uint64_t trace_busy; /* when the data direction's link finishes its queue */
	uint64_t trace_idle_ns;
	uint64_t trace_rate_bps;
	char trace_log[65536];
	size_t trace_len;
};

static bool trace_filter(void *arg, const uint8_t *f, uint32_t len)
{
	struct bench *b = arg;
	uint64_t x = b->trace_rng;
	uint32_t imm, kind;
	static const char kinds[] = "dlLDP???";
	uint64_t now = loop_fabric_now(b->fab);

	/* the data link idled (its queue ran empty) for 50 frame times or more
	 * before this frame: the sender was held */
	if (now >= b->trace_busy + b->trace_idle_ns && b->trace_len < sizeof(b->trace_log) - 48)
		b->trace_len += (size_t)snprintf(b->trace_log + b->trace_len, sizeof(b->trace_log) - b->trace_len,
		                                 " idle:%.1f@%.1f", (double)(now - b->trace_busy) / 1000,
		                                 (double)(b->trace_busy - b->trace_t0) / 1000);
	b->trace_busy = (now > b->trace_busy ? now : b->trace_busy) +
	                ((uint64_t)len * 8 * 1000000000ull + b->trace_rate_bps - 1) / b->trace_rate_bps;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	b->trace_rng = x;
	if ((double)(x >> 11) * 0x1p-53 >= b->trace_p)
		return false;
	if (len >= 74 && b->trace_len < sizeof(b->trace_log) - 48) {
		memcpy(&imm, f + 70, 4); /* Eth 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 */
		imm = be32toh(imm);
		kind = (imm >> 17) & 7;
		b->trace_len += (size_t)snprintf(b->trace_log + b->trace_len, sizeof(b->trace_log) - b->trace_len,
		                                 " %c%u@%.1f", kinds[kind], imm & 0x1ffff,
		                                 (double)(loop_fabric_now(b->fab) - b->trace_t0) / 1000);
	}
	return true;
}

static void bench_open(struct bench *b, const struct opts *o, enum variant v, double rtt_us, double p,
                       uint64_t seed)
{
	struct loop_fabric_opts fo = { 0 };
	struct loop_impairment data = { 0 }, ctrl = { 0 };
	struct uroce_rel_attr rel = { 0 };
	char err[256];

	fo.nports = 2;
	fo.seed = seed;
	fo.nframes = 16384;
	b->fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	if (!b->fab)
		bench_die("fabric: %s", err);
	data.delay_ns = (uint64_t)llround(rtt_us * 1000.0 / 2);
	data.rate_bps = (uint64_t)llround(o->gbps * 1e9);
	data.queue_bytes = o->queue_kib * 1024u;
	data.backpressure = o->backpressure;
	ctrl = data;
	data.loss = o->trace ? 0 : p;
	if (o->ctrl_loss)
		ctrl.loss = p;
	if (loop_fabric_connect(b->fab, 0, 1, &data, &ctrl))
		bench_die("fabric connect: %s", loop_fabric_last_error(b->fab));
	b->trace = o->trace;
	if (o->trace) {
		b->trace_p = p;
		b->trace_rate_bps = (uint64_t)llround(o->gbps * 1e9);
		b->trace_rng = seed * 0x9e3779b97f4a7c15ull | 1;
		loop_fabric_set_filter(b->fab, 0, trace_filter, b);
	}
	rel.ordering = UROCE_ORDER_ORDERED;
	rel.rto_rtts = 3;
	rel.rto_min_us = 1;
	rel.window_pkts = o->window_pkts;
	rel.window_bytes = o->window_kib * 1024u;
	if (o->window_bdp >= 0 && b->frame_bytes) {
		/* the bandwidth-delay product in full frames, rounded up, plus the margin */
		double bdp = o->gbps * 1e9 * rtt_us * 1e-6 / (8.0 * b->frame_bytes);
		uint64_t w = ((uint64_t)ceil(bdp - 1e-9) + (uint64_t)o->window_bdp) * MTU_BYTES;

		rel.window_bytes = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
	}
	b->win_bytes = rel.window_bytes;
	switch (v) {
	case V_SR_RTO:
		rel.reliability = UROCE_REL_SR;
		rel.loss = UROCE_LOSS_RTO;
		break;
	case V_SR_NACK:
		rel.reliability = UROCE_REL_SR;
		rel.loss = UROCE_LOSS_RACK;
		break;
	default:
		rel.reliability = UROCE_REL_EC;
		rel.loss = UROCE_LOSS_RTO;
		rel.ec_code = v == V_EC_XOR ? UROCE_EC_XOR : UROCE_EC_RS;
		rel.ec_k = 32;
		rel.ec_m = 8;
		rel.ec_fto_us = (uint32_t)llround(o->beta * rtt_us);
		if (!rel.ec_fto_us)
			rel.ec_fto_us = 1;
		break;
	}
	loop_side_open(b->fab, &b->s[0], 0, b->src, b->buf_bytes, 16, 256, &rel);
	loop_side_open(b->fab, &b->s[1], 1, b->dst, b->buf_bytes, 16, 256, &rel);
	if (uroce_mr_reg(b->s[1].pd, b->recv_buf, sizeof(b->recv_buf), UROCE_ACCESS_LOCAL_WRITE, &b->recv_mr))
		bench_die("mr_reg: %s", uroce_last_error());
	loop_side_connect(&b->s[0], &b->s[1], UROCE_MTU_4096);
	loop_side_connect(&b->s[1], &b->s[0], UROCE_MTU_4096);
	b->refused_seen = 0;
}

static void bench_close(struct bench *b)
{
	if (uroce_mr_dereg(b->recv_mr))
		bench_die("mr_dereg: %s", uroce_last_error());
	loop_side_close(&b->s[0]);
	loop_side_close(&b->s[1]);
	loop_fabric_destroy(b->fab);
	b->fab = NULL;
}

/* --- simulated time ----------------------------------------------------------- */

static uint64_t qp_deadline(struct uroce_qp *qp)
{
	const struct wheel_timer *t = &qp->retry_timer;

	return wheel_timer_pending(t) ? t->expires * TICK_NS : UINT64_MAX;
}

/* Run both ends at the current time until neither has work left (a bound
 * of 16 rounds: a QP whose transmit stage is full stays on the active list
 * and always reports work). */
static void settle(struct bench *b)
{
	uint64_t sig = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		int n0 = uroce_progress(b->s[0].ctx), n1 = uroce_progress(b->s[1].ctx);
		struct loop_link_stats st;
		uint64_t s;

		if (n0 < 0 || n1 < 0)
			bench_die("progress: %s", uroce_last_error());
		if (!n0 && !n1)
			break;
		/* a QP whose transmit stage is full keeps reporting work: stop
		 * once a round moved no frame */
		loop_fabric_stats(b->fab, &st);
		s = st.tx_frames + st.refused + st.lost + st.queue_drops + st.filtered;
		if (s == sig)
			break;
		sig = s;
	}
}

/* Move the clock to the next thing that can happen. Returns false when
 * there is none. */
static bool advance(struct bench *b)
{
	uint64_t now = loop_fabric_now(b->fab), next = loop_fabric_next_event(b->fab), d;
	struct loop_link_stats ls;

	d = qp_deadline(b->s[0].qp);
	if (d < next)
		next = d;
	d = qp_deadline(b->s[1].qp);
	if (d < next)
		next = d;
	loop_fabric_link_stats(b->fab, 0, &ls);
	if (ls.refused != b->refused_seen) {
		/* the link refused a frame: it has room again after one frame time */
		b->refused_seen = ls.refused;
		if (now + b->t_frame_ns < next)
			next = now + b->t_frame_ns;
	}
	if (next == UINT64_MAX)
		return false;
	if (next <= now)
		next = now + 1;
	loop_fabric_advance(b->fab, next - now);
	return true;
}

/* --- one sample ------------------------------------------------------------------- */

struct counters {
	uint64_t retx, rto_losses, rack_losses, tlp, nacks, recovered, spurious, parity, timeouts;
};

static void post_recv(struct bench *b)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)b->recv_buf, sizeof(b->recv_buf), b->recv_mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };

	if (uroce_post_recv(b->s[1].qp, &wr, NULL))
		bench_die("post_recv: %s", uroce_last_error());
}

/* Stamp every 4 KiB chunk of the source with this sample's number. */
static void stamp(uint8_t *buf, uint64_t len, uint64_t id)
{
	for (uint64_t off = 0; off < len; off += MTU_BYTES) {
		uint64_t v = id * 0x9e3779b97f4a7c15ull ^ off;
		uint64_t n = len - off < 8 ? len - off : 8;

		memcpy(buf + off, &v, n);
	}
}

static uint64_t check_stamps(const uint8_t *dst, const uint8_t *src, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += MTU_BYTES) {
		uint64_t n = len - off < 8 ? len - off : 8;

		if (memcmp(dst + off, src + off, n))
			return off;
	}
	return UINT64_MAX;
}

/* One message; returns its completion time in ns. */
static uint64_t one_sample(struct bench *b, uint64_t len, uint64_t id, const char *what)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)b->src, (uint32_t)len, b->s[0].mr->lkey };
	struct uroce_send_wr wr;
	struct uroce_wc wc;
	uint64_t t0, bad;
	bool recvd = false;

	stamp(b->src, len, id);
	post_recv(b);
	b->trace_len = 0;
	b->trace_log[0] = 0;
	b->trace_t0 = loop_fabric_now(b->fab);
	b->trace_busy = b->trace_t0;
	b->trace_idle_ns = 50 * b->t_frame_ns;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.imm_data = htobe32((uint32_t)id);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b->dst;
	wr.wr.rdma.rkey = b->s[1].mr->rkey;
	t0 = loop_fabric_now(b->fab);
	if (uroce_post_send(b->s[0].qp, &wr, NULL))
		bench_die("post_send: %s", uroce_last_error());
	for (;;) {
		int n;

		/* settle, read the CQs at this instant, only then move time */
		settle(b);
		n = uroce_poll_cq(b->s[1].rcq, 1, &wc);
		if (n == 1) {
			if (wc.status != UROCE_WC_SUCCESS || (wc.wc_flags & UROCE_WC_PARTIAL) || wc.wr_id != 1 ||
			    be32toh(wc.imm_data) != (uint32_t)id)
				bench_die("%s sample %" PRIu64 ": receive completion %s, flags 0x%x, imm %u", what, id,
				    uroce_wc_status_str(wc.status), wc.wc_flags, be32toh(wc.imm_data));
			recvd = true;
		}
		n = uroce_poll_cq(b->s[0].scq, 1, &wc);
		if (n == 1) {
			if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != id)
				bench_die("%s sample %" PRIu64 ": send completion %s (wr_id %" PRIu64 ")", what, id,
				    uroce_wc_status_str(wc.status), wc.wr_id);
			break;
		}
		if (!advance(b))
			bench_die("%s sample %" PRIu64 ": nothing left to happen but the message is not complete (hang) at "
			    "t=%" PRIu64 " ns, %" PRIu64 " ns after the post",
			    what, id, loop_fabric_now(b->fab), loop_fabric_now(b->fab) - t0);
		if (loop_fabric_now(b->fab) - t0 > 600ull * 1000000000ull)
			bench_die("%s sample %" PRIu64 ": not complete after 600 s of simulated time", what, id);
	}
	uint64_t t = loop_fabric_now(b->fab) - t0;

	/* the receive completion precedes the SACK that completed the send */
	for (int i = 0; !recvd && i < 4; i++) {
		if (uroce_poll_cq(b->s[1].rcq, 1, &wc) == 1) {
			if (wc.status != UROCE_WC_SUCCESS || (wc.wc_flags & UROCE_WC_PARTIAL))
				bench_die("%s sample %" PRIu64 ": receive completion %s", what, id, uroce_wc_status_str(wc.status));
			recvd = true;
		} else {
			advance(b);
			settle(b);
		}
	}
	if (!recvd)
		bench_die("%s sample %" PRIu64 ": the send completed without the receive", what, id);
	if (b->trace && b->trace_len) {
		struct uroce_qp_stats sa, sb;

		uroce_qp_stats(b->s[0].qp, &sa);
		uroce_qp_stats(b->s[1].qp, &sb);
		fprintf(stderr, "%s #%" PRIu64 ": %.1f us, lost%s; QP totals: retx %" PRIu64 " nacks %" PRIu64
		        " rto_losses %" PRIu64 " rack %" PRIu64 " tlp %" PRIu64 "\n",
		        what, id, t / 1000.0, b->trace_log, sa.retransmits, sb.ec_nacks_sent, sa.rto_losses, sa.rack_losses,
		        sa.tlp_probes);
	}
	bad = check_stamps(b->dst, b->src, len);
	if (bad != UINT64_MAX)
		bench_die("%s sample %" PRIu64 ": the target holds wrong data at offset %" PRIu64 " after the send completed",
		    what, id, bad);
	return t;
}

/* --- rows ------------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, as sdr_model.summarize */
static double quantile(const uint64_t *sorted, uint32_t n, double q)
{
	double r = ceil(q * n) - 1;
	uint32_t i = r < 0 ? 0 : (uint32_t)r;

	return (double)sorted[i < n ? i : n - 1];
}

static uint32_t auto_samples(uint64_t len)
{
	uint64_t pkts = (len + MTU_BYTES - 1) / MTU_BYTES, n;

	/* about 64k packets a row, 2000 at most, 10 at least */
	n = 65536 / pkts;
	if (n > 2000)
		n = 2000;
	if (n < 10)
		n = 10;
	return (uint32_t)n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_row(struct bench *b, const struct opts *o, enum variant v, uint64_t len, double p, double rtt_us,
                    uint32_t nsamp, uint64_t seed)
{
	uint64_t *t = malloc(sizeof(*t) * nsamp);
	struct uroce_qp_stats sa, sb;
	struct loop_link_stats ld;
	char what[96];
	double sum = 0, sq = 0, mean, sd, wall = now_s();

	if (!t)
		bench_die("out of memory");
	snprintf(what, sizeof(what), "%s %" PRIu64 " B p=%g rtt=%g us", variant_name[v], len, p, rtt_us);
	bench_open(b, o, v, rtt_us, p, seed);
	/* one message to take the first RTT samples (not counted) */
	one_sample(b, len < 65536 ? len : 65536, 0, what);
	uroce_qp_stats(b->s[0].qp, &sa);
	uroce_qp_stats(b->s[1].qp, &sb);
	struct uroce_qp_stats sa0 = sa, sb0 = sb;
	struct loop_link_stats ld0;

	loop_fabric_link_stats(b->fab, 0, &ld0);
	for (uint32_t i = 0; i < nsamp; i++) {
		t[i] = one_sample(b, len, i + 1, what);
		sum += (double)t[i];
	}
	uroce_qp_stats(b->s[0].qp, &sa);
	uroce_qp_stats(b->s[1].qp, &sb);
	loop_fabric_link_stats(b->fab, 0, &ld);
	mean = sum / nsamp;
	for (uint32_t i = 0; i < nsamp; i++)
		sq += ((double)t[i] - mean) * ((double)t[i] - mean);
	sd = nsamp > 1 ? sqrt(sq / (nsamp - 1)) : 0;
	qsort(t, nsamp, sizeof(*t), cmp_u64);
	wall = now_s() - wall;
	{
		uint64_t frames = ld.tx_frames - ld0.tx_frames,
		         lost = ld.lost + ld.lost_burst + ld.filtered - ld0.lost - ld0.lost_burst - ld0.filtered;
		double per_msg = 1.0 / nsamp;
		unsigned win_kib = (b->win_bytes ? b->win_bytes : o->window_pkts * MTU_BYTES) / 1024;

		if (o->csv)
			printf("%s,%" PRIu64 ",%" PRIu64 ",%g,%g,%g,%.6f,%u,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,"
			       "%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.2f,%u\n",
			       variant_name[v], len, (len + MTU_BYTES - 1) / MTU_BYTES, p, rtt_us, o->gbps,
			       (double)b->t_frame_ns / 1000.0, nsamp, mean / 1000, sd / sqrt(nsamp) / 1000,
			       quantile(t, nsamp, 0.5) / 1000, quantile(t, nsamp, 0.99) / 1000, quantile(t, nsamp, 0.999) / 1000,
			       (double)t[nsamp - 1] / 1000, (double)t[0] / 1000, (double)frames * per_msg,
			       (double)lost * per_msg, (double)(sa.retransmits - sa0.retransmits) * per_msg,
			       (double)(sa.rto_losses - sa0.rto_losses) * per_msg,
			       (double)(sa.rack_losses - sa0.rack_losses) * per_msg, (double)(sa.tlp_probes - sa0.tlp_probes) * per_msg,
			       (double)(sb.ec_nacks_sent - sb0.ec_nacks_sent) * per_msg,
			       (double)(sb.ec_recovered - sb0.ec_recovered) * per_msg,
			       (double)sa.srtt_ns / 1000, (double)sa.rto_ns / 1000, wall, win_kib);
		else
			printf("%-8s %10" PRIu64 " %7g %7g %7u %11.1f %11.1f %11.1f %8.2f %7.2f %6.3f %6.3f %6.2f %8.1f %8.1f %7u\n",
			       variant_name[v], len, p, rtt_us, nsamp, mean / 1000, quantile(t, nsamp, 0.99) / 1000,
			       quantile(t, nsamp, 0.999) / 1000, (double)frames * per_msg, (double)lost * per_msg,
			       (double)(sa.retransmits - sa0.retransmits) * per_msg,
			       (double)(sb.ec_nacks_sent - sb0.ec_nacks_sent) * per_msg,
			       (double)(sb.ec_recovered - sb0.ec_recovered) * per_msg, (double)sa.srtt_ns / 1000, (double)sa.rto_ns / 1000,
			       win_kib);
		fflush(stdout);
	}
	bench_close(b);
	free(t);
}

/* Serialisation time of one full data frame (4096 B of payload with all its
 * headers), measured: the data link's bytes for a 2-packet message minus
 * those of a 1-packet one, on a lossless sr pair. */
static uint64_t measure_frame(struct bench *b, const struct opts *o, uint32_t *frame_bytes)
{
	struct opts q = *o;
	struct loop_link_stats a, c, d;
	uint64_t bytes;

	q.gbps = 1000;
	bench_open(b, &q, V_SR_RTO, 10, 0, 1);
	loop_fabric_link_stats(b->fab, 0, &a);
	one_sample(b, MTU_BYTES, 1, "calibration");
	loop_fabric_link_stats(b->fab, 0, &c);
	one_sample(b, 2 * MTU_BYTES, 2, "calibration");
	loop_fabric_link_stats(b->fab, 0, &d);
	bench_close(b);
	bytes = (d.tx_bytes - c.tx_bytes) - (c.tx_bytes - a.tx_bytes);
	*frame_bytes = (uint32_t)bytes;
	/* as the loop link rounds it: up, so it never runs faster than its rate */
	return (uint64_t)ceil((double)bytes * 8 * 1e9 / (o->gbps * 1e9));
}

int main(int argc, char **argv)
{
	struct opts o;
	struct bench b;
	uint64_t maxlen = 0;
	uint32_t frame_bytes;
	double wall = now_s();

	bench_name = "sdr_longhaul";

	parse_args(argc, argv, &o);
	memset(&b, 0, sizeof(b));
	for (unsigned i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > maxlen)
			maxlen = o.sizes[i];
	if (maxlen < 2 * MTU_BYTES)
		maxlen = 2 * MTU_BYTES;
	b.buf_bytes = (maxlen + MTU_BYTES - 1) / MTU_BYTES * MTU_BYTES;
	b.src = aligned_alloc(4096, b.buf_bytes);
	b.dst = aligned_alloc(4096, b.buf_bytes);
	if (!b.src || !b.dst)
		bench_die("cannot allocate 2 x %" PRIu64 " bytes", b.buf_bytes);
	memset(b.src, 0x5a, b.buf_bytes);
	memset(b.dst, 0, b.buf_bytes);
	b.t_frame_ns = 1;
	b.t_frame_ns = measure_frame(&b, &o, &frame_bytes);
	b.frame_bytes = frame_bytes;
	if (o.csv) {
		char wb[64] = "";

		if (o.window_bdp >= 0)
			snprintf(wb, sizeof(wb), ", bytes = (BDP in frames + %d) x 4 KiB", o.window_bdp);
		else if (o.window_kib)
			snprintf(wb, sizeof(wb), ", bytes %u KiB", o.window_kib);
		printf("# sdr_longhaul: %g Gbit/s, full data frame %u B on the wire = %.4f us; queue %u KiB%s; window %u pkts"
		       "%s; beta %g; seed %" PRIu64 "; control direction %s\n",
		       o.gbps, frame_bytes, b.t_frame_ns / 1000.0, o.queue_kib, o.backpressure ? " with back-pressure" : "",
		       o.window_pkts, wb, o.beta, o.seed, o.ctrl_loss ? "lossy" : "lossless");
		printf("variant,bytes,chunks,drop,rtt_us,gbps,t_inj_us,samples,mean_us,mean_se_us,p50_us,p99_us,p999_us,"
		       "max_us,min_us,frames_per_msg,lost_per_msg,retx_per_msg,rto_losses_per_msg,rack_losses_per_msg,"
		       "tlp_per_msg,nacks_per_msg,ec_rebuilt_per_msg,srtt_us,rto_us,wall_s,win_kib\n");
	} else {
		printf("SDR long-haul on the loop fabric: %g Gbit/s each way, full data frame %u B = %.4f us on the wire, "
		       "queue %u KiB%s, window %u packets%s, ec fallback timeout %g x RTT, control direction %s\n",
		       o.gbps, frame_bytes, b.t_frame_ns / 1000.0, o.queue_kib, o.backpressure ? " (back-pressure)" : "",
		       o.window_pkts, o.window_bdp >= 0 ? " and (BDP + margin) bytes (win_kib)" : "", o.beta,
		       o.ctrl_loss ? "lossy" : "lossless");
		printf("%-8s %10s %7s %7s %7s %11s %11s %11s %8s %7s %6s %6s %6s %8s %8s %7s\n", "variant", "bytes", "drop",
		       "rtt_us", "samples", "mean_us", "p99_us", "p99.9_us", "frames", "lost", "retx", "nacks", "rebuilt",
		       "srtt_us", "rto_us", "win_kib");
	}
	fflush(stdout);
	for (unsigned si = 0; si < o.nsizes; si++) {
		uint32_t nsamp = o.nsamples == 0 ? 0 : o.samples[o.nsamples == 1 ? 0 : si];

		if (!nsamp)
			nsamp = auto_samples(o.sizes[si]);
		for (unsigned ri = 0; ri < o.nrtts; ri++)
			for (unsigned di = 0; di < o.ndrops; di++)
				for (int v = 0; v < V__COUNT; v++)
					if (o.variants[v])
						run_row(&b, &o, (enum variant)v, o.sizes[si], o.drops[di], o.rtts_us[ri], nsamp,
						        o.seed + si * 1000003ull + ri * 10007ull + di * 101ull + (uint64_t)v);
	}
	if (!o.csv)
		printf("frames, lost, retx, nacks, rebuilt: per message (data direction frames, frames the link lost, "
		       "packets sent again, ec NACKs, ec chunks rebuilt); srtt/rto: the sender's at the end of the row\n");
	fflush(stdout);
	fprintf(stderr, "sdr_longhaul: %.1f s of wall time\n", now_s() - wall);
	free(b.src);
	free(b.dst);
	return 0;
}
