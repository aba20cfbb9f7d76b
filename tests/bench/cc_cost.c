/* SPDX-License-Identifier: MIT */
/* The cost of a decision (UCCL's Table 3): ns per packet of each
 * path policy's choice and of each congestion controller's per-packet
 * work, measured on the library's own transport/path/path.h and transport/cc/cc.h
 * (the internal static library) in a tight loop, against an empty loop
 * that does the same bookkeeping and calls nothing.
 *
 * The loop is a simulated sender at line rate (simulated time, no clock
 * read inside): packet k leaves at k x pkt_ns, and the packet sent W
 * packets earlier is acknowledged then, with an RTT of W x pkt_ns plus a
 * queueing delay drawn from a table of seeded random values (0 to 2 base
 * RTTs), so every controller sees a steady window of W packets with a
 * moving RTT. Per packet, as sr_tx.c, sr_ack.c and sr_paths.c call them:
 *   controllers: cc_flow_gate + cc_flow_sent + cc_flow_gone, and on_ack
 *     once per ACK (a SACK every --ack-every packets, covering them; CUBIC
 *     is per path, so sr_pc_acked gives it one call per packet whatever
 *     the ACK covers), plus on_cnp every --cnp-every packets for DCQCN (a
 *     congested flow: the receiver sends at most one CNP per 4 us) and
 *     on_credit every 16 KiB (one PULL quantum) for EQDS;
 *   paths: select (ops->select of the policy: a packet of MTU bytes,
 *     nothing to avoid) on a set of N paths whose smoothed RTTs differ,
 *     then path_sent, and path_acked + path_gone of the packet W earlier
 *     (so p2c decides on RTTs that move). The "select" column is the loop
 *     with select less the same loop taking path k % N instead; the
 *     "select + bookkeeping" column is the loop with select less the
 *     empty loop. "p2c + CUBIC" is the set sr_pc_ready builds for CUBIC:
 *     a controller per path, whose gate path_usable consults for every
 *     candidate the scan looks at; its select column is less "fixed k % N
 *     + CUBIC", the same loop with CUBIC's per-path work and no choice.
 *
 * Each measurement runs --pkts packets; --reps rounds run every
 * measurement once each, in turn (so a noisy second of the machine falls
 * on all of them alike), and the tables give the median round. The
 * simulated line rate is 100 Gbit/s, MTU 4096, base RTT 10 us.
 *
 *   cc_cost [--pkts N] [--reps R] [--paths LIST] [--ack-every N] [--cnp-every N] [--json]
 *
 * --paths LIST: path counts, comma-separated, 1..256 (default 1,8,64,256).
 * --json: one JSON line per measurement instead of the markdown tables.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/cc/cc.h"
#include "transport/path/path.h"
#include "../lib/xorshift.h"

#define LINE_BPS 100000000000ull
#define MTU 4096u
#define BASE_RTT_NS 10000ull
#define WINDOW_PKTS 32u          /* in flight: about one BDP (100 Gbit/s x 10 us = 30 packets of 4 KiB) */
#define JITTER_N 4096u           /* queueing delays drawn once, indexed by packet */
#define EQDS_QUANTUM_B 16384u    /* cc_eqds.h's EQDS_QUANTUM: one PULL */
#define MAX_PATH_COUNTS 16
#define MAX_REPS 101
#define PKTS_DEFAULT 2000000u
#define REPS_DEFAULT 9u

/* Keeps a value or a struct alive without costing an instruction. */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

struct opts {
	uint64_t pkts;
	unsigned reps;
	unsigned npc, pcount[MAX_PATH_COUNTS];
	unsigned ack_every;
	unsigned cnp_every;
	int json;
};

static uint32_t jitter[JITTER_N];
static uint64_t pkt_ns; /* serialisation time of one packet at LINE_BPS */

