/* SPDX-License-Identifier: MIT */
/* Failover time and throughput across a link failure (SHIFT section 5.1.1)
 * for one rc/sr QP with a backup, between two processes in two namespaces
 * over tests/netns/fo_topo.sh's two rails (fo_pair.h). The sender keeps
 * --depth RDMA WRITEs of --msg bytes in flight, all signaled; the receiver
 * only runs its transport. The sender fails rail 1 itself: it takes A's
 * port of the rail's bridge (--switch NSPATH:IF, "s1a" in the switch
 * namespace S1) down with SIOCSIFFLAGS on a socket it made in that
 * namespace, which drops the carrier of A's va1 (the veth peer) at once,
 * and the transport sees it through netlink.
 *
 * --mode time: --trials failures. In each, with the QP on member 0 and
 * WRITEs completing, t0 = CLOCK_MONOTONIC right before the ioctl; then the
 * QP's uroce_failover_info gives when the failure was detected
 * (last_fail_ns) and when the first packet left by the backup
 * (last_switch_tx_ns, the engine's CLOCK_MONOTONIC): failover time =
 * last_switch_tx_ns - t0. Then the port comes up again and the trial waits
 * for the fail-back (back on member 0, state Default) before the next. A
 * line per trial, "failover_bench trial=K ioctl_us=.. detect_us=..
 * switch_us=.. cause=link|rto|.. failback_ms=.. backup_writes=.." (cause:
 * what failed the member, the netlink message or timeouts, whichever came
 * first; failback: from the ioctl that brings the port up to the first
 * packet on member 0 again, which waits for the bridge to forward on its
 * port again; backup_writes: WRITEs completed in the 20 ms on the backup),
 * then "failover_bench summary rel=R n=N by_link=L switch_p50_us=..
 * switch_p99_us=.. switch_max_us=.. detect_p50_us=.. detect_p99_us=..
 * detect_max_us=.. ioctl_p50_us=.. failback_p50_ms=..".
 *
 * The transport learns of the carrier loss from the kernel's netlink
 * message (IFF_RUNNING), which the kernel's linkwatch worker sends once it
 * runs: at once for a veth whose peer has another index (fo_topo.sh's
 * "urgent" topology) but then only once that worker gets a CPU, which on a
 * machine whose every CPU runs a busy-polling end takes milliseconds
 * (failover_bench.sh also runs the trials with both ends on one CPU); at
 * most once a second otherwise ("batched", as for a physical NIC), when
 * the rc/sr timeouts usually find the failure first.
 *
 * --mode tput: --duration seconds of traffic, rail 1 down at --fail-at and
 * up at --recover-at; goodput (bytes of completed WRITEs) every --bin-ms
 * written to --csv as "t_ms,gbps" rows after "# event,NAME,T_MS" lines
 * (down, detect, switch, up, failback; T from the start of the traffic).
 *
 *   failover_bench --role send|recv --dev afxdp:IF1,afxdp:IF2 --shm FILE --rel rc|sr
 *                  [--mode time|tput] [--switch NSPATH:IF] [--trials N] [--msg B] [--depth N]
 *                  [--duration S] [--fail-at S] [--recover-at S] [--bin-ms M] [--csv FILE]
 *                  [--max-sec S] [--rc-timeout T] [--rto-min-us U] [--rto-fail N]
 *
 * Exit 0, 1 on any failure (either end's, a WR that fails, a failover or
 * fail-back that does not come within its bound), 2 on a bad argument. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fo_pair.h"

#define FB_MAX_TRIALS 10000u
#define FB_MAX_BINS 100000u
#define FB_POLL_BATCH 16
#define FB_SWITCH_WAIT_NS 3000000000ull    /* a failover must come within 3 s of the ioctl */
#define FB_FAILBACK_WAIT_NS 15000000000ull /* a fail-back within 15 s of the port's return */
#define FB_STEADY_NS 20000000ull           /* traffic on a member this long before a change */
#define FB_WARM_NS 300000000ull

struct fb_shm {
	struct ns_hdr h;
	uint32_t done __attribute__((aligned(64))); /* sender: finished, the receiver may go */
};

enum fb_mode { FB_TIME, FB_TPUT };

struct fb_opts {
	struct ns_args a; /* --role, --dev, --shm, --max-sec, --rc-timeout */
	bool rel_set;
	enum fb_mode mode;
	const char *sw, *csv;
	struct ns_qp_opts q;
	uint64_t trials, msg, depth, bin_ms;
	double duration, fail_at, recover_at;
};

