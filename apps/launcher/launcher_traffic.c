/* SPDX-License-Identifier: MIT */
/* The launcher's traffic: set traffic, start, stop, the live status line,
 * and the engine's side of it (l_traffic_step): each QP this end connected
 * keeps depth messages in flight, paced to the rate, every message's bytes
 * a pattern of its number when verify is on; each QP it accepted keeps
 * depth receives posted and checks what arrives.
 *
 * Buffers (one region per QP, laid out at connect/accept): depth send
 * slots, then 2 x depth receive slots, the region the peer writes to and
 * reads from. Message n goes to receive slot n mod 2 x depth: the sender
 * reuses a slot only after message n + depth completed, which took a
 * receive the receiver posted again only after checking message n. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "launcher.h"

#define L_READ_MARK (1ull << 63) /* receive slots filled for reads: numbers writes never have */

static const char *const op_names[L_OP__COUNT] = { "write", "send", "read", "write_imm" };

const char *l_op_str(enum l_op op)
{
	return op < L_OP__COUNT ? op_names[op] : "?";
}

/* ---- the pattern: the message's number, then bytes that follow from it ---- */

static uint8_t pat_byte(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 0x9e3779b1u + i * 7u + (i >> 8));
}

void l_fill_pattern(uint8_t *p, uint32_t len, uint64_t seq)
{
	uint32_t i = 0;

	if (len >= 8) {
		memcpy(p, &seq, 8);
		i = 8;
	}
	for (; i < len; i++)
		p[i] = pat_byte(seq, i);
}

/* *seq: in, the number expected for a message shorter than 8 bytes; out,
 * the number the message carries. */
bool l_check_pattern(const uint8_t *p, uint32_t len, uint64_t *seq)
{
	uint32_t i = 0;

	if (len >= 8) {
		memcpy(seq, p, 8);
		i = 8;
	}
	for (; i < len; i++)
		if (p[i] != pat_byte(*seq, i))
			return false;
	return true;
}

static size_t slot_len(const struct l_qp *q)
{
	return q->tr.size + (q->kind == L_UD ? PERF_UD_GRH : 0);
}

static uint8_t *send_slot(struct l_qp *q, uint64_t n)
{
	return q->buf + slot_len(q) * (n % q->tr.depth);
}

static uint8_t *recv_slot(struct l_qp *q, uint64_t n)
{
	return q->buf + slot_len(q) * (q->tr.depth + n % (2ull * q->tr.depth));
}

/* ---- the engine's side ---- */

static int post_recv(struct l_qp *q, uint64_t slot)
{
	struct uroce_sge sge = { (uint64_t)(uintptr_t)recv_slot(q, slot), (uint32_t)slot_len(q), q->mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return uroce_post_recv(q->qp, &wr, &bad);
}

int l_traffic_prepare(struct l_qp *q)
{
	for (uint64_t k = 0; k < 2ull * q->tr.depth; k++)
		l_fill_pattern(recv_slot(q, k), q->tr.size, L_READ_MARK | k);
	if (q->passive)
		for (uint64_t k = 0; k < q->tr.depth; k++) {
			int rc = post_recv(q, k);
			if (rc)
				return rc;
		}
	q->live = true;
	return 0;
}

static unsigned step_passive(struct l_qp *q)
{
	struct uroce_wc wc[32];
	int n = uroce_poll_cq(q->rcq, 32, wc);

	for (int i = 0; i < n; i++) {
		uint32_t len = wc[i].byte_len;
		uint64_t seq = atomic_load_explicit(&q->c.recv_msgs, memory_order_relaxed);

		if (wc[i].status != UROCE_WC_SUCCESS) {
			atomic_fetch_add(&q->c.errors, 1);
			atomic_store(&q->c.last_status, (int)wc[i].status);
			continue; /* a flushed receive: the QP is in error */
		}
		atomic_fetch_add(&q->c.recv_msgs, 1);
		atomic_fetch_add(&q->c.recv_bytes, q->kind == L_UD && len >= PERF_UD_GRH ? len - PERF_UD_GRH : len);
		if (wc[i].wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)) {
			atomic_fetch_add(&q->c.partial, 1);
		} else if (q->tr.verify) {
			bool ok;
			if (wc[i].opcode == UROCE_WC_RECV_RDMA_WITH_IMM) {
				seq = ntohl(wc[i].imm_data);
				ok = l_check_pattern(recv_slot(q, seq), q->tr.size, &seq) && (seq & 0xffffffffu) ==
				     ntohl(wc[i].imm_data);
			} else {
				uint32_t off = q->kind == L_UD ? PERF_UD_GRH : 0;
				ok = len >= off && l_check_pattern(recv_slot(q, wc[i].wr_id) + off, len - off, &seq);
			}
			atomic_fetch_add(ok ? &q->c.verified : &q->c.bad, 1);
		}
		if (post_recv(q, wc[i].wr_id))
			atomic_fetch_add(&q->c.errors, 1);
	}
	return n > 0 ? (unsigned)n : 0;
}

