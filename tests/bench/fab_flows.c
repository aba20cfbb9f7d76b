/* SPDX-License-Identifier: MIT */
/* Flows between hosts of a test fabric, with per-message completion times
 * (the permutation and incast experiments). One process per host,
 * each started with `ip netns exec` in its host's namespace on its afxdp
 * port, one embedded context holding every QP of that host: the senders
 * of the flows leaving it and the receivers of the flows reaching it (so
 * a receiver's EQDS pull pacer arbitrates between all the flows that
 * reach its port, as it would in a NIC). The processes meet through one
 * file all of them map shared: each publishes its QPs' numbers, GIDs, keys
 * and buffers per flow (struct ns_info of ns_pair.h), then connects each
 * QP to its peer's; once every QP of every host is in RTS, the first to
 * see it sets a common start time (CLOCK_MONOTONIC, one clock for every
 * namespace), 50 ms ahead.
 *
 * Traffic: each flow's sender writes messages (RDMA WRITE, signalled) into
 * its receiver's buffer, keeping --depth of them outstanding (a "bulk"
 * flow), or one at a time with --victim-gap-us between the completion of
 * one and the post of the next (a "victim" flow: the small messages whose
 * completion times incast hurts). It posts during --duration seconds from
 * the start, then waits for what is outstanding (bounded by --max-sec).
 * A message's completion time (FCT) runs from its post to its send
 * completion: for rc and sr, the acknowledgment of its last packet, half
 * an RTT after the receiver placed it. Messages posted in the first
 * --warmup seconds are left out of the statistics (the controllers' first
 * RTTs); goodput is the bytes of the counted messages that completed
 * before the end of the duration, over the duration less the warm-up.
 *
 * --stall-ms N: while a sender's oldest message has been outstanding more
 * than N ms, print "fab_flows stall ..." every N ms: its age, the QP's
 * retransmission counters and every path's bytes in flight, srtt and
 * controller window (what holds it).
 *
 * Idle: with --idle-us N a host that found nothing to do in 64 progress
 * calls in a row sleeps N us (timer slack 1 us) before the next: on a
 * 2-CPU machine that runs several hosts and switches, the busy ones get
 * the CPUs. 0 = busy polling.
 *
 *   fab_flows --shm FILE --host H --hosts N --dev afxdp:IFACE --flows SPEC
 *             [--duration S] [--warmup S] [--max-sec S]
 *             [--size B] [--depth N] [--victim-size B] [--victim-gap-us U]
 *             [--rel rc|sr] [--paths N] [--path-policy P] [--spray-min B] [--cc NAME]
 *             [--link-mbps N] [--base-rtt-us N] [--ack-every N] [--window-pkts N]
 *             [--rto-min-us N] [--rc-timeout T] [--idle-us N] [--out FILE] [--stall-ms N]
 *
 * SPEC: flows separated by commas, each SRC>DST or SRC>DST:victim, hosts
 * numbered 0..N-1 (e.g. "0>2,1>3,2>1,3>0"); every process gets the same.
 * Prints, for every flow it sends, "fab_flows flow k=v ...": id, src, dst,
 * class, msgs, bytes, goodput_mbps, p50_us, p99_us, max_us, mean_us and the
 * sender QP's counters (retx, rack, rto, spurious, cnps_rcvd, trim_nacks,
 * cc_blocked, paths_down, srtt_us, paths used and their packets' spread);
 * for every flow it receives "fab_flows rflow k=v ...": ce_rcvd,
 * cnps_sent, trims_rcvd, duplicates, pulls_sent; and one "fab_flows port
 * k=v ..." of its port: rx/tx packets, every drop reason that counted
 * (no_buffer: the AF_XDP socket's own drops, a full RX ring among them),
 * the process's CPU time (user, system: the kernel's TX path and what
 * softirq work ran in its syscalls) and how long it waited, runnable, for
 * a CPU (run_delay), from the start to the report. --out FILE gets one line
 * per counted message: "flow class size t_post_ns fct_ns run_delay_ns"
 * (t_post from the start; run_delay: how long this process waited,
 * runnable, for a CPU during the message). Exit 0, 1 on any failure (any
 * host's: the others stop too), 2 on a bad argument. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ns_pair.h"

#define FF_MAGIC 0x66666c77u         /* "ffl w" */
#define FF_MAX_FLOWS 64u
#define FF_MAX_HOSTS 32u
#define FF_MAX_DEPTH 64u
#define FF_MAX_SIZE (16u << 20)
#define FF_MAX_RECORDS (1u << 22)    /* messages one process keeps (4 M x 32 B) */
#define FF_START_AHEAD_NS 50000000ull /* the start, after the last QP reached RTS */
#define FF_CONNECT_WAIT_NS 30000000000ull
#define FF_IDLE_SPINS 64u
#define FF_TAIL_NS 20000000ull       /* after every sender is done: the last ACKs leave */
#define FF_GID_INDEX 1u              /* the port's first IPv4-mapped GID */
#define FF_POLL 32