/* The sender's stream of WRITEs. */
struct fb_stream {
	struct ns_end *e;
	const struct fb_opts *o;
	uint8_t *buf;
	uint64_t posted, completed, bytes;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: failover_bench --role send|recv --dev afxdp:IF1,afxdp:IF2 --shm FILE --rel rc|sr\n"
	           "                      [--mode time|tput] [--switch NSPATH:IF] [--trials N] [--msg B] [--depth N]\n"
	           "                      [--duration S] [--fail-at S] [--recover-at S] [--bin-ms M] [--csv FILE]\n"
	           "                      [--max-sec S] [--rc-timeout T] [--rto-min-us U] [--rto-fail N]\n");
}

static void parse(int argc, char **argv, struct fb_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS, NS_ARGS_RC_TIMEOUT_OPTION,
		{ "rel", required_argument, NULL, 'm' }, { "mode", required_argument, NULL, 'M' },
		{ "switch", required_argument, NULL, 's' }, { "trials", required_argument, NULL, 'n' },
		{ "msg", required_argument, NULL, 'b' }, { "depth", required_argument, NULL, 'q' },
		{ "duration", required_argument, NULL, 'u' }, { "fail-at", required_argument, NULL, 'a' },
		{ "recover-at", required_argument, NULL, 'A' }, { "bin-ms", required_argument, NULL, 'B' },
		{ "csv", required_argument, NULL, 'c' }, { "rto-min-us", required_argument, NULL, 'R' },
		{ "rto-fail", required_argument, NULL, 'F' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	ns_args_init("failover_bench", usage);
	memset(o, 0, sizeof(*o));
	o->q.fo.nbackups = 1;
	o->a.rc_timeout = 12;
	o->trials = 100;
	o->msg = 65536;
	o->depth = 16;
	o->bin_ms = 10;
	o->duration = 3;
	o->fail_at = 1;
	o->recover_at = 2;
	o->a.max_sec = 600;
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'M':
			if (!strcmp(optarg, "time"))
				o->mode = FB_TIME;
			else if (!strcmp(optarg, "tput"))
				o->mode = FB_TPUT;
			else
				ns_bad("--mode", optarg, "time or tput");
			break;
		case 's':
			o->sw = optarg;
			break;
		case 'n':
			o->trials = ns_arg_u64("--trials", optarg, 1, FB_MAX_TRIALS, "1 to 10000");
			break;
		case 'b':
			o->msg = ns_arg_u64("--msg", optarg, 64, 16u << 20, "64 to 16m bytes");
			break;
		case 'q':
			o->depth = ns_arg_u64("--depth", optarg, 1, 1024, "1 to 1024 WRITEs");
			break;
		case 'u':
			o->duration = fo_arg_secs("--duration", optarg);
			break;
		case 'a':
			o->fail_at = fo_arg_secs("--fail-at", optarg);
			break;
		case 'A':
			o->recover_at = fo_arg_secs("--recover-at", optarg);
			break;
		case 'B':
			o->bin_ms = ns_arg_u64("--bin-ms", optarg, 1, 1000, "1 to 1000 ms");
			break;
		case 'c':
			o->csv = optarg;
			break;
		default:
			if (!fo_qp_option(&o->q, c, optarg, &o->rel_set))
				ns_help_or_bad(c);
		}
	}
	o->q.rc_timeout = (uint8_t)o->a.rc_timeout;
	ns_args_end(argc, argv, ns_args_missing(&o->a) || !o->rel_set,
	            "--role, --dev, --shm and --rel");
	if (o->a.role == NS_SENDER && !o->sw)
		ns_bad("--switch", "(none)", "NSPATH:IF, the bridge port to take down (the sender needs it)");
	if (o->a.role == NS_SENDER && o->mode == FB_TPUT && !o->csv)
		ns_bad("--csv", "(none)", "a file for the time series (--mode tput needs it)");
	if (!(o->fail_at < o->recover_at && o->recover_at < o->duration))
		ns_bad("--fail-at/--recover-at", "", "fail-at < recover-at < duration");
	if (o->duration * 1000 / (double)o->bin_ms > FB_MAX_BINS)
		ns_bad("--bin-ms", "", "at most 100000 bins over --duration");
	o->q.rel.ordering = UROCE_ORDER_ORDERED;
	o->q.sq = (uint32_t)o->depth;
	o->q.rq = 16;
	o->q.cqe = (int)(2 * o->depth + 16);
}

