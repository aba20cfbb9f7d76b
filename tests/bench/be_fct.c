/* SPDX-License-Identifier: MIT */
/* Per-message completion time of one reliability mode on an afxdp port:
 * the time from the sender's start of a message (the handshake, then its
 * post) to the receiver's completion of it (OptiNIC's measure), closed
 * loop. The two ends
 * are two processes, each started by `ip netns exec` in its namespace;
 * they meet through a shared file (ns_pair.h) and both stamp with
 * CLOCK_MONOTONIC, which is one clock for every namespace.
 *
 * Message i, closed loop (one in flight, so a time is the message's own and
 * not a queue's):
 *   sender:   t_ask = now, want = i + 1; waits for posted >= i + 1
 *   receiver: posts receive i (its be deadline starts here), posted = i + 1
 *   sender:   t_post = now, posts SEND i (SIGNALED)
 *   receiver: polls until the receive completes (whole, or for be at its
 *             deadline or preempted), t_done = now, done = i + 1
 *   sender:   waits for its own send completion and done >= i + 1
 * so message i + 1 starts after message i ended at both ends. The send
 * stops after --count messages or --max-sec seconds, whichever is first.
 * The time of message i is t_done - t_ask: it includes the handshake
 * (a few us; t_post - t_ask is reported apart) because a be receive's
 * deadline runs from the receive's post, so a sender that loses its CPU
 * between the handshake and its post (a scheduler tick on a shared
 * machine) sees its receive end before it posted: from t_post that time
 * would be negative.
 *
 * be's deadline: with --warmup-ns W each end puts its QP into an
 * adaptive-timeout group of one (uroce_tmo_create) and calls
 * uroce_tmo_warmup(g, W): T = 1.25 W + 50 us on the QP, used by every
 * receive and send WR (their timeout_us is 0). Without it the QP's
 * deadline is --timeout-us (the warm-up run itself takes a long one, so
 * that it measures the message and not the deadline).
 *
 *   be_fct --role send|recv --dev afxdp:IFACE --shm FILE --mode rc|sr|be
 *          --size BYTES --count N [--max-sec S] [--msg-timeout-sec S]
 *          [--warmup-ns W] [--timeout-us U] [--rc-timeout T] [--out FILE]
 *
 * The receiver prints one line, "be_fct result k=v ...": n, the
 * percentiles p50/p90/p99/p999/max and mean in us, bytes_frac (sum of
 * byte_len over n x size), partial / timeout / preempted counts, the
 * deadline, the median handshake, and "disturbed": the messages during
 * which either end waited for its CPU (schedstat's run_delay: another task
 * ran there) more than 20 us and more than a tenth of the message's time,
 * which explains outliers on a shared machine. --out FILE gets "i time_ns byte_len wc_flags handshake_ns
 * snd_wait_ns rcv_wait_ns" per message, the waits being each end's
 * run_delay over the message (from the end of the one before). The
 * sender prints "be_fct sender k=v ...": its QP's counters. Exit 0, 1 on
 * any failure (either end's), 2 on a bad argument. */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_pair.h"

#define FCT_MAX_COUNT 1000000u
#define FCT_MAX_SIZE (64u << 20)

struct fct_msg {
	uint64_t t_ask, t_post, t_done;
	uint64_t snd_wait, rcv_wait; /* each end's run_delay over the message */
	uint32_t byte_len, wc_flags, status, pad;
};

/* A message is disturbed when an end waited for its CPU longer than this
 * and than a tenth of the message's time (ksoftirqd's forwarding work
 * takes a little of every long message's time). */
#define FCT_DISTURBED_NS 20000u

struct fct_shm {
	struct ns_hdr h;
	uint32_t want __attribute__((aligned(64)));   /* sender: the message it wants to post next, + 1 */
	uint32_t posted __attribute__((aligned(64))); /* receiver: receives posted */
	uint32_t done __attribute__((aligned(64)));   /* receiver: receives completed */
	uint32_t stop __attribute__((aligned(64)));   /* sender: messages sent + 1, once it stops */
	struct fct_msg m[] __attribute__((aligned(64)));
};

struct fct_opts {
	struct ns_args a; /* --role, --dev, --shm, --max-sec, --rc-timeout */
	const char *out;
	enum uroce_reliability mode;
	uint64_t size, count, warmup_ns, timeout_us;
	double msg_timeout_sec;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: be_fct --role send|recv --dev afxdp:IFACE --shm FILE --mode rc|sr|be --size BYTES\n"
	           "              --count N [--max-sec S] [--msg-timeout-sec S] [--warmup-ns W] [--timeout-us U]\n"
	           "              [--rc-timeout T] [--out FILE]\n");
}

