/* SPDX-License-Identifier: MIT */
/* OptiNIC's Figure 7 on a real be transfer: the error a lossy be SEND
 * leaves in float32 data, raw or Hadamard-coded (per message, per block,
 * per block with stride). Two processes, each started by `ip netns exec`
 * in its namespace, meet through a shared file (ns_pair.h); the loss is
 * whatever the path drops (uroce-impair in hd_mse.sh's router).
 *
 * Message i, closed loop: both ends draw the same data from --seed and i
 * (gradient-like: N(0,1), one value in 1000 thirty times larger). The
 * sender encodes it (uroce_hadamard_encode, --block/--stride; timed, with
 * a memcpy of the same buffer as the baseline) and SENDs it once the
 * receiver has posted its receive. The receiver's QP decodes
 * (rel.hd_block: the engine zeroes what never arrived, uroce_poll_cq
 * decodes, timed); raw, it zeroes the buffer before the post. Its buffer
 * starts each message as 0x7f bytes (3.4e38 a float), so a byte nobody
 * zeroed would show. It compares with the data and sums: the squared
 * error over the data's energy (NMSE), the largest error and the share of
 * floats off by more than 0.1 and 1 rms of the data.
 *
 * --check (coded runs): each message against the model of the transform:
 * re-encoded, the buffer must be, packet by packet, either the sent
 * coefficients (arrived) or zero (lost), the lost packets' bytes must be
 * what the completion says is missing, and the error's energy the lost
 * coefficients' energy. A failed message fails the run.
 *
 *   hd_mse --role send|recv --dev afxdp:IFACE --shm FILE --floats N
 *          --count M [--block B] [--stride S] [--seed X] [--timeout-us U]
 *          [--max-sec S] [--check]
 *
 * --block 0 (default): raw. --block N with --floats N: one transform over
 * the message. The receiver prints "hd_mse result k=v ...", the sender
 * "hd_mse sender k=v ..." (the encode's cost). Exit 0, 1 on a failure of
 * either end or a --check, 2 on a bad argument. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_pair.h"

#define HD_MAX_FLOATS (16u << 20)
#define HD_MAX_COUNT 100000u

struct hd_shm {
	struct ns_hdr h;
	uint32_t posted __attribute__((aligned(64)));
	uint32_t done __attribute__((aligned(64)));
};

struct hd_opts {
	struct ns_args a;
	uint64_t floats, count, block, stride, seed, timeout_us;
	bool check;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hd_mse --role send|recv --dev afxdp:IFACE --shm FILE --floats N --count M\n"
	           "              [--block B] [--stride S] [--seed X] [--timeout-us U] [--max-sec S] [--check]\n"
	           "  --floats N    floats a message, 1024 .. %u, a multiple of block x stride\n"
	           "  --count M     messages, 1 .. %u\n"
	           "  --block B     Hadamard block, 0 (raw, the default) or a power of two 2 .. 2^24\n"
	           "  --stride S    blocks a group interleaves, a power of two 1 .. 65536 (default 1)\n"
	           "  --seed X      the data's seed (both ends the same; default 1)\n"
	           "  --timeout-us  be's deadline of a message (default 300000)\n"
	           "  --check       (coded) hold every message to the transform's model\n",
	        HD_MAX_FLOATS, HD_MAX_COUNT);
}

static void parse(int argc, char **argv, struct hd_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS,
		{ "floats", required_argument, NULL, 'n' }, { "count", required_argument, NULL, 'c' },
		{ "block", required_argument, NULL, 'b' },  { "stride", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'x' },   { "timeout-us", required_argument, NULL, 't' },
		{ "check", no_argument, NULL, 'k' },        { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	ns_args_init("hd_mse", usage);
	memset(o, 0, sizeof(*o));
	o->a.max_sec = 120;
	o->stride = 1;
	o->seed = 1;
	o->timeout_us = 300000;
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'n':
			o->floats = ns_arg_u64("--floats", optarg, 1024, HD_MAX_FLOATS, "1024 to 16M (k/m suffixes: x1024)");
			break;
		case 'c':
			o->count = ns_arg_u64("--count", optarg, 1, HD_MAX_COUNT, "1 to 100000");
			break;
		case 'b':
			o->block = ns_arg_u64("--block", optarg, 0, 1u << 24, "0 (raw) or a power of two 2 to 2^24");
			if (o->block == 1 || (o->block & (o->block - 1)))
				ns_bad("--block", optarg, "0 (raw) or a power of two 2 to 2^24");
			break;
		case 's':
			o->stride = ns_arg_u64("--stride", optarg, 1, 65536, "a power of two 1 to 65536");
			if (o->stride & (o->stride - 1))
				ns_bad("--stride", optarg, "a power of two 1 to 65536");
			break;
		case 'x':
			o->seed = ns_arg_u64("--seed", optarg, 0, UINT64_MAX, "0 to 2^64-1");
			break;
		case 't':
			o->timeout_us = ns_arg_u64("--timeout-us", optarg, 1, 60000000, "1 to 60000000 us");
			break;
		case 'k':
			o->check = true;
			break;
		default:
			ns_help_or_bad(c);
		}
	}
	ns_args_end(argc, argv, ns_args_missing(&o->a) || !o->floats || !o->count,
	            "--role, --dev, --shm, --floats and --count");
	if (o->block && o->floats % (o->block * o->stride))
		ns_bad("--floats", "(given)", "a multiple of --block x --stride");
	if (!o->block && o->stride != 1)
		ns_bad("--stride", "(given)", "1 without --block");
	if (o->check && !o->block)
		ns_bad("--check", "(given)", "with --block (a coded run)");
}

/* Message i's data: N(0,1), one value in 1000 thirty times larger. */
static void gen(float *x, uint64_t n, uint64_t seed, uint64_t i)
{
	uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (i + 1) * 0xbf58476d1ce4e5b9ull;

	for (uint64_t k = 0; k < n; k += 2) {
		double u1, u2, r;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		u1 = ((double)(s >> 11) + 1.0) / 9007199254740993.0;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		u2 = (double)(s >> 11) / 9007199254740992.0;
		r = sqrt(-2.0 * log(u1));
		x[k] = (float)(r * cos(2 * M_PI * u2) * ((s & 1023) == 0 ? 30.0 : 1.0));
		x[k + 1] = (float)(r * sin(2 * M_PI * u2) * ((s & 1023) == 1 ? 30.0 : 1.0));
	}
}