static const struct cc_env env = {
	.mtu = MTU,
	.line_bps = LINE_BPS,
	.base_rtt_ns = BASE_RTT_NS,
	.max_window = 256u * MTU,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- controllers --------------------------------------------------------- */

enum cc_case { CC_EMPTY, CC_CASE_NONE, CC_CASE_DCQCN, CC_CASE_SWIFT, CC_CASE_CUBIC, CC_CASE_EQDS, CC_CASE__N };

static const char *const cc_case_name[CC_CASE__N] = { "empty loop", "none", "dcqcn", "swift", "cubic", "eqds" };
static const char *const cc_case_work[CC_CASE__N] = {
	"the loop's bookkeeping alone",
	"gate (window check) + sent + gone + on_ack (nothing)",
	"gate + sent (rate: lazy timers replayed) + gone + on_cnp every CNP",
	"gate + sent + gone + on_ack (two AIMD steps on delay)",
	"gate + sent + gone + on_ack per packet (per-path state)",
	"gate (credit) + sent + gone + on_credit every 16 KiB",
};

static const struct cc_ops *cc_case_ops(enum cc_case c)
{
	switch (c) {
	case CC_CASE_DCQCN:
		return &cc_dcqcn_ops;
	case CC_CASE_SWIFT:
		return &cc_swift_ops;
	case CC_CASE_CUBIC:
		return &cc_cubic_ops;
	case CC_CASE_EQDS:
		return &cc_eqds_ops;
	default:
		return &cc_none_ops;
	}
}

/* One run of pkts packets through controller c (or the empty loop); the
 * wall ns it took. ack_every 1 = an ACK per packet. */
static uint64_t cc_run(enum cc_case c, uint64_t pkts, unsigned ack_every, unsigned cnp_every, uint64_t *sink)
{
	const struct cc_ops *o = cc_case_ops(c);
	const int empty = c == CC_EMPTY, per_pkt_ack = c == CC_CASE_CUBIC;
	const unsigned credit_every = EQDS_QUANTUM_B / MTU;
	struct cc_flow f;
	uint64_t ring[WINDOW_PKTS] = { 0 };
	uint64_t now = 0, acc = 0, credit = (uint64_t)WINDOW_PKTS * MTU * 2, t0, t1;
	uint32_t acked_pkts = 0, to_cnp = cnp_every, to_credit = credit_every;

	cc_flow_init(&f, o, &env, 0);
	if (o->on_credit)
		o->on_credit(f.st, 0, credit); /* granted ahead: the gate opens as it would after the first PULLs */
	t0 = now_ns();
	for (uint64_t k = 0; k < pkts; k++) {
		unsigned slot = (unsigned)(k % WINDOW_PKTS);
		uint64_t sent_at = ring[slot];

		now += pkt_ns;
		if (!empty) {
			acc += cc_flow_gate(&f, now, MTU);
			cc_flow_sent(&f, now, MTU);
		}
		ring[slot] = now;
		if (k < WINDOW_PKTS)
			continue;
		/* the packet sent W earlier is acknowledged now */
		acked_pkts++;
		if (!empty)
			cc_flow_gone(&f, MTU);
		if (per_pkt_ack || acked_pkts == ack_every) {
			struct cc_ack a = {
				.now = now,
				.rtt_ns = now - sent_at + jitter[k % JITTER_N],
				.remote_ns = 2000,
				.bytes = acked_pkts * MTU,
				.pkts = acked_pkts,
				.inflight = f.inflight,
				.hops = 2,
			};

			acked_pkts = 0;
			if (!empty)
				o->on_ack(f.st, &a);
			KEEP(&a);
		}
		/* countdowns, not k % n: a division would cost more than some hooks */
		if (c == CC_CASE_DCQCN && --to_cnp == 0) {
			to_cnp = cnp_every;
			o->on_cnp(f.st, now);
		}
		if (c == CC_CASE_EQDS && --to_credit == 0) {
			to_credit = credit_every;
			credit += EQDS_QUANTUM_B;
			o->on_credit(f.st, now, credit);
		}
		KEEP(acc);
	}
	t1 = now_ns();
	*sink += acc + f.inflight;
	return t1 - t0;
}

/* ---- paths ---------------------------------------------------------------- */

enum path_case { PC_FIXED, PC_SINGLE, PC_RR, PC_RANDOM, PC_P2C, PC_FIXED_CUBIC, PC_P2C_CUBIC, PC__N };

static const char *const path_case_name[PC__N] = { "fixed k % N", "single", "rr", "random", "p2c",
	                                           "fixed k % N + CUBIC", "p2c + CUBIC" };

/* the loop that p2c's select column is measured against */
static enum path_case path_case_base(enum path_case pc)
{
	return pc == PC_P2C_CUBIC ? PC_FIXED_CUBIC : PC_FIXED;
}

static int path_case_setup(struct path_set *ps, enum path_case pc, unsigned n)
{
	static const enum uroce_path_policy pol[PC__N] = { UROCE_PATH_RR, UROCE_PATH_SINGLE, UROCE_PATH_RR,
		                                             UROCE_PATH_RANDOM, UROCE_PATH_P2C, UROCE_PATH_RR,
		                                             UROCE_PATH_P2C };
	struct uroce_path_attr a = { .npaths = (uint16_t)n, .policy = pol[pc] };
	uint8_t port = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ n;

	if (path_set_init(ps, &a, 0xc123, &port, 1, 42))
		return -ENOMEM;
	/* RTTs that differ from path to path (0 to 2 base RTTs of queueing),
	 * as after a first round of measurements */
	for (unsigned i = 0; i < n; i++) {
		ps->p[i].srtt_ns = BASE_RTT_NS + xs64(&seed) % (2 * BASE_RTT_NS);
		ps->p[i].min_rtt_ns = BASE_RTT_NS;
	}
	if (pc == PC_P2C_CUBIC || pc == PC_FIXED_CUBIC) {
		ps->cc = calloc(n, sizeof(*ps->cc));
		if (!ps->cc)
			return -ENOMEM;
		for (unsigned i = 0; i < n; i++)
			cc_flow_init(&ps->cc[i], &cc_cubic_ops, &env, 0);
	}
	return 0;
}

static uint64_t path_run(enum path_case pc, unsigned n, uint64_t pkts, uint64_t *sink)
{
	struct path_set ps;
	uint64_t ring_t[WINDOW_PKTS] = { 0 };
	uint16_t ring_p[WINDOW_PKTS] = { 0 };
	uint64_t now = 0, acc = 0, t0, t1;
	unsigned next_fixed = 0; /* the fixed choice k % n, without a division */
	const int fixed = pc == PC_FIXED || pc == PC_FIXED_CUBIC;
	const int per_path_cc = pc == PC_P2C_CUBIC || pc == PC_FIXED_CUBIC;

	if (path_case_setup(&ps, pc, n)) {
		fprintf(stderr, "cc_cost: out of memory for %u paths\n", n);
		exit(1);
	}
	t0 = now_ns();
	for (uint64_t k = 0; k < pkts; k++) {
		unsigned slot = (unsigned)(k % WINDOW_PKTS), i, j = ring_p[slot];
		uint64_t sent_at = ring_t[slot];

		now += pkt_ns;
		if (fixed) {
			i = next_fixed;
			next_fixed = next_fixed + 1 == n ? 0 : next_fixed + 1;
		} else {
			i = ps.ops->select(&ps, now, MTU, PATH_NONE);
		}
		if (i == PATH_NONE)
			i = 0; /* never here: every path is up and the windows are open */
		path_sent(&ps, i, now, MTU);
		if (per_path_cc)
			cc_flow_sent(&ps.cc[i], now, MTU);
		ring_t[slot] = now;
		ring_p[slot] = (uint16_t)i;
		acc += i;
		if (k < WINDOW_PKTS)
			continue;
		path_acked(&ps, j, now, now - sent_at + jitter[k % JITTER_N], true);
		path_gone(&ps, j, MTU);
		if (per_path_cc) {
			struct cc_ack a = {
				.now = now,
				.rtt_ns = now - sent_at + jitter[k % JITTER_N],
				.bytes = MTU,
				.pkts = 1,
			};

			cc_flow_gone(&ps.cc[j], MTU);
			a.inflight = ps.cc[j].inflight;
			ps.cc[j].ops->on_ack(ps.cc[j].st, &a);
		}
		KEEP(acc);
	}
	t1 = now_ns();
	*sink += acc;
	path_set_fini(&ps);
	return t1 - t0;
}

/* ---- driver --------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_ns_per_pkt(uint64_t *v, unsigned n, uint64_t pkts)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / (double)pkts;
}

static void bad(const char *opt, const char *val, const char *accepted)
{
	fprintf(stderr, "cc_cost: %s '%s': accepted: %s\n", opt, val, accepted);
	exit(2);
}

static uint64_t parse_u(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		bad(opt, s, accepted);
	return v;
}

static void parse(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pkts", required_argument, NULL, 'n' },   { "reps", required_argument, NULL, 'r' },
		{ "paths", required_argument, NULL, 'p' },  { "ack-every", required_argument, NULL, 'a' },
		{ "cnp-every", required_argument, NULL, 'c' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
	};
	static const unsigned def_paths[] = { 1, 8, 64, 256 };
	int c;

	*o = (struct opts){ .pkts = PKTS_DEFAULT, .reps = REPS_DEFAULT, .ack_every = 16, .cnp_every = 64 };
	o->npc = sizeof(def_paths) / sizeof(def_paths[0]);
	memcpy(o->pcount, def_paths, sizeof(def_paths));
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->pkts = parse_u("--pkts", optarg, 10000, 1000000000, "10000 to 1000000000 packets");
			break;
		case 'r':
			o->reps = (unsigned)parse_u("--reps", optarg, 1, MAX_REPS, "1 to 101 rounds");
			break;
		case 'a':
			o->ack_every = (unsigned)parse_u("--ack-every", optarg, 1, 1024, "1 to 1024 packets");
			break;
		case 'c':
			o->cnp_every = (unsigned)parse_u("--cnp-every", optarg, 1, 1000000, "1 to 1000000 packets");
			break;
		case 'p': {
			char *s = strdup(optarg), *save = NULL, *t;

			o->npc = 0;
			for (t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (o->npc == MAX_PATH_COUNTS)
					bad("--paths", optarg, "at most 16 counts");
				o->pcount[o->npc++] = (unsigned)parse_u("--paths", t, 1, UROCE_MAX_PATHS, "counts 1 to 256, "
				                                                                        "comma-separated");
			}
			free(s);
			if (!o->npc)
				bad("--paths", optarg, "counts 1 to 256, comma-separated");
			break;
		}
		case 'j':
			o->json = 1;
			break;
		case 'h':
			puts("usage: cc_cost [--pkts N] [--reps R] [--paths LIST] [--ack-every N] [--cnp-every N] [--json]");
			exit(0);
		default:
			fprintf(stderr, "cc_cost: accepted options: --pkts N, --reps R, --paths LIST, --ack-every N, "
			                "--cnp-every N, --json\n");
			exit(2);
		}
	}
	if (optind < argc)
		bad("argument", argv[optind], "options only");
}

int main(int argc, char **argv)
{
	struct opts o;
	uint64_t seed = 1, sink = 0;
	/* [case][ack mode: 0 = --ack-every, 1 = every packet][rep] */
	static uint64_t cc_t[CC_CASE__N][2][MAX_REPS];
	static uint64_t path_t[PC__N][MAX_PATH_COUNTS][MAX_REPS];
	double cc_ns[CC_CASE__N][2], path_ns[PC__N][MAX_PATH_COUNTS];

	parse(&o, argc, argv);
	pkt_ns = ((uint64_t)MTU + CC_PKT_OVERHEAD) * 8u * 1000000000ull / LINE_BPS;
	for (unsigned i = 0; i < JITTER_N; i++)
		jitter[i] = (uint32_t)(xs64(&seed) % (2 * BASE_RTT_NS));

	/* one warm-up pass of everything, then the rounds */
	for (unsigned r = 0; r <= o.reps; r++) {
		uint64_t n = r ? o.pkts : o.pkts / 10;

		for (int c = 0; c < CC_CASE__N; c++)
			for (int m = 0; m < 2; m++) {
				uint64_t t = cc_run((enum cc_case)c, n, m ? 1 : o.ack_every, o.cnp_every, &sink);

				if (r)
					cc_t[c][m][r - 1] = t;
			}
		for (int pc = 0; pc < PC__N; pc++)
			for (unsigned k = 0; k < o.npc; k++) {
				uint64_t t = path_run((enum path_case)pc, o.pcount[k], n, &sink);

				if (r)
					path_t[pc][k][r - 1] = t;
			}
	}
	for (int c = 0; c < CC_CASE__N; c++)
		for (int m = 0; m < 2; m++)
			cc_ns[c][m] = median_ns_per_pkt(cc_t[c][m], o.reps, o.pkts);
	for (int pc = 0; pc < PC__N; pc++)
		for (unsigned k = 0; k < o.npc; k++)
			path_ns[pc][k] = median_ns_per_pkt(path_t[pc][k], o.reps, o.pkts);

	if (o.json) {
		for (int c = 0; c < CC_CASE__N; c++)
			printf("{\"kind\":\"cc\",\"case\":\"%s\",\"ack_every\":%u,\"ns_per_pkt\":%.3f,\"empty_ns_per_pkt\":%.3f,"
			       "\"ack_every_1_ns_per_pkt\":%.3f,\"empty_ack_every_1_ns_per_pkt\":%.3f,\"pkts\":%" PRIu64
			       ",\"reps\":%u}\n",
			       cc_case_name[c], o.ack_every, cc_ns[c][0], cc_ns[CC_EMPTY][0], cc_ns[c][1], cc_ns[CC_EMPTY][1],
			       o.pkts, o.reps);
		for (int pc = 0; pc < PC__N; pc++)
			for (unsigned k = 0; k < o.npc; k++)
				printf("{\"kind\":\"path\",\"case\":\"%s\",\"paths\":%u,\"ns_per_pkt\":%.3f,\"fixed_ns_per_pkt\":%.3f,"
				       "\"empty_ns_per_pkt\":%.3f,\"pkts\":%" PRIu64 ",\"reps\":%u}\n",
				       path_case_name[pc], o.pcount[k], path_ns[pc][k], path_ns[path_case_base(pc)][k],
				       cc_ns[CC_EMPTY][0],
				       o.pkts, o.reps);
		return sink == 42 ? 3 : 0; /* never 42: keeps every result used */
	}
	printf("cc_cost: %" PRIu64 " packets a measurement, median of %u rounds; simulated 100 Gbit/s, MTU %u, "
	       "base RTT %llu us, %u packets in flight\n\n",
	       o.pkts, o.reps, MTU, BASE_RTT_NS / 1000, WINDOW_PKTS);
	printf("Congestion control, ns per packet (net = less the empty loop; ACK every %u packets, CNP every %u "
	       "packets for DCQCN):\n\n",
	       o.ack_every, o.cnp_every);
	printf("| controller | per-packet work | ns/pkt | net ns/pkt | net ns/pkt, ACK every packet |\n");
	printf("|---|---|---|---|---|\n");
	for (int c = 0; c < CC_CASE__N; c++) {
		if (c == CC_EMPTY)
			printf("| %s | %s | %.1f | - | - |\n", cc_case_name[c], cc_case_work[c], cc_ns[c][0]);
		else
			printf("| %s | %s | %.1f | %.1f | %.1f |\n", cc_case_name[c], cc_case_work[c], cc_ns[c][0],
			       cc_ns[c][0] - cc_ns[CC_EMPTY][0], cc_ns[c][1] - cc_ns[CC_EMPTY][1]);
	}
	printf("\nPath choice, ns per packet: select = less the same loop taking path k %% N; select + bookkeeping "
	       "(path_sent, path_acked, path_gone) = less the empty loop (%.1f ns):\n\n",
	       cc_ns[CC_EMPTY][0]);
	printf("| policy |");
	for (unsigned k = 0; k < o.npc; k++)
		printf(" select, %u paths |", o.pcount[k]);
	for (unsigned k = 0; k < o.npc; k++)
		printf(" + bookkeeping, %u |", o.pcount[k]);
	printf("\n|---|");
	for (unsigned k = 0; k < 2 * o.npc; k++)
		printf("---|");
	printf("\n");
	for (int pc = 0; pc < PC__N; pc++) {
		printf("| %s |", path_case_name[pc]);
		for (unsigned k = 0; k < o.npc; k++) {
			if (pc == PC_FIXED || pc == PC_FIXED_CUBIC)
				printf(" - |");
			else
				printf(" %.1f |", path_ns[pc][k] - path_ns[path_case_base(pc)][k]);
		}
		for (unsigned k = 0; k < o.npc; k++)
			printf(" %.1f |", path_ns[pc][k] - cc_ns[CC_EMPTY][0]);
		printf("\n");
	}
	printf("\n(+ CUBIC: a CUBIC controller per path, as sr_pc_ready makes them: p2c consults the gate of each "
	       "candidate, and the bookkeeping includes CUBIC's sent, gone and on_ack per packet; p2c + CUBIC's select "
	       "is less fixed k %% N + CUBIC)\n");
	return sink == 42 ? 3 : 0;
}