static void parse(int argc, char **argv, struct fct_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS, NS_ARGS_RC_TIMEOUT_OPTION,
		{ "mode", required_argument, NULL, 'm' }, { "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' }, { "msg-timeout-sec", required_argument, NULL, 'M' },
		{ "warmup-ns", required_argument, NULL, 'w' }, { "timeout-us", required_argument, NULL, 't' },
		{ "out", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool tmo = false;
	int c;

	ns_args_init("be_fct", usage);
	memset(o, 0, sizeof(*o));
	o->mode = UROCE_REL__COUNT;
	o->a.max_sec = 60;
	o->msg_timeout_sec = 20;
	o->timeout_us = 1000000;
	o->a.rc_timeout = 14;
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'm':
			if (uroce_reliability_parse(optarg, &o->mode) || o->mode == UROCE_REL_EC)
				ns_bad("--mode", optarg, "rc, sr or be");
			break;
		case 's':
			o->size = ns_arg_u64("--size", optarg, 1, FCT_MAX_SIZE, "1 to 64M bytes (k/m suffixes: x1024)");
			break;
		case 'n':
			o->count = ns_arg_u64("--count", optarg, 1, FCT_MAX_COUNT, "1 to 1000000");
			break;
		case 'M':
			o->msg_timeout_sec = ns_parse_sec("--msg-timeout-sec", optarg, ns_bad);
			break;
		case 'w':
			o->warmup_ns = ns_arg_u64("--warmup-ns", optarg, 1, 10000000000ull, "1 to 10000000000 ns");
			break;
		case 't':
			o->timeout_us = ns_arg_u64("--timeout-us", optarg, 1, 60000000, "1 to 60000000 us");
			tmo = true;
			break;
		case 'o':
			o->out = optarg;
			break;
		default:
			ns_help_or_bad(c);
		}
	}
	ns_args_end(argc, argv,
	            ns_args_missing(&o->a) || o->mode == UROCE_REL__COUNT || !o->size || !o->count,
	            "--role, --dev, --shm, --mode, --size and --count");
	if (o->warmup_ns && o->mode != UROCE_REL_BE)
		ns_bad("--warmup-ns", "(given)", "with --mode be only");
	if (tmo && (o->mode != UROCE_REL_BE || o->warmup_ns))
		ns_bad("--timeout-us", "(given)", "with --mode be and without --warmup-ns (which sets the deadline)");
}

static struct uroce_tmo *be_group(struct ns_end *e, const struct fct_opts *o)
{
	struct uroce_tmo_attr ta = { .group_id = 1, .msg_bytes = o->size };
	struct uroce_tmo *g;
	int rc;

	if (!o->warmup_ns)
		return NULL;
	if ((rc = uroce_tmo_create(&ta, &e->qp, 1, &g)) != 0)
		ns_die_rc(rc, "tmo_create");
	if ((rc = uroce_tmo_warmup(g, o->warmup_ns)) != 0)
		ns_die_rc(rc, "tmo_warmup");
	return g;
}

static void stamp(uint8_t *buf, uint64_t size, uint64_t i)
{
	uint64_t v = i ^ 0x5a5a000000000000ull;

	memcpy(buf, &v, size < 8 ? size : 8);
	if (size >= 16)
		memcpy(buf + size - 8, &v, 8);
}

static bool stamped(const uint8_t *buf, uint64_t size, uint64_t i)
{
	uint8_t want[16];

	stamp(want, size < 16 ? size : 16, i);
	if (memcmp(buf, want, size < 8 ? size : 8))
		return false;
	return size < 16 || !memcmp(buf + size - 8, want + 8, 8);
}