static void run_sender(struct ns_end *e, struct hd_shm *s, float *buf, const struct hd_opts *o)
{
	uint64_t bytes = o->floats * 4, enc_ns = 0, cpy_ns = 0, msg_ns = (uint64_t)(o->a.max_sec * 1e9);
	float *scratch = malloc(bytes);
	struct uroce_sge sg = { (uint64_t)(uintptr_t)buf, (uint32_t)bytes, e->mr->lkey };
	struct uroce_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_SEND,
		                    .send_flags = UROCE_SEND_SIGNALED };
	struct uroce_wc wc;
	uint64_t i, cut = 0;
	int rc;

	if (!scratch)
		ns_die("out of memory");
	for (i = 0; i < o->count; i++) {
		uint64_t t0, t1;

		gen(buf, o->floats, o->seed, i);
		if (o->block) {
			t0 = ns_now_ns();
			rc = uroce_hadamard_encode(buf, o->floats, (uint32_t)o->block, (uint32_t)o->stride);
			t1 = ns_now_ns();
			if (rc)
				ns_die_rc(rc, "hadamard_encode");
			enc_ns += t1 - t0;
			/* the baseline: a plain copy of the same buffer */
			t0 = ns_now_ns();
			memcpy(scratch, buf, bytes);
			__asm__ volatile("" ::"r"(scratch) : "memory");
			cpy_ns += ns_now_ns() - t0;
		}
		if (ns_wait_ge(e, &s->posted, (uint32_t)i + 1, msg_ns))
			ns_die("the receiver did not post receive %" PRIu64, i);
		wr.wr_id = i;
		if ((rc = uroce_post_send(e->qp, &wr, NULL)) != 0)
			ns_die_rc(rc, "post_send");
		while (!ns_poll(e, e->scq, &wc))
			ns_check_peer(e);
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != i)
			ns_die("send %" PRIu64 ": %s", i, uroce_wc_status_str(wc.status));
		cut += !!(wc.wc_flags & UROCE_WC_TIMEOUT);
		if (ns_wait_ge(e, &s->done, (uint32_t)i + 1, msg_ns))
			ns_die("the receiver did not complete message %" PRIu64, i);
	}
	printf("hd_mse sender n=%" PRIu64 " floats=%" PRIu64 " block=%" PRIu64 " stride=%" PRIu64
	       " encode_ns_per_float=%.3f memcpy_ns_per_float=%.3f encode_over_memcpy=%.2f sends_cut=%" PRIu64 "\n",
	       i, o->floats, o->block, o->stride, (double)enc_ns / (double)(i * o->floats),
	       (double)cpy_ns / (double)(i * o->floats), cpy_ns ? (double)enc_ns / (double)cpy_ns : 0.0, cut);
	free(scratch);
}

