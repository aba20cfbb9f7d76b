/* SPDX-License-Identifier: MIT */
/* A checked stream of messages over one rc/sr QP with failover
 * (tests/netns/failover.sh): the sender (in A) posts numbered messages,
 * SENDs and RDMA WRITE_WITH_IMMs in turn, every one signaled; the receiver
 * (in B) checks each as it completes. Both ends open one context over two
 * afxdp ports, one per rail, and one QP whose member 0 is port 1 and member
 * 1 port 2 (fo_pair.h); the script fails and restores the rails while the
 * stream runs.
 *
 * Message i is 16..--max-msg bytes (a length drawn from i), a header
 * {magic, i, length, ~i} then bytes drawn from i. An even i is a SEND into
 * receive buffer i % slots; an odd i a WRITE_WITH_IMM (immediate i) into
 * RDMA slot i % slots of the receiver's region, which consumes a receive
 * too. The sender reuses slot i % slots only once the receiver has checked
 * message i - slots (a counter in the shared file) and its own WR i - slots
 * has completed, so a late or repeated copy of an old message that lands
 * shows as a wrong header or pattern.
 *
 * Checked: the receiver completes exactly the messages 0..N-1, each once,
 * in order, with the right opcode, immediate, length and every byte; the
 * sender gets exactly one successful completion per WR, in posting order;
 * neither sees a completion after the last. Any violation: a message
 * naming it and exit 1 (the other end stops too).
 *
 *   fo_xfer --role send|recv --dev afxdp:va1,afxdp:va2 --shm FILE --rel rc|sr
 *           [--backups 0|1] [--count N] [--stop FILE] [--max-msg B] [--slots N]
 *           [--max-sec S] [--stall-sec S] [--rc-timeout T] [--rto-min-us U]
 *           [--rto-fail N] [--probe-us U] [--down-timeout-ms M] [--beat-ms M]
 *
 * The sender stops posting after --count messages (0: no limit) or once
 * --stop FILE exists, whichever first. Both ends print to stdout, each line
 * "fo_xfer[send|recv]: t=SECONDS ...":
 *   at msgs=N <failover info>        every --beat-ms (default 100)
 *   event msgs=N <failover info>     whenever state, active, up, failovers or failbacks change
 *   final msgs=N bytes=B secs=S retransmits=R timeouts=T rto_losses=L rack_losses=K spurious=P
 *         duplicates=D <failover info>
 *   ok
 * where <failover info> is fo_info_str's "state=.. active=.. up=0x.. failovers=..
 * failbacks=.. cause=.. rewound=.. notices=s/r probes=s/a". msgs: the
 * sender's completed WRs, the receiver's checked messages. Exit 0, 1 on
 * any failure (either end's), 2 on a bad argument. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fo_pair.h"

#define XF_HDR_BYTES 16u
#define XF_MAGIC 0x666f7866u  /* "fxof" */
#define XF_POLL_BATCH 4 /* completions a loop turn takes: the transport runs between */
#define XF_CHECK_EVERY 64u    /* loop turns between reads of the clock */
#define XF_STOP_POLL_NS 20000000ull /* the stop file is looked for every 20 ms */
#define XF_END_WAIT_NS 20000000000ull /* the ends wait this long for each other at the end */

struct xf_shm {
	struct ns_hdr h;
	uint32_t verified __attribute__((aligned(64))); /* receiver: messages checked */
	uint32_t stopped __attribute__((aligned(64)));  /* sender: no more posts; total is final */
	uint32_t total;
	uint32_t sfinished __attribute__((aligned(64))); /* sender: every WR completed */
	uint32_t rdone __attribute__((aligned(64)));     /* receiver: done with its checks */
};

struct xf_opts {
	struct ns_args a; /* --role, --dev, --shm, --max-sec, --rc-timeout */
	const char *stop, *fault;
	struct ns_qp_opts q;
	uint64_t count, max_msg, slots;
	double stall_sec;
	uint64_t beat_ms;
};