enum ff_class { FF_BULK = 0, FF_VICTIM = 1 };
static const char *const class_name[] = { "bulk", "victim" };

struct ff_shm {
	uint32_t magic, nflows, nhosts, pad0;
	uint32_t failed __attribute__((aligned(64)));
	uint32_t ready __attribute__((aligned(64)));     /* QP ends published */
	uint32_t connected __attribute__((aligned(64))); /* QP ends in RTS */
	uint32_t done __attribute__((aligned(64)));      /* senders finished */
	uint64_t start_ns __attribute__((aligned(64)));  /* 0 until set, once */
	struct ns_info end[FF_MAX_FLOWS][2] __attribute__((aligned(64))); /* [flow][0 sender, 1 receiver] */
};

struct ff_flow {
	unsigned src, dst;
	enum ff_class cls;
};

struct ff_opts {
	const char *shm, *dev, *out;
	unsigned host, nhosts, nflows;
	struct ff_flow flow[FF_MAX_FLOWS];
	double duration, warmup, max_sec;
	uint64_t size, victim_size, depth, victim_gap_us, idle_us, rc_timeout, stall_ms;
	struct uroce_rel_attr rel;
	struct uroce_path_attr path;
	struct uroce_cc_attr cc;
};

/* a flow as one end of this host holds it */
struct ff_end {
	unsigned id;
	int role;               /* 0 sender, 1 receiver */
	struct uroce_qp *qp;
	uint8_t *buf;           /* its part of the host's buffer */
	uint64_t slot_bytes;    /* one message */
	unsigned nslots;
	/* sender */
	uint64_t size;
	unsigned depth, out;    /* outstanding allowed, outstanding now */
	uint64_t next_seq, done_seq;
	uint64_t t_post[FF_MAX_DEPTH]; /* by seq % depth */
	uint64_t rd_post[FF_MAX_DEPTH];
	uint64_t next_post_ns;  /* victim: not before this */
	uint64_t stall_next_ns; /* --stall-ms: the next report */
	uint64_t msgs, bytes, bytes_in_time;
	bool finished;          /* past the duration with nothing outstanding */
};

struct ff_rec {
	uint32_t flow, cls;
	uint64_t size, t_post, fct, run_delay;
};

static struct ff_shm *shm;
static struct ff_rec *recs;
static uint64_t nrecs;

static void bad(const char *opt, const char *val, const char *accepted)
{
	fprintf(stderr, "fab_flows: %s '%s': accepted: %s\n", opt, val, accepted);
	exit(2);
}

static uint64_t num(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted)
{
	uint64_t v;

	if (ns_parse_u64(s, lo, hi, &v))
		bad(opt, s, accepted);
	return v;
}

static void parse_flows(struct ff_opts *o, const char *spec)
{
	char *s = strdup(spec), *save = NULL, *t;

	o->nflows = 0;
	for (t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct ff_flow *f = &o->flow[o->nflows];
		char cls[16] = "";
		int n = 0;

		if (o->nflows == FF_MAX_FLOWS)
			bad("--flows", spec, "at most 64 flows");
		if (sscanf(t, "%u>%u%n", &f->src, &f->dst, &n) != 2 ||
		    (t[n] && (sscanf(t + n, ":%15s", cls) != 1 || strcmp(cls, "victim"))) || f->src == f->dst)
			bad("--flows", t, "SRC>DST or SRC>DST:victim, two different host numbers");
		f->cls = cls[0] ? FF_VICTIM : FF_BULK;
		o->nflows++;
	}
	free(s);
	if (!o->nflows)
		bad("--flows", spec, "one flow or more");
}