/* --check: message out (decoded) against x (the data) and y (its
 * encoding); the lost packets' count, or -1 when the model does not hold. */
static int check_model(const float *out, const float *y, float *z, const struct hd_opts *o, uint32_t pkt_floats,
                       uint32_t byte_len, double err2)
{
	uint64_t n = o->floats, lost_pkts = 0;
	double lost2 = 0, top = 0;

	memcpy(z, out, n * 4);
	uroce_hadamard_encode(z, n, (uint32_t)o->block, (uint32_t)o->stride);
	for (uint64_t i = 0; i < n; i++)
		top = fabs(y[i]) > top ? fabs(y[i]) : top;
	/* a coefficient's rounding through decode and encode again */
	double tol = 1e-5 * top + 1e-6;

	for (uint64_t p = 0; p < n; p += pkt_floats) {
		uint64_t end = p + pkt_floats < n ? p + pkt_floats : n;
		bool as_sent = true, zero = true;

		for (uint64_t i = p; i < end; i++) {
			as_sent &= fabs(z[i] - y[i]) <= tol;
			zero &= fabs(z[i]) <= tol;
		}
		if (!as_sent && !zero)
			return -1;
		if (!as_sent) {
			lost_pkts++;
			for (uint64_t i = p; i < end; i++)
				lost2 += (double)y[i] * y[i];
		}
	}
	if (n * 4 - byte_len != lost_pkts * pkt_floats * 4 || fabs(err2 - lost2) > 1e-3 * lost2 + 1e-3)
		return -1;
	return (int)lost_pkts;
}