static void run_sender(struct ns_end *e, struct fct_shm *s, uint8_t *buf, const struct fct_opts *o)
{
	uint64_t start = ns_now_ns(), max_ns = (uint64_t)(o->a.max_sec * 1e9), msg_ns = (uint64_t)(o->msg_timeout_sec * 1e9);
	uint64_t cut = 0, n, rd = ns_run_delay_ns();
	struct uroce_qp_stats st;
	struct uroce_wc wc;

	for (n = 0; n < o->count && ns_now_ns() - start < max_ns; n++) {
		struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)buf, .length = (uint32_t)o->size, .lkey = e->mr->lkey };
		struct uroce_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1, .opcode = UROCE_WR_SEND,
		                            .send_flags = UROCE_SEND_SIGNALED };
		bool sent = false;
		uint64_t end;
		int rc;

		stamp(buf, o->size, n);
		__atomic_store_n(&s->m[n].t_ask, ns_now_ns(), __ATOMIC_RELEASE);
		ns_put(&s->want, (uint32_t)n + 1);
		if (ns_wait_ge(e, &s->posted, (uint32_t)n + 1, msg_ns))
			ns_die("the receiver did not post receive %" PRIu64 " within %.0f s", n, o->msg_timeout_sec);
		__atomic_store_n(&s->m[n].t_post, ns_now_ns(), __ATOMIC_RELEASE);
		if ((rc = uroce_post_send(e->qp, &wr, NULL)) != 0)
			ns_die_rc(rc, "post_send");
		end = ns_now_ns() + msg_ns;
		for (unsigned spins = 0; !sent || ns_get(&s->done) < n + 1; spins++) {
			if (!sent && ns_poll(e, e->scq, &wc)) {
				if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != n)
					ns_die("send %" PRIu64 " completed as wr %" PRIu64 ": %s", n, wc.wr_id,
					       uroce_wc_status_str(wc.status));
				cut += !!(wc.wc_flags & UROCE_WC_TIMEOUT);
				sent = true;
			} else if (sent) {
				ns_progress(e);
			}
			if ((spins & 63) == 0) {
				if (ns_get(&e->h->failed))
					ns_die("the receiver failed (its log says why)");
				if (ns_now_ns() > end)
					ns_die("message %" PRIu64 " of %" PRIu64 " bytes: no %s within %.0f s", n, o->size,
					       sent ? "receive completion" : "send completion", o->msg_timeout_sec);
			}
		}
		s->m[n].snd_wait = ns_run_delay_ns() - rd;
		rd += s->m[n].snd_wait;
	}
	ns_put(&s->stop, (uint32_t)n + 1);
	if (uroce_qp_stats(e->qp, &st))
		memset(&st, 0, sizeof(st));
	printf("be_fct sender n=%" PRIu64 " tx_packets=%" PRIu64 " retransmits=%" PRIu64 " timeouts=%" PRIu64
	       " rto_losses=%" PRIu64 " rack_losses=%" PRIu64 " tlp_probes=%" PRIu64 " sends_cut=%" PRIu64 "\n",
	       n, st.tx_packets, st.retransmits, st.timeouts, st.rto_losses, st.rack_losses, st.tlp_probes, cut);
}

/* Nearest rank: the smallest value with at least q of them at or below it. */
static double pct_us(const uint64_t *sorted, uint64_t n, double q)
{
	uint64_t k = (uint64_t)(q * (double)n + 0.999999);

	return (double)sorted[k ? k - 1 : 0] / 1000.0;
}

static void report(const struct fct_shm *s, uint64_t n, const struct fct_opts *o, uint64_t deadline_ns,
                   uint64_t bad_data)
{
	uint64_t *t = malloc((n ? n : 1) * sizeof(*t)), *hs = malloc((n ? n : 1) * sizeof(*hs));
	uint64_t bytes = 0, partial = 0, tmo = 0, pre = 0, sum = 0, disturbed = 0;
	FILE *f = NULL;

	if (!t || !hs)
		ns_die("out of memory for %" PRIu64 " times", n);
	if (o->out && !(f = fopen(o->out, "w")))
		ns_die("cannot write %s: %s", o->out, strerror(errno));
	for (uint64_t i = 0; i < n; i++) {
		const struct fct_msg *m = &s->m[i];
		uint64_t wait;

		t[i] = m->t_done - m->t_ask;
		hs[i] = m->t_post - m->t_ask;
		sum += t[i];
		bytes += m->byte_len;
		partial += !!(m->wc_flags & UROCE_WC_PARTIAL);
		tmo += !!(m->wc_flags & UROCE_WC_TIMEOUT);
		pre += !!(m->wc_flags & UROCE_WC_PREEMPTED);
		wait = m->snd_wait > m->rcv_wait ? m->snd_wait : m->rcv_wait;
		disturbed += wait > FCT_DISTURBED_NS && wait > t[i] / 10;
		if (f)
			fprintf(f, "%" PRIu64 " %" PRIu64 " %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", i, t[i], m->byte_len,
			        m->wc_flags, hs[i], m->snd_wait, m->rcv_wait);
	}
	if (f && fclose(f))
		ns_die("cannot write %s: %s", o->out, strerror(errno));
	if (!n)
		ns_die("no message completed");
	ns_sort_u64(t, n);
	ns_sort_u64(hs, n);
	printf("be_fct result mode=%s size=%" PRIu64 " n=%" PRIu64 " p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f"
	       " max_us=%.1f mean_us=%.1f bytes_frac=%.6f partial=%" PRIu64 " timeout=%" PRIu64 " preempted=%" PRIu64
	       " deadline_us=%.1f handshake_p50_us=%.1f bad_data=%" PRIu64 " disturbed=%" PRIu64 "\n",
	       uroce_reliability_str(o->mode), o->size, n, pct_us(t, n, 0.5), pct_us(t, n, 0.9), pct_us(t, n, 0.99),
	       pct_us(t, n, 0.999), (double)t[n - 1] / 1000.0, (double)sum / (double)n / 1000.0,
	       (double)bytes / ((double)n * (double)o->size), partial, tmo, pre, (double)deadline_ns / 1000.0,
	       pct_us(hs, n, 0.5), bad_data, disturbed);
	free(t);
	free(hs);
}