static void parse(struct ff_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 'f' },        { "host", required_argument, NULL, 'H' },
		{ "hosts", required_argument, NULL, 'N' },      { "dev", required_argument, NULL, 'd' },
		{ "flows", required_argument, NULL, 'F' },      { "duration", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },     { "max-sec", required_argument, NULL, 'D' },
		{ "size", required_argument, NULL, 's' },       { "depth", required_argument, NULL, 'q' },
		{ "victim-size", required_argument, NULL, 'S' }, { "victim-gap-us", required_argument, NULL, 'g' },
		{ "rel", required_argument, NULL, 'r' },        { "paths", required_argument, NULL, 'p' },
		{ "path-policy", required_argument, NULL, 'P' }, { "spray-min", required_argument, NULL, 'm' },
		{ "cc", required_argument, NULL, 'c' },         { "link-mbps", required_argument, NULL, 'l' },
		{ "base-rtt-us", required_argument, NULL, 'b' }, { "ack-every", required_argument, NULL, 'a' },
		{ "window-pkts", required_argument, NULL, 'W' }, { "rc-timeout", required_argument, NULL, 'T' },
		{ "idle-us", required_argument, NULL, 'i' },    { "out", required_argument, NULL, 'o' },
		{ "rto-min-us", required_argument, NULL, 'R' }, { "stall-ms", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },             { NULL, 0, NULL, 0 },
	};
	bool have_host = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->duration = 5;
	o->max_sec = 60;
	o->size = 65536;
	o->depth = 2;
	o->victim_size = 4096;
	o->victim_gap_us = 100;
	o->rc_timeout = 14;
	o->rel.reliability = UROCE_REL_SR;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'f': o->shm = optarg; break;
		case 'd': o->dev = optarg; break;
		case 'o': o->out = optarg; break;
		case 'H':
			o->host = (unsigned)num("--host", optarg, 0, FF_MAX_HOSTS - 1, "0 to 31");
			have_host = true;
			break;
		case 'N': o->nhosts = (unsigned)num("--hosts", optarg, 2, FF_MAX_HOSTS, "2 to 32"); break;
		case 'F': parse_flows(o, optarg); break;
		case 't': o->duration = ns_parse_sec("--duration", optarg, bad); break;
		case 'w':
			o->warmup = strtod(optarg, NULL);
			if (!(o->warmup >= 0 && o->warmup < 3600))
				bad("--warmup", optarg, "seconds in [0, 3600)");
			break;
		case 'D': o->max_sec = ns_parse_sec("--max-sec", optarg, bad); break;
		case 's': o->size = num("--size", optarg, 1, FF_MAX_SIZE, "1 to 16M bytes"); break;
		case 'q': o->depth = num("--depth", optarg, 1, FF_MAX_DEPTH, "1 to 64 messages"); break;
		case 'S': o->victim_size = num("--victim-size", optarg, 1, FF_MAX_SIZE, "1 to 16M bytes"); break;
		case 'g': o->victim_gap_us = num("--victim-gap-us", optarg, 0, 10000000, "0 to 10000000 us"); break;
		case 'r':
			if (uroce_reliability_parse(optarg, &o->rel.reliability) ||
			    (o->rel.reliability != UROCE_REL_RC && o->rel.reliability != UROCE_REL_SR))
				bad("--rel", optarg, "rc or sr");
			break;
		case 'p': o->path.npaths = (uint16_t)num("--paths", optarg, 1, UROCE_MAX_PATHS, "1 to 256"); break;
		case 'P':
			if (uroce_path_policy_parse(optarg, &o->path.policy))
				bad("--path-policy", optarg, "p2c, rr, random, single");
			break;
		case 'm': o->path.spray_min_bytes = (uint32_t)num("--spray-min", optarg, 1, UINT32_MAX, "bytes, 1 or more"); break;
		case 'c':
			if (uroce_cc_parse(optarg, &o->cc.algo))
				bad("--cc", optarg, "none, dcqcn, swift, cubic, eqds");
			break;
		case 'l': o->cc.link_mbps = (uint32_t)num("--link-mbps", optarg, 1, 10000000, "1 to 10000000"); break;
		case 'b': o->cc.base_rtt_us = (uint32_t)num("--base-rtt-us", optarg, 1, 10000000, "1 to 10000000"); break;
		case 'a': o->cc.ack_every_pkts = (uint32_t)num("--ack-every", optarg, 1, 1024, "1 to 1024"); break;
		case 'R': o->rel.rto_min_us = (uint32_t)num("--rto-min-us", optarg, 1, 10000000, "1 to 10000000"); break;
		case 'W': o->rel.window_pkts = (uint32_t)num("--window-pkts", optarg, 16, 1024, "16 to 1024"); break;
		case 'T': o->rc_timeout = num("--rc-timeout", optarg, 1, 31, "1 to 31 (4.096 us x 2^T)"); break;
		case 'i': o->idle_us = num("--idle-us", optarg, 0, 100000, "0 to 100000 us"); break;
		case 'x': o->stall_ms = num("--stall-ms", optarg, 1, 100000, "1 to 100000 ms"); break;
		case 'h':
			puts("usage: fab_flows --shm FILE --host H --hosts N --dev afxdp:IFACE --flows SPEC [options]"
			     " (see the head of tests/bench/fab_flows.c)");
			exit(0);
		default:
			fprintf(stderr, "fab_flows: see the head of tests/bench/fab_flows.c for the options\n");
			exit(2);
		}
	}
	if (optind < argc)
		bad("argument", argv[optind], "options only");
	if (!o->shm || !o->dev || !have_host || !o->nhosts || !o->nflows)
		bad("options", "(missing)", "--shm, --dev, --host, --hosts and --flows are required");
	if (o->host >= o->nhosts)
		bad("--host", "(number)", "below --hosts");
	for (unsigned i = 0; i < o->nflows; i++)
		if (o->flow[i].src >= o->nhosts || o->flow[i].dst >= o->nhosts)
			bad("--flows", "(host number)", "hosts below --hosts");
	if (o->warmup >= o->duration)
		bad("--warmup", "(seconds)", "less than --duration");
	if (o->rel.reliability == UROCE_REL_RC && (o->path.npaths > 1 || o->cc.algo != UROCE_CC_NONE))
		bad("--rel", "rc", "sr with --paths or --cc (rc keeps one path, no controller)");
}