static void run_receiver(struct ns_end *e, struct hd_shm *s, float *buf, const struct hd_opts *o)
{
	uint64_t n = o->floats, bytes = n * 4, dec_ns = 0, msg_ns = (uint64_t)(o->a.max_sec * 1e9);
	uint32_t pkt_floats = (128u << e->mtu) / 4;
	float *x = malloc(bytes), *y = o->check ? malloc(bytes) : NULL, *z = o->check ? malloc(bytes) : NULL;
	struct uroce_sge sg = { (uint64_t)(uintptr_t)buf, (uint32_t)bytes, e->mr->lkey };
	struct uroce_recv_wr rw = { .sg_list = &sg, .num_sge = 1 };
	struct uroce_wc wc;
	double err2 = 0, energy = 0, worst = 0, placed = 0, rms;
	uint64_t gt01 = 0, gt1 = 0, partial = 0, tmo = 0, flagged = 0, check_fail = 0, i;
	int rc;

	if (!x || (o->check && (!y || !z)))
		ns_die("out of memory");
	for (i = 0; i < o->count; i++) {
		uint64_t t0, t1, end = ns_now_ns() + msg_ns;
		double m_err2 = 0, m_energy = 0;

		memset(buf, o->block ? 0x7f : 0, bytes); /* coded: the engine must zero what it lacks */
		rw.wr_id = i;
		if ((rc = uroce_post_recv(e->qp, &rw, NULL)) != 0)
			ns_die_rc(rc, "post_recv");
		ns_put(&s->posted, (uint32_t)i + 1);
		for (;;) {
			ns_progress(e);
			t0 = ns_now_ns();
			rc = uroce_poll_cq(e->rcq, 1, &wc);
			t1 = ns_now_ns();
			if (rc < 0)
				ns_die_rc(rc, "poll_cq");
			if (rc == 1)
				break;
			ns_check_peer(e);
			if (t1 > end)
				ns_die("message %" PRIu64 ": no receive completion", i);
		}
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != i)
			ns_die("receive %" PRIu64 ": %s", i, uroce_wc_status_str(wc.status));
		if (o->block && !(wc.wc_flags & UROCE_WC_HADAMARD))
			ns_die("receive %" PRIu64 " was not decoded (flags 0x%x)", i, wc.wc_flags);
		flagged += !!(wc.wc_flags & UROCE_WC_HADAMARD);
		dec_ns += t1 - t0;
		partial += !!(wc.wc_flags & UROCE_WC_PARTIAL);
		tmo += !!(wc.wc_flags & UROCE_WC_TIMEOUT);
		placed += wc.byte_len;
		gen(x, n, o->seed, i);
		for (uint64_t k = 0; k < n; k++)
			m_energy += (double)x[k] * x[k];
		rms = sqrt(m_energy / (double)n);
		for (uint64_t k = 0; k < n; k++) {
			double d = fabs((double)buf[k] - x[k]);

			m_err2 += d * d;
			gt01 += d > 0.1 * rms;
			gt1 += d > rms;
			worst = d / rms > worst ? d / rms : worst;
		}
		err2 += m_err2;
		energy += m_energy;
		if (o->check) {
			memcpy(y, x, bytes);
			uroce_hadamard_encode(y, n, (uint32_t)o->block, (uint32_t)o->stride);
			if (check_model(buf, y, z, o, pkt_floats, wc.byte_len, m_err2) < 0) {
				check_fail++;
				ns_say("message %" PRIu64 ": the decoded buffer does not fit the model (byte_len %u of %" PRIu64
				       ")", i, wc.byte_len, bytes);
			}
		}
		ns_put(&s->done, (uint32_t)i + 1);
	}
	printf("hd_mse result floats=%" PRIu64 " block=%" PRIu64 " stride=%" PRIu64 " pkt_floats=%u n=%" PRIu64
	       " lost_frac=%.6f nmse=%.6g max_err_rms=%.4g frac_err_gt_0.1rms=%.6g frac_err_gt_1rms=%.6g partial=%" PRIu64
	       " timeout=%" PRIu64 " decoded=%" PRIu64 " decode_ns_per_float=%.3f check_fail=%" PRIu64 "\n",
	       n, o->block, o->stride, pkt_floats, i, 1.0 - placed / ((double)i * (double)bytes), err2 / energy, worst,
	       (double)gt01 / ((double)i * (double)n), (double)gt1 / ((double)i * (double)n), partial, tmo, flagged,
	       o->block ? (double)dec_ns / (double)(i * n) : 0.0, check_fail);
	free(x);
	free(y);
	free(z);
	if (check_fail)
		ns_die("%" PRIu64 " of %" PRIu64 " messages did not fit the model", check_fail, i);
}

int main(int argc, char **argv)
{
	struct hd_opts o;
	struct ns_qp_opts q = { 0 };
	struct hd_shm *s;
	struct ns_end e;
	float *buf;

	ns_name = "hd_mse";
	parse(argc, argv, &o);
	s = ns_map(o.a.shm, sizeof(*s));
	if (posix_memalign((void **)&buf, 4096, o.floats * 4))
		ns_die("cannot allocate %" PRIu64 " floats", o.floats);
	memset(buf, 0, o.floats * 4);
	q.rel.reliability = UROCE_REL_BE;
	q.rel.timeout_us = (uint32_t)o.timeout_us;
	if (o.a.role == NS_RECEIVER) {
		q.rel.hd_block = (uint32_t)o.block;
		q.rel.hd_stride = o.block ? (uint32_t)o.stride : 0;
	}
	q.sq = q.rq = 4;
	q.cqe = 16;
	ns_open(&e, &s->h, o.a.role, o.a.dev, buf, o.floats * 4, &q);
	ns_tag_role(&e);
	ns_connect(&e, &q, 30);
	if (o.a.role == NS_SENDER)
		run_sender(&e, s, buf, &o);
	else
		run_receiver(&e, s, buf, &o);
	fflush(stdout);
	ns_close(&e);
	free(buf);
	return 0;
}