static uint64_t allowed(struct l_qp *q, uint64_t now)
{
	if (q->run.rate_mbps <= 0)
		return UINT64_MAX;
	double bytes = (double)(now - q->t_start_ns) * q->run.rate_mbps / 8e3; /* Mbit/s = bytes per ns x 8e3 */
	return q->allowance + (uint64_t)(bytes / q->run.size);
}

static int post_one(struct l_qp *q)
{
	uint64_t n = q->seq;
	uint8_t *local = send_slot(q, n);
	struct uroce_sge sge = { (uint64_t)(uintptr_t)local, q->run.size, q->mr->lkey };
	struct uroce_send_wr wr = {0}, *bad;
	uint64_t raddr;

	wr.wr_id = n;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = UROCE_SEND_SIGNALED;
	if (q->run.verify && q->run.op != L_OP_READ)
		l_fill_pattern(local, q->run.size, n);
	/* verify off: always the start of the peer's region, as perftest
	 * writes (a perftest or uroce-perf peer has room for one message) */
	raddr = q->rem.vaddr + (q->run.verify ? slot_len(q) * (n % (2ull * q->tr.depth)) : 0);
	switch (q->run.op) {
	case L_OP_WRITE: wr.opcode = UROCE_WR_RDMA_WRITE; break;
	case L_OP_WRITE_IMM:
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl((uint32_t)n);
		break;
	case L_OP_READ: wr.opcode = UROCE_WR_RDMA_READ; break;
	case L_OP_SEND:
		wr.opcode = UROCE_WR_SEND;
		if (q->kind == L_UD) {
			wr.wr.ud.ah = q->ah;
			wr.wr.ud.remote_qpn = q->rem.qpn;
			wr.wr.ud.remote_qkey = q->rem_qkey;
		}
		break;
	default: return -EINVAL;
	}
	if (wr.opcode != UROCE_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = q->rem.rkey;
	}
	int rc = uroce_post_send(q->qp, &wr, &bad);
	if (rc)
		return rc;
	if (!q->seq)
		atomic_store(&q->c.t_first_ns, l_now_ns());
	q->seq++;
	q->outstanding++;
	atomic_fetch_add(&q->c.posted, 1);
	return 0;
}

static unsigned step_active(struct l_qp *q)
{
	struct uroce_wc wc[32];
	int n = uroce_poll_cq(q->scq, 32, wc);
	unsigned work = n > 0 ? (unsigned)n : 0;

	for (int i = 0; i < n; i++) {
		q->outstanding--;
		if (wc[i].status != UROCE_WC_SUCCESS) {
			atomic_fetch_add(&q->c.errors, 1);
			atomic_store(&q->c.last_status, (int)wc[i].status);
			atomic_store(&q->running, false); /* the QP is in error: nothing more goes */
			continue;
		}
		uint64_t bytes = q->run.size;
		if (wc[i].wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)) {
			atomic_fetch_add(&q->c.partial, 1);
			bytes = wc[i].byte_len < bytes ? wc[i].byte_len : bytes;
		} else if (q->run.op == L_OP_READ && q->run.verify) {
			/* the slot as the peer holds it: filled for reads at
			 * connect, or as the last write to it left it */
			uint64_t k = wc[i].wr_id % (2ull * q->tr.depth), seq = L_READ_MARK | k;
			bool ok = l_check_pattern(send_slot(q, wc[i].wr_id), q->run.size, &seq) &&
			          (seq & ~L_READ_MARK) % (2ull * q->tr.depth) == k;
			atomic_fetch_add(ok ? &q->c.verified : &q->c.bad, 1);
		}
		atomic_fetch_add(&q->c.completed, 1);
		atomic_fetch_add(&q->c.bytes, bytes);
		atomic_store(&q->c.t_last_ns, l_now_ns());
	}
	if (!atomic_load_explicit(&q->running, memory_order_relaxed))
		return work;
	uint64_t now = l_now_ns(), lim = allowed(q, now);
	while (q->outstanding < q->run.depth && q->seq < lim) {
		if (post_one(q)) {
			atomic_fetch_add(&q->c.errors, 1);
			atomic_store(&q->running, false);
			break;
		}
		work++;
	}
	return work;
}