static void progress(struct uroce_context *ctx)
{
	int rc = uroce_progress(ctx);

	if (rc < 0)
		ns_die_rc(rc, "transport");
}

/* wait until *w >= v, progressing meanwhile; a failure anywhere ends us */
static void wait_ge(struct uroce_context *ctx, const uint32_t *w, uint32_t v, const char *what)
{
	uint64_t end = ns_now_ns() + FF_CONNECT_WAIT_NS;

	for (unsigned k = 0;; k++) {
		if (ns_get(w) >= v)
			return;
		progress(ctx);
		if ((k & 63) == 0) {
			if (ns_get(&shm->failed))
				ns_die("another host failed (its log says why)");
			if (ns_now_ns() > end)
				ns_die("%s: not within %llu s", what, FF_CONNECT_WAIT_NS / 1000000000ull);
			if (k > 4096)
				usleep(100);
		}
	}
}

static void qp_connect(struct ff_end *e, const struct ns_info *me, const struct ns_info *peer, uint8_t rc_timeout)
{
	const char *stage;
	int rc = ns_qp_to_rts(e->qp, me, peer, rc_timeout, &stage);

	if (rc)
		ns_die_rc(rc, stage);
}

static void post(struct ff_end *e, const struct ns_info *peer, uint32_t lkey, uint64_t now)
{
	unsigned slot = (unsigned)(e->next_seq % e->nslots);
	struct uroce_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + slot * e->slot_bytes),
		.length = (uint32_t)e->size,
		.lkey = lkey,
	};
	struct uroce_send_wr wr = {
		.wr_id = (uint64_t)e->id << 48 | e->next_seq,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = UROCE_WR_RDMA_WRITE,
		.send_flags = UROCE_SEND_SIGNALED,
	};
	int rc;

	wr.wr.rdma.remote_addr = peer->addr + slot * e->slot_bytes;
	wr.wr.rdma.rkey = peer->rkey;
	e->t_post[e->next_seq % FF_MAX_DEPTH] = now;
	e->rd_post[e->next_seq % FF_MAX_DEPTH] = ns_run_delay_ns();
	rc = uroce_post_send(e->qp, &wr, NULL);
	if (rc)
		ns_die_rc(rc, "post_send");
	e->next_seq++;
	e->out++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, uint64_t n, double q)
{
	uint64_t k;

	if (!n)
		return 0;
	k = (uint64_t)(q * (double)n);
	if ((double)k < q * (double)n)
		k++;
	if (k < 1)
		k = 1;
	return (double)v[k - 1] / 1000.0;
}