static void run_receiver(struct ns_end *e, struct fct_shm *s, uint8_t *buf, const struct fct_opts *o,
                         uint64_t deadline_ns)
{
	uint64_t msg_ns = (uint64_t)(o->msg_timeout_sec * 1e9), idle_ns = (uint64_t)((o->a.max_sec + 30) * 1e9);
	uint64_t i, bad_data = 0, rd = ns_run_delay_ns();
	struct uroce_wc wc;

	for (i = 0;; i++) {
		struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)buf, .length = (uint32_t)o->size, .lkey = e->mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		uint64_t end = ns_now_ns() + idle_ns, t;
		int rc;

		/* the next message, or the sender's stop */
		for (unsigned spins = 0; ns_get(&s->want) <= i; spins++) {
			if (ns_get(&s->stop))
				break;
			ns_progress(e);
			if ((spins & 63) == 0 && (ns_get(&e->h->failed) || ns_now_ns() > end))
				ns_die("the sender neither sent message %" PRIu64 " nor stopped", i);
		}
		if (ns_get(&s->want) <= i)
			break;
		if (i >= o->count)
			ns_die("the sender sent more than --count %" PRIu64 " messages: is its --count the same?", o->count);
		memset(buf, 0, o->size < 8 ? o->size : 8);
		if ((rc = uroce_post_recv(e->qp, &wr, NULL)) != 0)
			ns_die_rc(rc, "post_recv");
		ns_put(&s->posted, (uint32_t)i + 1);
		end = ns_now_ns() + msg_ns;
		for (unsigned spins = 0; !ns_poll(e, e->rcq, &wc); spins++)
			if ((spins & 63) == 0 && (ns_get(&e->h->failed) || ns_now_ns() > end))
				ns_die("receive %" PRIu64 " of %" PRIu64 " bytes did not complete within %.0f s", i, o->size,
				       o->msg_timeout_sec);
		t = ns_now_ns();
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != i)
			ns_die("receive %" PRIu64 " completed as wr %" PRIu64 ": %s (flags 0x%x)", i, wc.wr_id,
			       uroce_wc_status_str(wc.status), wc.wc_flags);
		if (!(wc.wc_flags & UROCE_WC_PARTIAL) && (wc.byte_len != o->size || !stamped(buf, o->size, i)))
			bad_data++; /* a whole message must be this one's bytes */
		s->m[i].t_done = t;
		s->m[i].byte_len = wc.byte_len;
		s->m[i].wc_flags = wc.wc_flags;
		s->m[i].status = wc.status;
		s->m[i].rcv_wait = ns_run_delay_ns() - rd;
		rd += s->m[i].rcv_wait;
		ns_put(&s->done, (uint32_t)i + 1);
	}
	report(s, i, o, deadline_ns, bad_data);
}

int main(int argc, char **argv)
{
	struct fct_opts o;
	struct ns_qp_opts q = { 0 };
	struct fct_shm *s;
	struct ns_end e;
	struct uroce_tmo *g;
	uint8_t *buf;
	uint64_t deadline_ns = 0;

	ns_name = "be_fct";
	parse(argc, argv, &o);
	s = ns_map(o.a.shm, sizeof(*s) + o.count * sizeof(struct fct_msg));
	if (posix_memalign((void **)&buf, 4096, o.size))
		ns_die("cannot allocate %" PRIu64 " bytes", o.size);
	memset(buf, 0, o.size);
	q.rel.reliability = o.mode;
	if (o.mode == UROCE_REL_BE)
		q.rel.timeout_us = (uint32_t)o.timeout_us;
	/* one message in flight: small queues */
	q.sq = q.rq = 4;
	q.cqe = 16;
	q.rc_timeout = (uint8_t)o.a.rc_timeout;
	ns_open(&e, &s->h, o.a.role, o.a.dev, buf, o.size, &q);
	ns_connect(&e, &q, 30);
	g = o.mode == UROCE_REL_BE ? be_group(&e, &o) : NULL;
	if (o.mode == UROCE_REL_BE)
		deadline_ns = g ? uroce_tmo_timeout_ns(g) : o.timeout_us * 1000;
	if (o.a.role == NS_SENDER)
		run_sender(&e, s, buf, &o);
	else
		run_receiver(&e, s, buf, &o, deadline_ns);
	fflush(stdout);
	if (g)
		uroce_tmo_destroy(g);
	ns_close(&e);
	free(buf);
	return 0;
}