unsigned l_traffic_step(struct l_lcore *lc)
{
	unsigned work = 0;

	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];

		if (!q->live || q->lcore != lc->idx)
			continue;
		work += q->passive ? step_passive(q) : step_active(q);
	}
	if (work)
		atomic_fetch_add_explicit(&lc->traffic_work, work, memory_order_relaxed);
	return work;
}

/* ---- commands ---- */

static int op_parse(const char *s, enum l_op *out)
{
	for (int k = 0; k < L_OP__COUNT; k++)
		if (!strcmp(s, op_names[k])) {
			*out = (enum l_op)k;
			return 0;
		}
	return -1;
}

int l_cmd_set_traffic(int argc, char **argv)
{
	struct l_traffic t = L.tr;
	uint64_t v;

	if (argc < 3)
		return -EINVAL;
	if (op_parse(argv[2], &t.op)) {
		l_err("set traffic: '%s' is not write, send, read or write_imm\n", argv[2]);
		return -EINVAL;
	}
	for (int i = 3; i < argc; i += 2) {
		const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			l_err("set traffic: '%s' needs a value\n", k);
			return -EINVAL;
		}
		if (!strcmp(k, "size")) {
			if (l_parse_uint(val, L_MAX_SIZE, &v) || !v) {
				l_err("set traffic: size '%s' is not a number of bytes in 1..%u\n", val, L_MAX_SIZE);
				return -EINVAL;
			}
			t.size = (uint32_t)v;
		} else if (!strcmp(k, "depth")) {
			if (l_parse_uint(val, L_MAX_DEPTH, &v) || !v) {
				l_err("set traffic: depth '%s' is not a number of messages in 1..%d\n", val, L_MAX_DEPTH);
				return -EINVAL;
			}
			t.depth = (uint32_t)v;
		} else if (!strcmp(k, "rate")) {
			char *end;
			double r = strtod(val, &end);
			if (end == val || *end || !(r >= 0 && r <= 1e7)) {
				l_err("set traffic: rate '%s' is not Mbit/s in 0..10000000 (0: as fast as it goes)\n", val);
				return -EINVAL;
			}
			t.rate_mbps = r;
		} else if (!strcmp(k, "verify")) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				l_err("set traffic: verify '%s' is not on or off\n", val);
				return -EINVAL;
			}
			t.verify = !strcmp(val, "on");
		} else {
			l_err("set traffic: unknown option '%s': size, depth, rate, verify\n", k);
			return -EINVAL;
		}
	}
	if (t.size > 4096 * 64 && t.depth * 3ull * t.size > (1ull << 32)) {
		l_err("set traffic: size x depth x 3 (%llu bytes of buffers per QP) is above 4 GiB\n",
		      3ull * t.size * t.depth);
		return -EINVAL;
	}
	L.tr = t;
	l_out("traffic: %s, %u B, %u in flight, %s, verify %s (connect or accept lays out the buffers for it)\n",
	      l_op_str(t.op), t.size, t.depth, t.rate_mbps > 0 ? "paced" : "unpaced", t.verify ? "on" : "off");
	if (t.rate_mbps > 0)
		l_out("traffic: %.1f Mbit/s per QP\n", t.rate_mbps);
	return 0;
}

/* Why this QP cannot run t, or NULL. */
static const char *cannot_run(const struct l_qp *q, const struct l_traffic *t, char *buf, size_t len)
{
	if (t->op == L_OP_READ && q->kind != L_RC)
		snprintf(buf, len, "READ is an rc operation; a %s QP has none", l_kind_str(q->kind));
	else if (q->kind == L_UD && t->op != L_OP_SEND)
		snprintf(buf, len, "a UD QP sends only (set traffic send)");
	else if (t->size > q->tr.size || t->depth > q->tr.depth)
		snprintf(buf, len, "it was connected for %u B x %u (its buffers and its peer's); set traffic no larger, "
		         "or connect another QP", q->tr.size, q->tr.depth);
	else if (t->verify && (t->size != q->tr.size || t->depth != q->tr.depth))
		snprintf(buf, len, "verify checks slots laid out at connect (%u B x %u): use that size and depth",
		         q->tr.size, q->tr.depth);
	else
		return NULL;
	return buf;
}

static int start_fn(struct l_lcore *lc, void *arg)
{
	struct l_qp *q = arg;

	(void)lc;
	memset(&q->c, 0, sizeof(q->c));
	q->seq = 0;
	q->t_start_ns = l_now_ns();
	q->allowance = L.tx_first ? q->run.depth : 1;
	atomic_store(&q->draining, false);
	atomic_store(&q->running, true);
	return 0;
}