static void post_write(struct fb_stream *s)
{
	const struct ns_info *peer = &s->e->h->info[NS_RECEIVER];
	uint64_t slot = s->posted % s->o->depth;
	struct uroce_sge sge = { (uint64_t)(uintptr_t)(s->buf + slot * s->o->msg), (uint32_t)s->o->msg,
		                 s->e->mr->lkey };
	struct uroce_send_wr wr = { 0 }, *badwr;
	int rc;

	wr.wr_id = s->posted;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = peer->addr + slot * s->o->msg;
	wr.wr.rdma.rkey = peer->rkey;
	if ((rc = uroce_post_send(s->e->qp, &wr, &badwr)) != 0)
		ns_die_rc(rc, "post_send");
	s->posted++;
}

/* Progress, then the WRITEs completed since: each must succeed, in post
 * order. */
static void reap(struct fb_stream *s)
{
	struct uroce_wc wc[FB_POLL_BATCH];
	int n;

	ns_progress(s->e);
	n = uroce_poll_cq(s->e->scq, FB_POLL_BATCH, wc);
	if (n < 0)
		ns_die_rc(n, "poll_cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != UROCE_WC_SUCCESS)
			ns_die("WRITE %" PRIu64 " failed: %s", wc[i].wr_id, uroce_wc_status_str(wc[i].status));
		if (wc[i].wr_id != s->completed)
			ns_die("completion out of order: wanted %" PRIu64 ", got %" PRIu64, s->completed, wc[i].wr_id);
		s->completed++;
		s->bytes += s->o->msg;
	}
}

/* One turn: progress, completions, the window refilled. */
static void pump(struct fb_stream *s)
{
	reap(s);
	while (s->posted - s->completed < s->o->depth)
		post_write(s);
}

/* Pump until cond(fi) holds (0) or timeout_ns passes (-ETIMEDOUT). */
typedef bool (*fb_cond)(const struct uroce_failover_info *fi, const void *arg);
static int pump_until(struct fb_stream *s, fb_cond cond, const void *arg, uint64_t timeout_ns,
                      struct uroce_failover_info *fi)
{
	uint64_t end = ns_now_ns() + timeout_ns;

	for (unsigned turn = 0;; turn++) {
		pump(s);
		fo_info(s->e, fi);
		if (cond(fi, arg))
			return 0;
		if (turn % 64 == 0) {
			ns_check_peer(s->e);
			if (ns_now_ns() > end)
				return -ETIMEDOUT;
		}
	}
}

static void pump_for(struct fb_stream *s, uint64_t ns)
{
	uint64_t end = ns_now_ns() + ns;

	while (ns_now_ns() < end)
		pump(s);
	ns_check_peer(s->e);
}

struct fb_mark {
	uint64_t failovers, failbacks, t0;
};

static bool on_primary(const struct uroce_failover_info *fi, const void *arg)
{
	(void)arg;
	return fi->state == UROCE_FO_DEFAULT && fi->active == 0 && fi->up_mask == 0x3;
}

static bool switched(const struct uroce_failover_info *fi, const void *arg)
{
	const struct fb_mark *m = arg;

	return fi->failovers > m->failovers && fi->active != 0 && fi->last_switch_tx_ns >= m->t0;
}

static bool failed_back(const struct uroce_failover_info *fi, const void *arg)
{
	const struct fb_mark *m = arg;

	return fi->failbacks > m->failbacks && fi->state == UROCE_FO_DEFAULT && fi->active == 0 &&
	       fi->last_switch_tx_ns >= m->t0;
}