struct xf_hdr {
	uint32_t magic, seq, len, nseq;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fo_xfer --role send|recv --dev afxdp:IF1,afxdp:IF2 --shm FILE --rel rc|sr [--backups 0|1]\n"
	           "               [--count N] [--stop FILE] [--max-msg B] [--slots N] [--max-sec S] [--stall-sec S]\n"
	           "               [--rc-timeout T] [--rto-min-us U] [--rto-fail N] [--probe-us U]\n"
	           "               [--down-timeout-ms M] [--beat-ms M] [--failback-fault NSPATH:IF] [--window-pkts N]\n");
}

static void parse(int argc, char **argv, struct xf_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS, NS_ARGS_RC_TIMEOUT_OPTION,
		{ "rel", required_argument, NULL, 'm' }, { "backups", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' }, { "stop", required_argument, NULL, 'S' },
		{ "max-msg", required_argument, NULL, 'M' }, { "slots", required_argument, NULL, 'q' },
		{ "stall-sec", required_argument, NULL, 'W' }, { "rto-min-us", required_argument, NULL, 'R' },
		{ "rto-fail", required_argument, NULL, 'F' }, { "probe-us", required_argument, NULL, 'P' },
		{ "down-timeout-ms", required_argument, NULL, 'X' }, { "beat-ms", required_argument, NULL, 'B' },
		{ "failback-fault", required_argument, NULL, 'K' }, { "window-pkts", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	bool rel_set = false;
	int c;

	ns_args_init("fo_xfer", usage);
	memset(o, 0, sizeof(*o));
	o->q.fo.nbackups = 1;
	o->a.rc_timeout = 12; /* 16.8 ms */
	o->max_msg = 12288;
	o->slots = 64;
	o->a.max_sec = 120;
	o->stall_sec = 30;
	o->beat_ms = 100;
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'b':
			o->q.fo.nbackups = (uint8_t)ns_arg_u64("--backups", optarg, 0, 1, "0 or 1");
			break;
		case 'n':
			o->count = ns_arg_u64("--count", optarg, 0, 1u << 30, "0 (no limit) to 2^30 messages");
			break;
		case 'S':
			o->stop = optarg;
			break;
		case 'M':
			o->max_msg = ns_arg_u64("--max-msg", optarg, 64, 1u << 20, "64 to 1m bytes");
			break;
		case 'q':
			o->slots = ns_arg_u64("--slots", optarg, 2, 1024, "2 to 1024 slots");
			break;
		case 'W':
			o->stall_sec = fo_arg_secs("--stall-sec", optarg);
			break;
		case 'B':
			o->beat_ms = ns_arg_u64("--beat-ms", optarg, 1, 60000, "1 to 60000 ms");
			break;
		case 'K':
			o->fault = optarg;
			break;
		default:
			if (!fo_qp_option(&o->q, c, optarg, &rel_set))
				ns_help_or_bad(c);
		}
	}
	o->q.rc_timeout = (uint8_t)o->a.rc_timeout;
	ns_args_end(argc, argv, ns_args_missing(&o->a) || !rel_set,
	            "--role, --dev, --shm and --rel");
	if (o->a.role == NS_SENDER && !o->count && !o->stop)
		ns_bad("--count", "0", "a limit, or --stop FILE");
	o->q.rel.ordering = UROCE_ORDER_ORDERED;
	/* the sender reuses a source slot once its WR completed: never more
	 * WRs outstanding than slots */
	o->q.sq = (uint32_t)o->slots;
	o->q.rq = (uint32_t)o->slots;
	o->q.cqe = (int)(2 * o->slots);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint32_t msg_len(uint32_t seq, uint64_t max_msg)
{
	return (uint32_t)(XF_HDR_BYTES + mix64(seq ^ 0x5eedull) % (max_msg - XF_HDR_BYTES + 1));
}

/* The word of message seq at body offset 8 * k: one multiply, so that
 * checking (in the loop that also answers the peer) stays far below the
 * RTO even in a sanitized build; a word of another message or offset
 * differs. */
static uint64_t pattern_word(uint32_t seq, uint64_t k)
{
	return (((uint64_t)seq << 32) ^ k) * 0x9e3779b97f4a7c15ull + 0x5a5a5a5a5a5a5a5aull;
}

static void fill(uint8_t *p, uint32_t seq, uint32_t len)
{
	struct xf_hdr h = { XF_MAGIC, seq, len, ~seq };
	uint32_t body = len - XF_HDR_BYTES, k;

	memcpy(p, &h, sizeof(h));
	p += XF_HDR_BYTES;
	for (k = 0; k + 8 <= body; k += 8) {
		uint64_t w = pattern_word(seq, k / 8);

		memcpy(p + k, &w, 8);
	}
	if (k < body) {
		uint64_t w = pattern_word(seq, k / 8);

		memcpy(p + k, &w, body - k);
	}
}

/* First byte of message seq that is not what the sender wrote, or -1. */
static long check(const uint8_t *p, uint32_t seq, uint32_t len)
{
	struct xf_hdr h, want = { XF_MAGIC, seq, len, ~seq };
	uint32_t body = len - XF_HDR_BYTES, k;

	memcpy(&h, p, sizeof(h));
	if (memcmp(&h, &want, sizeof(h)))
		return 0;
	p += XF_HDR_BYTES;
	for (k = 0; k + 8 <= body; k += 8) {
		uint64_t w = pattern_word(seq, k / 8);

		if (memcmp(p + k, &w, 8))
			return XF_HDR_BYTES + k;
	}
	if (k < body) {
		uint64_t w = pattern_word(seq, k / 8);

		if (memcmp(p + k, &w, body - k))
			return XF_HDR_BYTES + k;
	}
	return -1;
}

/* Failover info: an "event" line when it changed, an "at" line every beat. */
struct xf_watch {
	struct uroce_failover_info last;
	bool has;
	uint64_t next_beat_ns, beat_ns;
};

static void watch(struct ns_end *e, struct xf_watch *w, uint32_t msgs, uint64_t now, bool first)
{
	struct uroce_failover_info fi;
	char s[256];
	bool has = fo_info(e, &fi);

	if (has && (first || fi.state != w->last.state || fi.active != w->last.active ||
	            fi.up_mask != w->last.up_mask || fi.failovers != w->last.failovers ||
	            fi.failbacks != w->last.failbacks))
		ns_say("event msgs=%u %s", msgs, fo_info_str(&fi, has, s, sizeof(s)));
	if (now >= w->next_beat_ns) {
		ns_say("at msgs=%u %s", msgs, fo_info_str(&fi, has, s, sizeof(s)));
		w->next_beat_ns = now + w->beat_ns;
	}
	w->last = fi;
	w->has = has;
}

static void final(struct ns_end *e, uint32_t msgs, uint64_t bytes)
{
	struct uroce_failover_info fi;
	struct uroce_qp_stats st = { 0 };
	char s[256];
	bool has = fo_info(e, &fi);

	uroce_qp_stats(e->qp, &st);
	ns_say("final msgs=%u bytes=%" PRIu64 " secs=%.3f retransmits=%" PRIu64 " timeouts=%" PRIu64 " rto_losses=%" PRIu64
	       " rack_losses=%" PRIu64 " spurious=%" PRIu64 " duplicates=%" PRIu64 " %s",
	       msgs, bytes, (double)(ns_now_ns() - e->t_start) / 1e9, st.retransmits, st.timeouts, st.rto_losses,
	       st.rack_losses, st.spurious_retx, st.duplicates, fo_info_str(&fi, has, s, sizeof(s)));
}

static const char *wc_what(const struct uroce_wc *wc)
{
	static char b[96];

	snprintf(b, sizeof(b), "wr_id %" PRIu64 " opcode %d status %s", wc->wr_id, (int)wc->opcode,
	         uroce_wc_status_str(wc->status));
	return b;
}

static void post_msg(struct ns_end *e, const struct xf_opts *o, uint8_t *buf, uint32_t seq)
{
	const struct ns_info *peer = &e->h->info[NS_RECEIVER];
	uint32_t slot = seq % (uint32_t)o->slots, len = msg_len(seq, o->max_msg);
	uint8_t *src = buf + (size_t)slot * o->max_msg;
	struct uroce_sge sge = { (uint64_t)(uintptr_t)src, len, e->mr->lkey };
	struct uroce_send_wr wr = { 0 }, *badwr;
	int rc;

	fill(src, seq, len);
	wr.wr_id = seq;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = UROCE_SEND_SIGNALED;
	if (seq & 1) {
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(seq);
		wr.wr.rdma.remote_addr = peer->addr + (o->slots + slot) * o->max_msg;
		wr.wr.rdma.rkey = peer->rkey;
	} else {
		wr.opcode = UROCE_WR_SEND;
	}
	if ((rc = uroce_post_send(e->qp, &wr, &badwr)) != 0)
		ns_die_rc(rc, "post_send");
}

static int run_sender(struct ns_end *e, struct xf_shm *x, const struct xf_opts *o, uint8_t *buf)
{
	uint32_t posted = 0, completed = 0, limit = o->count ? (uint32_t)o->count : UINT32_MAX;
	uint64_t now = ns_now_ns(), end = now + (uint64_t)(o->a.max_sec * 1e9), stall_ns = (uint64_t)(o->stall_sec * 1e9);
	uint64_t last_progress = now, next_stop_poll = now, bytes = 0;
	struct xf_watch w = { .beat_ns = o->beat_ms * 1000000ull };
	struct uroce_wc wc[XF_POLL_BATCH];
	struct fo_ifctl fault;
	bool stopping = false, armed = o->fault != NULL;

	if (armed)
		fo_ifctl_open(&fault, o->fault);
	watch(e, &w, 0, now, true);
	for (unsigned turn = 0;; turn++) {
		int n;

		ns_progress(e);
		while (!stopping && posted < limit && posted - completed < o->slots &&
		       posted < ns_get(&x->verified) + o->slots)
			post_msg(e, o, buf, posted++);
		n = uroce_poll_cq(e->scq, XF_POLL_BATCH, wc);
		if (n < 0)
			ns_die_rc(n, "poll_cq");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != UROCE_WC_SUCCESS)
				ns_die("WR %u failed: %s", completed, wc_what(&wc[i]));
			if (completed == posted)
				ns_die("a completion with none outstanding (%u WRs posted, all completed): %s", posted,
				       wc_what(&wc[i]));
			if (wc[i].wr_id != completed)
				ns_die("completion out of order or repeated: wanted wr_id %u, got %s", completed,
				       wc_what(&wc[i]));
			bytes += msg_len(completed, o->max_msg);
			completed++;
		}
		if (n)
			last_progress = ns_now_ns();
		if (armed) {
			struct uroce_failover_info fi;

			fo_info(e, &fi);
			if (fi.state == UROCE_FO_WAIT_SIGNALED || fi.state == UROCE_FO_WAIT_SINKED) {
				fo_ifctl_set(&fault, false);
				armed = false;
				ns_say("fault: %s down in state %s (msgs=%u)", fault.ifname, uroce_fo_state_str(fi.state),
				       completed);
				close(fault.fd);
			}
		}
		if (!stopping && posted == limit) {
			stopping = true;
			x->total = posted;
			ns_put(&x->stopped, 1);
		}
		if (stopping && completed == posted)
			break;
		if (turn % XF_CHECK_EVERY)
			continue;
		now = ns_now_ns();
		ns_check_peer(e);
		watch(e, &w, completed, now, false);
		if (!stopping && o->stop && now >= next_stop_poll) {
			next_stop_poll = now + XF_STOP_POLL_NS;
			if (access(o->stop, F_OK) == 0) {
				stopping = true;
				x->total = posted;
				ns_put(&x->stopped, 1);
				ns_say("stop: %u messages posted", posted);
			}
		}
		if (posted != completed && now - last_progress > stall_ns)
			ns_die("stalled: no completion for %.1f s (%u posted, %u completed)", o->stall_sec, posted,
			       completed);
		if (now > end)
			ns_die("ran past --max-sec %.0f (%u posted, %u completed)", o->a.max_sec, posted, completed);
	}
	ns_put(&x->sfinished, 1);
	watch(e, &w, completed, ns_now_ns(), false);
	/* the receiver checks its last messages; nothing more may complete here */
	end = ns_now_ns() + XF_END_WAIT_NS;
	for (unsigned turn = 0; !ns_get(&x->rdone); turn++) {
		int n;

		ns_progress(e);
		n = uroce_poll_cq(e->scq, 1, wc);
		if (n < 0)
			ns_die_rc(n, "poll_cq");
		if (n)
			ns_die("a completion after the last WR: %s", wc_what(&wc[0]));
		if (turn % XF_CHECK_EVERY == 0) {
			ns_check_peer(e);
			if (ns_now_ns() > end)
				ns_die("the receiver did not finish its checks within %.0f s", XF_END_WAIT_NS / 1e9);
		}
	}
	final(e, completed, bytes);
	return 0;
}