static int stop_fn(struct l_lcore *lc, void *arg)
{
	struct l_qp *q = arg;

	(void)lc;
	atomic_store(&q->running, false);
	return (int)q->outstanding;
}

static int outstanding_fn(struct l_lcore *lc, void *arg)
{
	(void)lc;
	return (int)((struct l_qp *)arg)->outstanding;
}

int l_cmd_start(int argc, char **argv)
{
	char why[256];
	int n = 0;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "tx_first")))
		return -EINVAL;
	if (L.traffic_on) {
		l_err("start: traffic is already running (stop ends it)\n");
		return -EBUSY;
	}
	int skipped = 0;
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		q->run_skip = false;
		if (!q->used || q->state != L_QP_CONNECTED || q->passive)
			continue;
		if (cannot_run(q, &L.tr, why, sizeof(why))) {
			l_err("start: QP %d stays idle: %s\n", i, why);
			q->run_skip = true;
			skipped++;
			continue;
		}
		n++;
	}
	if (!n) {
		if (!skipped)
			l_err("start: no QP to send on: connect qp N IP (or connect qp N local M) first; accepted QPs "
			      "serve their peer\n");
		return -ENOENT;
	}
	L.tx_first = argc == 2;
	L.traffic_on = true;
	L.t_traffic_ns = l_now_ns();
	L.st_bytes = 0;
	L.st_ns = L.t_traffic_ns;
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		if (!q->used || q->state != L_QP_CONNECTED || q->passive || q->run_skip)
			continue;
		q->run = L.tr;
		q->run_open = true;
		l_call(q->lcore, start_fn, q);
	}
	l_out("traffic started: %s %u B x %u on %d QP(s)%s\n", l_op_str(L.tr.op), L.tr.size, L.tr.depth, n,
	      L.tx_first ? ", first burst at once" : "");
	return 0;
}

void l_traffic_stop_qp(struct l_qp *q)
{
	uint64_t end = l_now_ns() + L_DRAIN_NS;

	l_call(q->lcore, stop_fn, q);
	while (l_call(q->lcore, outstanding_fn, q) > 0 && l_now_ns() < end)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
}

void l_traffic_scan_writes(struct l_qp *q)
{
	uint64_t good = 0, bad = 0;

	if (!q->tr.verify || q->tr.op != L_OP_WRITE || !q->buf)
		return;
	for (uint64_t k = 0; k < 2ull * q->tr.depth; k++) {
		uint64_t seq = k;

		if (q->tr.size >= 8 && (memcpy(&seq, recv_slot(q, k), 8), seq & L_READ_MARK))
			continue; /* not written */
		if (l_check_pattern(recv_slot(q, k), q->tr.size, &seq) && seq % (2ull * q->tr.depth) == k)
			good++;
		else
			bad++;
	}
	/* writes make no completions here: the slots as they are now are the count */
	atomic_store(&q->c.verified, good);
	atomic_store(&q->c.bad, bad);
}

static void summary(struct l_qp *q, uint64_t left, uint64_t retx)
{
	uint64_t msgs = atomic_load(&q->c.completed), bytes = atomic_load(&q->c.bytes);
	uint64_t t0 = atomic_load(&q->c.t_first_ns), t1 = atomic_load(&q->c.t_last_ns);
	double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	double mbs = secs > 0 ? (double)bytes / secs / 1e6 : 0;
	bool rd = q->run.op == L_OP_READ;

	if (L.json) {
		l_out("{\"event\":\"stop\",\"qp\":%d,\"op\":\"%s\",\"size\":%u,\"depth\":%u,\"posted\":%" PRIu64
		      ",\"completed\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"MBps\":%.3f,\"Gbps\":%.4f"
		      ",\"retransmits\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"partial\":%" PRIu64 ",\"verified\":%" PRIu64
		      ",\"bad\":%" PRIu64 ",\"in_flight_left\":%" PRIu64 ",\"checked_by\":\"%s\"}\n", q->id,
		      l_op_str(q->run.op), q->run.size, q->run.depth, atomic_load(&q->c.posted), msgs, bytes, secs, mbs,
		      mbs * 8 / 1e3, retx, atomic_load(&q->c.errors), atomic_load(&q->c.partial),
		      atomic_load(&q->c.verified), atomic_load(&q->c.bad), left,
		      !q->run.verify ? "none" : rd ? "this end" : "the receiver");
		return;
	}
	l_out("  ------- Forward statistics for QP %d (%s %u B x %u to %s) -------\n", q->id, l_op_str(q->run.op),
	      q->run.size, q->run.depth, q->peer);
	l_out("  Posted: %-12" PRIu64 " Completed: %-12" PRIu64 " Errors: %" PRIu64 "%s\n", atomic_load(&q->c.posted),
	      msgs, atomic_load(&q->c.errors), atomic_load(&q->c.errors) ? " (the QP failed: show qp)" : "");
	l_out("  Bytes: %-13" PRIu64 " Seconds: %-10.3f   %.2f MB/s (%.3f Gb/s), %.3f Mmsg/s\n", bytes, secs, mbs,
	      mbs * 8 / 1e3, secs > 0 ? (double)msgs / secs / 1e6 : 0);
	l_out("  Retransmits: %-8" PRIu64 " Partial: %-8" PRIu64, retx, atomic_load(&q->c.partial));
	if (!q->run.verify)
		l_out(" Data: not checked (verify off)\n");
	else if (rd)
		l_out(" Data: %" PRIu64 " verified, %" PRIu64 " bad\n", atomic_load(&q->c.verified), atomic_load(&q->c.bad));
	else
		l_out(" Data: checked by the receiver\n");
	if (left)
		l_out("  NOT completed: %" PRIu64 " message(s) still in flight after %.0f s\n", left, L_DRAIN_NS / 1e9);
}