/* Nearest-rank percentile of n sorted values. */
static uint64_t pct(const uint64_t *v, unsigned n, double p)
{
	unsigned k = (unsigned)(p / 100.0 * n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static void summary_of(const char *name, uint64_t *v, unsigned n, double div, const char *unit)
{
	ns_sort_u64(v, n);
	printf(" %s_p50_%s=%.1f %s_p99_%s=%.1f %s_max_%s=%.1f", name, unit, (double)pct(v, n, 50) / div, name, unit,
	       (double)pct(v, n, 99) / div, name, unit, (double)v[n - 1] / div);
}

static void run_time(struct fb_stream *s, const struct fo_ifctl *sw)
{
	const struct fb_opts *o = s->o;
	unsigned n = (unsigned)o->trials;
	uint64_t *sw_ns = calloc(n, 8), *det_ns = calloc(n, 8), *io_ns = calloc(n, 8), *fb_ns = calloc(n, 8);
	struct uroce_failover_info fi;
	struct fb_mark m;
	unsigned by_link = 0;

	if (!sw_ns || !det_ns || !io_ns || !fb_ns)
		ns_die("out of memory");
	pump_for(s, FB_WARM_NS);
	for (unsigned k = 0; k < n; k++) {
		const char *cause;
		uint64_t t1, c0;

		if (pump_until(s, on_primary, NULL, FB_FAILBACK_WAIT_NS, &fi))
			ns_die("trial %u: the QP is not back on member 0 with both up", k);
		c0 = s->completed;
		pump_for(s, FB_STEADY_NS);
		if (s->completed == c0)
			ns_die("trial %u: no WRITE completed in %.0f ms on member 0", k, FB_STEADY_NS / 1e6);
		fo_info(s->e, &fi);
		m.failovers = fi.failovers;
		m.failbacks = fi.failbacks;
		m.t0 = ns_now_ns();
		fo_ifctl_set(sw, false);
		t1 = ns_now_ns();
		if (pump_until(s, switched, &m, FB_SWITCH_WAIT_NS, &fi))
			ns_die("trial %u: no failover within %.0f s of the link down", k, FB_SWITCH_WAIT_NS / 1e9);
		cause = uroce_fo_cause_str(fi.last_cause);
		if (fi.last_cause == UROCE_FO_CAUSE_LINK)
			by_link++;
		io_ns[k] = t1 - m.t0;
		sw_ns[k] = fi.last_switch_tx_ns - m.t0;
		det_ns[k] = fi.last_fail_ns > m.t0 ? fi.last_fail_ns - m.t0 : 0;
		c0 = s->completed;
		pump_for(s, FB_STEADY_NS);
		m.t0 = ns_now_ns();
		fo_ifctl_set(sw, true);
		if (pump_until(s, failed_back, &m, FB_FAILBACK_WAIT_NS, &fi))
			ns_die("trial %u: no fail-back within %.0f s of the link's return", k, FB_FAILBACK_WAIT_NS / 1e9);
		fb_ns[k] = fi.last_switch_tx_ns - m.t0;
		printf("failover_bench trial=%u ioctl_us=%.1f detect_us=%.1f switch_us=%.1f cause=%s failback_ms=%.1f "
		       "backup_writes=%" PRIu64 "\n",
		       k, io_ns[k] / 1e3, det_ns[k] / 1e3, sw_ns[k] / 1e3, cause, fb_ns[k] / 1e6, s->completed - c0);
		fflush(stdout);
	}
	printf("failover_bench summary rel=%s n=%u by_link=%u", o->q.rel.reliability == UROCE_REL_SR ? "sr" : "rc", n,
	       by_link);
	summary_of("switch", sw_ns, n, 1e3, "us");
	summary_of("detect", det_ns, n, 1e3, "us");
	summary_of("ioctl", io_ns, n, 1e3, "us");
	summary_of("failback", fb_ns, n, 1e6, "ms");
	printf("\n");
	free(sw_ns);
	free(det_ns);
	free(io_ns);
	free(fb_ns);
}

static void run_tput(struct fb_stream *s, const struct fo_ifctl *sw)
{
	const struct fb_opts *o = s->o;
	uint64_t bin_ns = o->bin_ms * 1000000ull, dur_ns = (uint64_t)(o->duration * 1e9);
	uint64_t fail_ns = (uint64_t)(o->fail_at * 1e9), rec_ns = (uint64_t)(o->recover_at * 1e9);
	unsigned nbins = (unsigned)((dur_ns + bin_ns - 1) / bin_ns), b = 0;
	uint64_t *bytes = calloc(nbins, 8), t_start, t_down = 0, t_up = 0, t_det = 0, t_sw = 0, t_fb = 0;
	struct uroce_failover_info fi, f0;
	bool down = false, up = false;
	FILE *f;

	if (!bytes)
		ns_die("out of memory");
	pump_for(s, FB_WARM_NS);
	if (pump_until(s, on_primary, NULL, FB_FAILBACK_WAIT_NS, &f0))
		ns_die("the QP is not on member 0 with both up before the run");
	t_start = ns_now_ns();
	s->bytes = 0;
	for (unsigned turn = 0;; turn++) {
		uint64_t now = ns_now_ns(), t = now - t_start;

		while (b < nbins && t >= (uint64_t)(b + 1) * bin_ns)
			bytes[b++] = s->bytes; /* cumulative at the bin's end */
		if (t >= dur_ns)
			break;
		if (!down && t >= fail_ns) {
			t_down = ns_now_ns();
			fo_ifctl_set(sw, false);
			down = true;
		}
		if (down && !up && t >= rec_ns) {
			t_up = ns_now_ns();
			fo_ifctl_set(sw, true);
			up = true;
		}
		pump(s);
		fo_info(s->e, &fi);
		if (down && !t_sw && fi.failovers > f0.failovers && fi.last_switch_tx_ns >= t_down) {
			t_sw = fi.last_switch_tx_ns;
			t_det = fi.last_fail_ns;
		}
		if (up && !t_fb && fi.failbacks > f0.failbacks && fi.active == 0 && fi.last_switch_tx_ns >= t_up)
			t_fb = fi.last_switch_tx_ns;
		if (turn % 64 == 0)
			ns_check_peer(s->e);
	}
	while (b < nbins)
		bytes[b++] = s->bytes;
	if (!(f = fopen(o->csv, "w")))
		ns_die("cannot write %s: %s", o->csv, strerror(errno));
#define FB_EV(name, t) \
	if (t)         \
		fprintf(f, "# event,%s,%.3f\n", name, (double)((t) - t_start) / 1e6)
	FB_EV("down", t_down);
	FB_EV("detect", t_det);
	FB_EV("switch", t_sw);
	FB_EV("up", t_up);
	FB_EV("failback", t_fb);
#undef FB_EV
	fprintf(f, "t_ms,gbps\n");
	for (unsigned i = 0; i < nbins; i++) {
		uint64_t d = bytes[i] - (i ? bytes[i - 1] : 0);

		fprintf(f, "%.1f,%.4f\n", (double)(i + 1) * o->bin_ms, (double)d * 8.0 / (double)bin_ns);
	}
	fclose(f);
	printf("failover_bench tput rel=%s bins=%u bin_ms=%" PRIu64 " gbytes=%.3f down_ms=%.3f detect_ms=%.3f "
	       "switch_ms=%.3f up_ms=%.3f failback_ms=%.3f\n",
	       o->q.rel.reliability == UROCE_REL_SR ? "sr" : "rc", nbins, o->bin_ms, (double)s->bytes / 1e9,
	       (double)(t_down - t_start) / 1e6, t_det ? (double)(t_det - t_start) / 1e6 : -1.0,
	       t_sw ? (double)(t_sw - t_start) / 1e6 : -1.0, (double)(t_up - t_start) / 1e6,
	       t_fb ? (double)(t_fb - t_start) / 1e6 : -1.0);
	if (!t_sw)
		ns_die("no failover after the link went down");
	if (!t_fb)
		ns_die("no fail-back after the link came back within the run");
	free(bytes);
}

static void drain(struct fb_stream *s)
{
	uint64_t end = ns_now_ns() + FB_SWITCH_WAIT_NS;

	while (s->completed < s->posted) {
		reap(s);
		if (ns_now_ns() > end)
			ns_die("the last WRITEs did not complete");
	}
}

int main(int argc, char **argv)
{
	struct uroce_failover_info fi;
	struct fb_opts o;
	struct ns_end e;
	struct fb_shm *x;
	char info[256];
	uint8_t *buf;
	size_t len;

	ns_name = "failover_bench";
	parse(argc, argv, &o);
	len = o.depth * o.msg;
	if (!(buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096)))
		ns_die("cannot allocate %zu bytes", len);
	memset(buf, 0x5a, len);
	x = ns_map(o.a.shm, sizeof(*x));
	fo_open(&e, &x->h, o.a.role, o.a.dev, buf, len, &o.q);
	ns_connect(&e, &o.q, 30);
	if (o.a.role == NS_SENDER) {
		struct fb_stream s = { .e = &e, .o = &o, .buf = buf };
		struct fo_ifctl sw;

		fo_ifctl_open(&sw, o.sw);
		if (!fo_ifctl_up(&sw))
			ns_die("%s is down before the run", sw.ifname);
		if (o.mode == FB_TIME)
			run_time(&s, &sw);
		else
			run_tput(&s, &sw);
		drain(&s);
		ns_put(&x->done, 1);
	} else {
		uint64_t end = ns_now_ns() + (uint64_t)(o.a.max_sec * 1e9);

		for (unsigned turn = 0; !ns_get(&x->done); turn++) {
			ns_progress(&e);
			if (turn % 64 == 0) {
				ns_check_peer(&e);
				if (ns_now_ns() > end)
					ns_die("ran past --max-sec %.0f", o.a.max_sec);
			}
		}
	}
	fo_info(&e, &fi);
	printf("failover_bench %s final %s\n", e.name, fo_info_str(&fi, e.has_fo, info, sizeof(info)));
	ns_close(&e);
	free(buf);
	return 0;
}