static void post_recv(struct ns_end *e, const struct xf_opts *o, uint8_t *buf, uint32_t slot)
{
	struct uroce_sge sge = { (uint64_t)(uintptr_t)(buf + (size_t)slot * o->max_msg), (uint32_t)o->max_msg,
		                 e->mr->lkey };
	struct uroce_recv_wr wr = { 0 }, *badwr;
	int rc;

	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if ((rc = uroce_post_recv(e->qp, &wr, &badwr)) != 0)
		ns_die_rc(rc, "post_recv");
}

/* Message seq completed with wc: the right one, whole. */
static void check_recv(const struct ns_end *e, const struct xf_opts *o, uint8_t *buf, uint32_t seq,
                       const struct uroce_wc *wc)
{
	uint32_t slot = seq % (uint32_t)o->slots, len = msg_len(seq, o->max_msg);
	const uint8_t *p;
	struct xf_hdr h;
	long bad_at;

	(void)e;
	if (wc->status != UROCE_WC_SUCCESS)
		ns_die("receive of message %u failed: %s", seq, wc_what(wc));
	if (wc->wr_id != slot)
		ns_die("message %u completed receive WR of slot %" PRIu64 ", wanted slot %u (receives out of order)",
		       seq, wc->wr_id, slot);
	if (seq & 1) {
		if (wc->opcode != UROCE_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & UROCE_WC_WITH_IMM))
			ns_die("message %u: wanted a WRITE_WITH_IMM completion, got %s flags 0x%x", seq, wc_what(wc),
			       wc->wc_flags);
		if (ntohl(wc->imm_data) != seq)
			ns_die("message %u: the immediate says %u (out of order, lost or repeated)", seq,
			       ntohl(wc->imm_data));
		p = buf + (o->slots + slot) * o->max_msg;
	} else {
		if (wc->opcode != UROCE_WC_RECV)
			ns_die("message %u: wanted a SEND completion, got %s", seq, wc_what(wc));
		if (wc->byte_len != len)
			ns_die("message %u: %u bytes arrived, wanted %u", seq, wc->byte_len, len);
		p = buf + (size_t)slot * o->max_msg;
	}
	if ((bad_at = check(p, seq, len)) >= 0) {
		memcpy(&h, p, sizeof(h));
		ns_die("message %u (%u bytes, %s): wrong byte at offset %ld; the header there says magic 0x%x seq %u "
		       "len %u",
		       seq, len, seq & 1 ? "WRITE_WITH_IMM" : "SEND", bad_at, h.magic, h.seq, h.len);
	}
}