int l_cmd_stop(int argc, char **argv)
{
	if (argc != 1)
		return -EINVAL;
	if (!L.traffic_on) {
		l_err("stop: no traffic runs (start begins it)\n");
		return -ENOENT;
	}
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		if (q->used && q->state == L_QP_CONNECTED && !q->passive && q->run_open)
			l_call(q->lcore, stop_fn, q);
	}
	L.traffic_on = false;
	if (L.status_shown)
		l_out("\n");
	if (!L.json)
		l_out("  ---------------------- traffic stopped: summary per QP ----------------------\n");
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		struct uroce_qp_attr attr;
		struct uroce_qp_stats st = {0};
		struct uroce_failover_info fo;
		bool has_fo;

		if (!q->used || q->state != L_QP_CONNECTED || q->passive || !q->run_open)
			continue;
		l_traffic_stop_qp(q);
		uint64_t left = (uint64_t)l_call(q->lcore, outstanding_fn, q);
		l_qp_show_data(q, &attr, &st, &fo, &has_fo);
		summary(q, left, st.retransmits);
		l_qp_close_active(q);
	}
	if (!L.json)
		l_out("  ---------------------------------------------------------------------------\n");
	return 0;
}

void l_traffic_status(bool final)
{
	uint64_t bytes = 0, msgs = 0, retx = 0, now = l_now_ns();
	int nq = 0;
	char drops[512] = "";
	size_t dl = 0;
	uint64_t drop[UROCE_DROP__COUNT] = {0};

	(void)final;
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		struct uroce_qp_attr attr;
		struct uroce_qp_stats st;
		struct uroce_failover_info fo;
		bool has_fo;

		if (!q->used || q->state != L_QP_CONNECTED || q->passive || !q->run_open)
			continue;
		nq++;
		bytes += atomic_load(&q->c.bytes);
		msgs += atomic_load(&q->c.completed);
		if (!l_qp_show_data(q, &attr, &st, &fo, &has_fo))
			retx += st.retransmits;
	}
	for (int p = 0; p < L.nports; p++) {
		struct uroce_port_stats ps;
		if (!l_port_stats(p, &ps))
			for (int r = 1; r < UROCE_DROP__COUNT; r++)
				drop[r] += ps.drops[r];
	}
	for (int r = 1; r < UROCE_DROP__COUNT && dl < sizeof(drops); r++)
		if (drop[r])
			dl += (size_t)snprintf(drops + dl, sizeof(drops) - dl, " %s %" PRIu64, uroce_drop_reason_name(r),
			                       drop[r]);
	double secs = (double)(now - L.st_ns) / 1e9;
	double mbs = secs > 0 ? (double)(bytes - L.st_bytes) / secs / 1e6 : 0;
	L.st_bytes = bytes;
	L.st_ns = now;
	char line[1024];
	snprintf(line, sizeof(line), "[%s %u B x %u, %d QP(s)] %.2f MB/s (%.3f Gb/s) | %" PRIu64 " msgs | retx %" PRIu64
	         " | drops:%s", l_op_str(L.tr.op), L.tr.size, L.tr.depth, nq, mbs, mbs * 8 / 1e3, msgs, retx,
	         dl ? drops : " none");
	l_cli_before_output();
	if (L.status_shown)
		fputs("\033[A\r\033[K", stdout); /* over the last status line */
	printf("%s\n", line);
	fflush(stdout);
	l_cli_after_output();
	L.status_shown = true;
}