static void report_sender(const struct ff_opts *o, const struct ff_end *e, double span_s)
{
	const struct ff_flow *f = &o->flow[e->id];
	struct uroce_qp_stats s;
	uint64_t *v = malloc((nrecs ? nrecs : 1) * sizeof(*v)), n = 0, sum = 0, pmin = UINT64_MAX, pmax = 0;
	unsigned used = 0, npaths = o->path.npaths ? o->path.npaths : 1;

	if (!v)
		ns_die("out of memory");
	for (uint64_t i = 0; i < nrecs; i++)
		if (recs[i].flow == e->id) {
			v[n++] = recs[i].fct;
			sum += recs[i].fct;
		}
	qsort(v, n, sizeof(*v), cmp_u64);
	uroce_qp_stats(e->qp, &s);
	for (unsigned i = 0; o->rel.reliability == UROCE_REL_SR && i < npaths; i++) {
		struct uroce_path_stats ps;

		if (uroce_qp_path_stats(e->qp, i, &ps))
			break;
		used += ps.tx_pkts > 0;
		pmin = ps.tx_pkts < pmin ? ps.tx_pkts : pmin;
		pmax = ps.tx_pkts > pmax ? ps.tx_pkts : pmax;
	}
	printf("fab_flows flow id=%u src=%u dst=%u class=%s size=%" PRIu64 " msgs=%" PRIu64 " bytes=%" PRIu64
	       " goodput_mbps=%.2f p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f retx=%" PRIu64
	       " rack=%" PRIu64 " rto=%" PRIu64 " tlp=%" PRIu64 " spurious=%" PRIu64 " cnps_rcvd=%" PRIu64
	       " trim_nacks=%" PRIu64 " cc_blocked=%" PRIu64 " paths_down=%" PRIu64 " srtt_us=%.1f paths_used=%u"
	       " path_pkts_min=%" PRIu64 " path_pkts_max=%" PRIu64 " tx_pkts=%" PRIu64 " rts=%" PRIu64 " pulls_rcvd=%" PRIu64
	       "\n",
	       e->id, f->src, f->dst, class_name[f->cls], e->size, n, e->bytes,
	       span_s > 0 ? (double)e->bytes_in_time * 8 / span_s / 1e6 : 0.0, pct_us(v, n, 0.5), pct_us(v, n, 0.9),
	       pct_us(v, n, 0.99), n ? (double)v[n - 1] / 1000.0 : 0.0, n ? (double)sum / (double)n / 1000.0 : 0.0,
	       s.retransmits, s.rack_losses, s.rto_losses, s.tlp_probes, s.spurious_retx, s.cnps_rcvd,
	       s.trim_nacks_rcvd, s.cc_blocked, s.paths_down, (double)s.srtt_ns / 1000.0, used,
	       pmin == UINT64_MAX ? 0 : pmin, pmax, s.tx_packets, s.cc_rts_sent, s.cc_pulls_rcvd);
	free(v);
}

static void report_stall(const struct ff_opts *o, struct ff_end *e, uint64_t now, uint64_t start)
{
	uint64_t age = now - e->t_post[e->done_seq % FF_MAX_DEPTH];
	unsigned npaths = o->path.npaths ? o->path.npaths : 1;
	struct uroce_qp_stats s;

	if (!o->stall_ms || !e->out || age < o->stall_ms * 1000000ull || now < e->stall_next_ns)
		return;
	e->stall_next_ns = now + o->stall_ms * 1000000ull;
	uroce_qp_stats(e->qp, &s);
	printf("fab_flows stall flow=%u t_ms=%.1f msg=%" PRIu64 " age_ms=%.1f retx=%" PRIu64 " rack=%" PRIu64 " rto=%" PRIu64
	       " timeouts=%" PRIu64 " tlp=%" PRIu64 " cc_blocked=%" PRIu64 " srtt_us=%.0f tx_pkts=%" PRIu64,
	       e->id, (double)(now - start) / 1e6, e->done_seq, (double)age / 1e6, s.retransmits, s.rack_losses,
	       s.rto_losses, s.timeouts, s.tlp_probes, s.cc_blocked, (double)s.srtt_ns / 1000.0, s.tx_packets);
	for (unsigned i = 0; o->rel.reliability == UROCE_REL_SR && i < npaths && i < 4; i++) {
		struct uroce_path_stats ps;

		if (uroce_qp_path_stats(e->qp, i, &ps))
			break;
		printf(" p%u=up%u/infl%u/srtt%.0f/win%" PRIu64 "/tx%" PRIu64 "/ack%" PRIu64 "/loss%" PRIu64, i, ps.up,
		       ps.inflight_bytes, (double)ps.srtt_ns / 1000.0, ps.cc_window_bytes, ps.tx_pkts, ps.acked_pkts,
		       ps.losses);
	}
	printf("\n");
}