static int run_receiver(struct ns_end *e, struct xf_shm *x, const struct xf_opts *o, uint8_t *buf)
{
	uint32_t got = 0;
	uint64_t now = ns_now_ns(), end = now + (uint64_t)(o->a.max_sec * 1e9), bytes = 0;
	struct xf_watch w = { .beat_ns = o->beat_ms * 1000000ull };
	struct uroce_wc wc[XF_POLL_BATCH];

	for (uint32_t s = 0; s < o->slots; s++)
		post_recv(e, o, buf, s);
	watch(e, &w, 0, now, true);
	for (unsigned turn = 0;; turn++) {
		int n;

		ns_progress(e);
		n = uroce_poll_cq(e->rcq, XF_POLL_BATCH, wc);
		if (n < 0)
			ns_die_rc(n, "poll_cq");
		for (int i = 0; i < n; i++) {
			if (ns_get(&x->stopped) && got >= x->total)
				ns_die("a receive completion after the last message (%u): %s", x->total, wc_what(&wc[i]));
			check_recv(e, o, buf, got, &wc[i]);
			bytes += msg_len(got, o->max_msg);
			post_recv(e, o, buf, got % (uint32_t)o->slots);
			got++;
		}
		if (n)
			ns_put(&x->verified, got);
		if (ns_get(&x->stopped) && got == x->total)
			break;
		if (turn % XF_CHECK_EVERY)
			continue;
		now = ns_now_ns();
		ns_check_peer(e);
		watch(e, &w, got, now, false);
		if (now > end)
			ns_die("ran past --max-sec %.0f (%u messages checked)", o->a.max_sec, got);
	}
	/* the sender waits for its last acknowledgements: keep answering, and
	 * nothing more may arrive */
	end = ns_now_ns() + XF_END_WAIT_NS;
	for (unsigned turn = 0; !ns_get(&x->sfinished); turn++) {
		ns_progress(e);
		if (uroce_poll_cq(e->rcq, 1, wc) > 0)
			ns_die("a receive completion after the last message (%u): %s", got, wc_what(&wc[0]));
		if (turn % XF_CHECK_EVERY == 0) {
			ns_check_peer(e);
			if (ns_now_ns() > end)
				ns_die("the sender did not see its last completions within %.0f s", XF_END_WAIT_NS / 1e9);
		}
	}
	/* a little longer, for a late copy */
	end = ns_now_ns() + 50000000ull;
	while (ns_now_ns() < end) {
		ns_progress(e);
		if (uroce_poll_cq(e->rcq, 1, wc) > 0)
			ns_die("a receive completion after the last message (%u): %s", got, wc_what(&wc[0]));
	}
	watch(e, &w, got, ns_now_ns(), false);
	final(e, got, bytes);
	ns_put(&x->rdone, 1);
	return 0;
}

int main(int argc, char **argv)
{
	struct xf_opts o;
	struct ns_end e;
	struct xf_shm *x;
	uint8_t *buf;
	size_t len;
	int rc;

	ns_name = "fo_xfer";
	parse(argc, argv, &o);
	/* send: source slots; recv: receive buffers then RDMA slots */
	len = 2 * o.slots * o.max_msg;
	buf = aligned_alloc(4096, len);
	if (!buf)
		ns_die("cannot allocate %zu bytes", len);
	memset(buf, 0, len);
	x = ns_map(o.a.shm, sizeof(*x));
	fo_open(&e, &x->h, o.a.role, o.a.dev, buf, len, &o.q);
	ns_connect(&e, &o.q, 30);
	ns_say("connected: qpn %u, %s, %u backup(s), path MTU %u, max message %" PRIu64 " bytes, %" PRIu64 " slots",
	       uroce_qp_num(e.qp), o.q.rel.reliability == UROCE_REL_SR ? "sr" : "rc", o.q.fo.nbackups,
	       uroce_mtu_bytes(e.mtu), o.max_msg, o.slots);
	rc = o.a.role == NS_SENDER ? run_sender(&e, x, &o, buf) : run_receiver(&e, x, &o, buf);
	ns_close(&e);
	free(buf);
	ns_say("ok");
	return rc;
}