static void report_receiver(const struct ff_opts *o, const struct ff_end *e)
{
	const struct ff_flow *f = &o->flow[e->id];
	struct uroce_qp_stats s;

	uroce_qp_stats(e->qp, &s);
	printf("fab_flows rflow id=%u src=%u dst=%u class=%s rx_pkts=%" PRIu64 " ce_rcvd=%" PRIu64 " cnps_sent=%" PRIu64
	       " trims_rcvd=%" PRIu64 " duplicates=%" PRIu64 " sacks_sent=%" PRIu64 " pulls_sent=%" PRIu64
	       " rts_rcvd=%" PRIu64 "\n",
	       e->id, f->src, f->dst, class_name[f->cls], s.rx_packets, s.ecn_ce_rcvd, s.cnps_sent, s.trims_rcvd,
	       s.duplicates, s.sacks_sent, s.cc_pulls_sent, s.cc_rts_rcvd);
}

static void report_port(const struct ff_opts *o, struct uroce_context *ctx, const struct rusage *ru0,
                        uint64_t rd0)
{
	struct uroce_port_stats ps;
	struct rusage ru;

	if (uroce_port_stats(ctx, 1, &ps))
		return;
	getrusage(RUSAGE_SELF, &ru);
	printf("fab_flows port host=%u rx_pkts=%" PRIu64 " tx_pkts=%" PRIu64 " cpu_user_s=%.3f cpu_sys_s=%.3f"
	       " run_delay_s=%.3f",
	       o->host, ps.rx_packets, ps.tx_packets,
	       (double)(ru.ru_utime.tv_sec - ru0->ru_utime.tv_sec) + (ru.ru_utime.tv_usec - ru0->ru_utime.tv_usec) / 1e6,
	       (double)(ru.ru_stime.tv_sec - ru0->ru_stime.tv_sec) + (ru.ru_stime.tv_usec - ru0->ru_stime.tv_usec) / 1e6,
	       (double)(ns_run_delay_ns() - rd0) / 1e9);
	for (unsigned r = 1; r < UROCE_DROP__COUNT; r++)
		if (ps.drops[r])
			printf(" drop_%s=%" PRIu64, uroce_drop_reason_name((enum uroce_drop_reason)r), ps.drops[r]);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct ff_opts o;
	struct uroce_context_attr ca = { 0 };
	struct uroce_context *ctx;
	struct uroce_port_attr pa;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_mr *mr;
	struct ff_end ends[2 * FF_MAX_FLOWS];
	unsigned nends = 0;
	uint64_t total = 0, off = 0, start, post_end, hard_end, warm_end;
	uint8_t gid[16], *buf;
	struct timespec idle;
	struct rusage ru0;
	uint64_t rd0;
	FILE *out = NULL;
	int rc;

	ns_name = "fab_flows";
	parse(&o, argc, argv);
	shm = ns_map(o.shm, sizeof(*shm));
	ns_fail_word(&shm->failed);
	if (shm->magic && (shm->magic != FF_MAGIC || shm->nflows != o.nflows || shm->nhosts != o.nhosts))
		ns_die("%s belongs to another run (other flows or hosts)", o.shm);
	shm->magic = FF_MAGIC; /* every host writes the same values */
	shm->nflows = o.nflows;
	shm->nhosts = o.nhosts;
	if (o.out && !(out = fopen(o.out, "w")))
		ns_die("cannot write %s: %s", o.out, strerror(errno));
	recs = calloc(FF_MAX_RECORDS, sizeof(*recs));
	if (!recs)
		ns_die("out of memory for the message records");
	prctl(PR_SET_TIMERSLACK, 1000ul);

	/* this host's ends and their buffers: depth messages per sender, and
	 * the same per receiver (the sender writes slot k % depth) */
	for (unsigned i = 0; i < o.nflows; i++)
		for (int role = 0; role < 2; role++) {
			const struct ff_flow *f = &o.flow[i];
			struct ff_end *e;

			if ((role == 0 ? f->src : f->dst) != o.host)
				continue;
			e = &ends[nends++];
			memset(e, 0, sizeof(*e));
			e->id = i;
			e->role = role;
			e->size = f->cls == FF_VICTIM ? o.victim_size : o.size;
			e->depth = f->cls == FF_VICTIM ? 1 : (unsigned)o.depth;
			e->nslots = e->depth;
			e->slot_bytes = (e->size + 63) & ~63ull;
			total += e->slot_bytes * e->nslots;
		}
	if (!nends)
		ns_die("host %u has no flow", o.host);
	buf = aligned_alloc(4096, (total + 4095) & ~4095ull);
	if (!buf)
		ns_die("out of memory for %" PRIu64 " bytes of buffers", total);
	memset(buf, 0x5a, total);
	for (unsigned k = 0; k < nends; k++) {
		ends[k].buf = buf + off;
		off += ends[k].slot_bytes * ends[k].nslots;
	}

	ca.port = o.dev;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	if ((rc = uroce_context_create(&ctx, &ca)) != 0)
		ns_die_rc(rc, o.dev);
	if ((rc = uroce_query_port(ctx, 1, &pa)) != 0)
		ns_die_rc(rc, "query_port");
	if ((rc = uroce_query_gid(ctx, 1, FF_GID_INDEX, gid)) != 0)
		ns_die_rc(rc, "the port has no IPv4 GID (index 1)");
	if ((rc = uroce_pd_alloc(ctx, &pd)) != 0)
		ns_die_rc(rc, "pd_alloc");
	if ((rc = uroce_mr_reg(pd, buf, total, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &mr)) != 0)
		ns_die_rc(rc, "mr_reg");
	if ((rc = uroce_cq_create(ctx, 4096, &scq)) != 0 || (rc = uroce_cq_create(ctx, 64, &rcq)) != 0)
		ns_die_rc(rc, "cq_create");
	for (unsigned k = 0; k < nends; k++) {
		struct ff_end *e = &ends[k];
		struct ns_info *me = &shm->end[e->id][e->role];
		struct uroce_qp_init_attr ia = { 0 };

		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = scq;
		ia.recv_cq = rcq;
		ia.cap.max_send_wr = FF_MAX_DEPTH;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.rel = o.rel;
		if (o.rel.reliability == UROCE_REL_SR) {
			ia.path = o.path;
			ia.cc = o.cc;
		}
		if ((rc = uroce_qp_create(pd, &ia, &e->qp)) != 0)
			ns_die_rc(rc, "qp_create");
		ns_qp_init(e->qp);
		me->qpn = uroce_qp_num(e->qp);
		me->token = uroce_qp_token(e->qp);
		me->psn = 1000u + 7919u * e->id + 104729u * (unsigned)e->role;
		me->nports = 1;
		memcpy(me->gid[0], gid, 16);
		me->rkey = mr->rkey;
		me->active_mtu[0] = (uint32_t)pa.active_mtu;
		me->addr = (uint64_t)(uintptr_t)e->buf;
		me->len = e->slot_bytes * e->nslots;
		__atomic_add_fetch(&shm->ready, 1, __ATOMIC_RELEASE);
	}
	wait_ge(ctx, &shm->ready, 2 * o.nflows, "the other hosts' QPs");
	for (unsigned k = 0; k < nends; k++) {
		struct ff_end *e = &ends[k];

		qp_connect(e, &shm->end[e->id][e->role], &shm->end[e->id][!e->role], (uint8_t)o.rc_timeout);
		__atomic_add_fetch(&shm->connected, 1, __ATOMIC_RELEASE);
	}
	wait_ge(ctx, &shm->connected, 2 * o.nflows, "the other hosts' QPs in RTS");
	{
		uint64_t zero = 0, s = ns_now_ns() + FF_START_AHEAD_NS;

		__atomic_compare_exchange_n(&shm->start_ns, &zero, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	start = __atomic_load_n(&shm->start_ns, __ATOMIC_ACQUIRE);
	post_end = start + (uint64_t)(o.duration * 1e9);
	warm_end = start + (uint64_t)(o.warmup * 1e9);
	hard_end = start + (uint64_t)(o.max_sec * 1e9);
	while (ns_now_ns() < start)
		progress(ctx);
	getrusage(RUSAGE_SELF, &ru0);
	rd0 = ns_run_delay_ns();

	idle.tv_sec = 0;
	idle.tv_nsec = (long)(o.idle_us * 1000);
	for (unsigned spins = 0, k2 = 0;; k2++) {
		uint64_t now = ns_now_ns();
		struct uroce_wc wc[FF_POLL];
		int n, work;

		work = uroce_progress(ctx);
		if (work < 0)
			ns_die_rc(work, "transport");
		n = uroce_poll_cq(scq, FF_POLL, wc);
		if (n < 0)
			ns_die_rc(n, "poll_cq");
		for (int i = 0; i < n; i++) {
			unsigned id = (unsigned)(wc[i].wr_id >> 48);
			uint64_t seq = wc[i].wr_id & ((1ull << 48) - 1);
			struct ff_end *e = NULL;
			uint64_t tp;

			for (unsigned k = 0; k < nends; k++)
				if (ends[k].id == id && ends[k].role == 0)
					e = &ends[k];
			if (e && wc[i].status != UROCE_WC_SUCCESS)
				report_sender(&o, e, 0); /* its counters say why */
			if (!e || wc[i].status != UROCE_WC_SUCCESS)
				ns_die("flow %u: completion %s (vendor_err %u)", id, uroce_wc_status_str(wc[i].status),
				        wc[i].vendor_err);
			if (seq != e->done_seq)
				ns_die("flow %u: completion of message %" PRIu64 ", expected %" PRIu64, id, seq, e->done_seq);
			tp = e->t_post[seq % FF_MAX_DEPTH];
			e->done_seq++;
			e->out--;
			if (tp >= warm_end && tp < post_end) {
				if (nrecs < FF_MAX_RECORDS) {
					struct ff_rec *r = &recs[nrecs++];

					r->flow = id;
					r->cls = o.flow[id].cls;
					r->size = e->size;
					r->t_post = tp - start;
					r->fct = now - tp;
					r->run_delay = ns_run_delay_ns() - e->rd_post[seq % FF_MAX_DEPTH];
				}
				e->msgs++;
				e->bytes += e->size;
				if (now <= post_end)
					e->bytes_in_time += e->size;
			}
			if (o.flow[id].cls == FF_VICTIM)
				e->next_post_ns = now + o.victim_gap_us * 1000;
		}
		if (o.stall_ms && k2 % 64 == 0)
			for (unsigned k = 0; k < nends; k++)
				if (ends[k].role == 0)
					report_stall(&o, &ends[k], now, start);
		if (now < post_end) {
			for (unsigned k = 0; k < nends; k++) {
				struct ff_end *e = &ends[k];

				while (e->role == 0 && e->out < e->depth && now >= e->next_post_ns) {
					post(e, &shm->end[e->id][1], mr->lkey, now);
					work++;
				}
			}
		} else if (k2 % 64 == 0) {
			/* past the duration, a sender with nothing outstanding is done */
			for (unsigned k = 0; k < nends; k++) {
				struct ff_end *e = &ends[k];

				if (e->role == 0 && !e->finished && !e->out) {
					e->finished = true;
					__atomic_add_fetch(&shm->done, 1, __ATOMIC_RELEASE);
				}
			}
			if (ns_get(&shm->failed))
				ns_die("another host failed (its log says why)");
			if (ns_get(&shm->done) >= o.nflows)
				break;
			if (now > hard_end)
				ns_die("the senders did not finish within --max-sec %.0f s (%u of %u done)", o.max_sec,
				        ns_get(&shm->done), o.nflows);
		}
		if (n || work) {
			spins = 0;
		} else if (o.idle_us && ++spins >= FF_IDLE_SPINS) {
			spins = 0;
			nanosleep(&idle, NULL);
		}
	}
	/* the last ACKs of the receivers leave */
	for (uint64_t end = ns_now_ns() + FF_TAIL_NS; ns_now_ns() < end;)
		progress(ctx);
	for (unsigned k = 0; k < nends; k++) {
		if (ends[k].role == 0)
			report_sender(&o, &ends[k], o.duration - o.warmup);
		else
			report_receiver(&o, &ends[k]);
	}
	report_port(&o, ctx, &ru0, rd0);
	if (out) {
		for (uint64_t i = 0; i < nrecs; i++)
			fprintf(out, "%u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", recs[i].flow,
			        class_name[recs[i].cls], recs[i].size, recs[i].t_post, recs[i].fct, recs[i].run_delay);
		fclose(out);
	}
	for (unsigned k = 0; k < nends; k++)
		uroce_qp_destroy(ends[k].qp);
	uroce_cq_destroy(scq);
	uroce_cq_destroy(rcq);
	uroce_mr_dereg(mr);
	uroce_pd_free(pd);
	uroce_context_destroy(ctx);
	free(buf);
	free(recs);
	return 0;
}
