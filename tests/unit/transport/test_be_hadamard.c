/* SPDX-License-Identifier: MIT */
/* be receives that decode OptiNIC's Hadamard coding (rel.hd_block), over
 * the loop fabric in simulated time. The sender encodes float32 data with
 * uroce_hadamard_encode and SENDs it; a test filter drops chosen packets.
 * The receive buffer starts as garbage (0xab bytes), so a byte the engine
 * did not zero would decode into garbage:
 * - lossless: the completion is whole and UROCE_WC_HADAMARD, the buffer
 *   is the data within float rounding;
 * - packets lost in the middle (PARTIAL) and the last one (TIMEOUT): every
 *   decoded float is off by exactly what the model says, the lost
 *   coefficients of its block / sqrt(block) (stride = the floats of a
 *   packet: one per block and packet), and the error's energy is the lost
 *   coefficients' energy;
 * - a message with a tail shorter than a group: the groups decoded, the
 *   tail as sent;
 * - a QP without the option leaves the buffer encoded (no flag);
 * - bad attributes and receive WRs are refused with what is accepted. */
#include <math.h>

#include "tr_test.h"
#include "dataplane/wire.h"

#define TMO_US 2000u
#define PKT_FLOATS 256u /* MTU 1024 */

struct drops {
	int msg;            /* message number to drop in (-1: none) */
	uint32_t idx[8];    /* packet indexes to drop */
	unsigned n, dropped;
};

static bool filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct drops *d = arg;
	struct roce_pkt pkt;
	uint32_t kind, idx, msg;

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE || pkt.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM))
		return false;
	kind = (pkt.imm >> 17) & 7;
	idx = pkt.imm & 0x1ffff;
	msg = pkt.imm >> 20;
	/* data (0), last (1) and the last one's copy (6) */
	if ((int)msg != d->msg || (kind != 0 && kind != 1 && kind != 6))
		return false;
	for (unsigned i = 0; i < d->n; i++)
		if (d->idx[i] == idx) {
			d->dropped++;
			return true;
		}
	return false;
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static void hd_opts(struct tr_opts *o, uint32_t block, uint32_t stride)
{
	tr_opts_default(o, UROCE_QPT_RC);
	o->rel.reliability = UROCE_REL_BE;
	o->rel.timeout_us = TMO_US;
	o->rel.hd_block = block;
	o->rel.hd_stride = stride;
	o->max_wr = 64;
}

/* One message of len bytes from side 0's buffer start into side 1's at
 * offset 0 (filled with 0xab first); its receive completion in *wc. */
static void one_message(struct tr_pair *p, uint64_t id, uint32_t len, struct uroce_wc *wc)
{
	struct tr_side *a = &p->s[0], *b = &p->s[1];
	struct uroce_sge rs, ss;
	struct uroce_recv_wr rw = { .wr_id = id, .sg_list = &rs, .num_sge = 1 };
	struct uroce_send_wr sw;
	struct uroce_wc swc;

	memset(b->buf, 0xab, len);
	tr_sge(&rs, b, 0, len);
	REQUIRE(uroce_post_recv(b->qp, &rw, NULL) == 0, "post_recv: %s", uroce_last_error());
	tr_sge(&ss, a, 0, len);
	tr_wr(&sw, id, &ss, UROCE_WR_SEND);
	REQUIRE(uroce_post_send(a->qp, &sw, NULL) == 0, "post_send: %s", uroce_last_error());
	REQUIRE(tr_wait(p, b->rcq, wc, 200000) == 0, "no receive completion for message %llu", (unsigned long long)id);
	REQUIRE(tr_wait(p, a->scq, &swc, 200000) == 0 && swc.status == UROCE_WC_SUCCESS, "send %llu", (unsigned long long)id);
}

/* Message id of n floats, packets d->idx lost: check the decoded buffer
 * against the model (x original, y the sender's encoded floats). */
static void lossy(uint32_t block, uint32_t stride, uint32_t nfloats, struct drops *d, unsigned want_flags)
{
	static struct tr_pair p;
	struct tr_opts o;
	struct uroce_wc wc;
	float *x = malloc(nfloats * 4), *y = malloc(nfloats * 4), *out;
	size_t group = (size_t)block * stride, whole = nfloats / group * group;
	double worst = 0, err = 0, lost = 0, noise = 0;

	hd_opts(&o, block, stride);
	tr_open(&p, &o, 7, NULL, NULL);
	REQUIRE(loop_fabric_set_filter(p.fab, 0, filter, d) == 0, "filter");
	for (uint32_t i = 0; i < nfloats; i++)
		x[i] = frand();
	memcpy(y, x, nfloats * 4);
	REQUIRE(uroce_hadamard_encode(y, whole, block, stride) == 0, "encode: %s", uroce_last_error());
	memcpy(p.s[0].buf, y, nfloats * 4);
	d->msg = 0;
	one_message(&p, 1, nfloats * 4, &wc);
	out = (float *)(void *)p.s[1].buf;
	CHECK(wc.status == UROCE_WC_SUCCESS && (wc.wc_flags & ~(unsigned)UROCE_WC_WITH_IMM) == want_flags,
	      "block %u stride %u: status %d flags 0x%x, wanted 0x%x", block, stride, wc.status, wc.wc_flags, want_flags);
	CHECK(d->dropped >= d->n && wc.byte_len == nfloats * 4 - d->n * PKT_FLOATS * 4, "dropped %u (the last one and its copy count 2), wanted %u, byte_len %u",
	      d->dropped, d->n, wc.byte_len);
	/* the model: the lost floats of y are zero, then the transform */
	for (unsigned k = 0; k < d->n; k++)
		for (uint32_t i = 0; i < PKT_FLOATS; i++) {
			size_t at = (size_t)d->idx[k] * PKT_FLOATS + i;

			if (at < whole)
				lost += (double)y[at] * y[at];
			y[at] = 0;
		}
	REQUIRE(uroce_hadamard_decode(y, whole, block, stride) == 0, "decode");
	for (size_t i = 0; i < nfloats; i++) {
		double e = (double)out[i] - x[i];

		if (i >= whole) {
			/* the tail: raw, as sent (or zero where lost) */
			CHECK(out[i] == y[i], "tail float %zu: %g, sent %g", i, out[i], y[i]);
			continue;
		}
		err += e * e;
		worst = fabs((double)out[i] - y[i]) > worst ? fabs((double)out[i] - y[i]) : worst;
		noise = fabs(x[i]) > noise ? fabs(x[i]) : noise;
	}
	/* the engine's decode and this model's are the same float operations */
	CHECK(worst == 0, "block %u stride %u: the received buffer is %.3g off the model", block, stride, worst);
	CHECK(fabs(err - lost) <= 1e-4 * lost + 1e-6 * whole * 1e-6, "block %u stride %u: error energy %.6g, lost %.6g",
	      block, stride, err, lost);
	printf("block %u stride %u: %u floats, %u packets lost, flags 0x%x, mse %.3g (lost energy / n %.3g)\n", block,
	       stride, nfloats, d->n, wc.wc_flags, err / (double)whole, lost / (double)whole);
	loop_fabric_set_filter(p.fab, 0, NULL, NULL);
	tr_close(&p);
	free(x);
	free(y);
}

static void lossless_and_plain(void)
{
	static struct tr_pair p;
	struct tr_opts o;
	struct uroce_wc wc;
	const uint32_t n = 65536;
	float *x = malloc(n * 4), *out;
	double worst = 0;

	hd_opts(&o, 256, 256);
	tr_open(&p, &o, 9, NULL, NULL);
	for (uint32_t i = 0; i < n; i++)
		x[i] = frand();
	memcpy(p.s[0].buf, x, n * 4);
	REQUIRE(uroce_hadamard_encode((float *)(void *)p.s[0].buf, n, 256, 256) == 0, "encode");
	one_message(&p, 1, n * 4, &wc);
	out = (float *)(void *)p.s[1].buf;
	for (uint32_t i = 0; i < n; i++)
		worst = fabs((double)out[i] - x[i]) > worst ? fabs((double)out[i] - x[i]) : worst;
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.wc_flags == UROCE_WC_HADAMARD && wc.byte_len == n * 4,
	      "lossless: status %d flags 0x%x byte_len %u", wc.status, wc.wc_flags, wc.byte_len);
	CHECK(worst < 1e-5, "lossless: decoded buffer off the data by %.3g", worst);
	tr_close(&p);

	/* without the option: the buffer stays as it came, encoded */
	hd_opts(&o, 0, 0);
	tr_open(&p, &o, 10, NULL, NULL);
	memcpy(p.s[0].buf, x, n * 4);
	REQUIRE(uroce_hadamard_encode((float *)(void *)p.s[0].buf, n, 256, 256) == 0, "encode");
	one_message(&p, 1, n * 4, &wc);
	CHECK(wc.wc_flags == 0 && !memcmp(p.s[0].buf, p.s[1].buf, n * 4), "plain be: flags 0x%x, bytes %s",
	      wc.wc_flags, memcmp(p.s[0].buf, p.s[1].buf, n * 4) ? "differ" : "same");
	tr_close(&p);
	free(x);
}

static void refusals(void)
{
	static struct tr_pair p;
	struct tr_opts o;
	struct uroce_qp *qp;
	struct uroce_qp_init_attr ia;
	struct uroce_sge sg[2];
	struct uroce_recv_wr rw = { .wr_id = 1, .sg_list = sg, .num_sge = 2 };

	hd_opts(&o, 64, 4);
	tr_open(&p, &o, 11, NULL, NULL);
	struct tr_side *b = &p.s[1];

	tr_sge(&sg[0], b, 0, 64);
	tr_sge(&sg[1], b, 64, 64);
	CHECK(uroce_post_recv(b->qp, &rw, NULL) == -EINVAL && strstr(uroce_last_error(), "one SGE whose address is 4-byte"),
	      "2 SGEs: %s", uroce_last_error());
	rw.num_sge = 1;
	tr_sge(&sg[0], b, 2, 64);
	CHECK(uroce_post_recv(b->qp, &rw, NULL) == -EINVAL && strstr(uroce_last_error(), "4-byte aligned"),
	      "unaligned: %s", uroce_last_error());

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = b->scq;
	ia.recv_cq = b->rcq;
	ia.qp_type = UROCE_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.rel.reliability = UROCE_REL_SR;
	ia.rel.hd_block = 64;
	CHECK(uroce_qp_create(b->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "accepted with rel.reliability be"),
	      "sr with hd_block: %s", uroce_last_error());
	ia.rel.reliability = UROCE_REL_BE;
	ia.rel.hd_block = 100;
	CHECK(uroce_qp_create(b->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "block 100; accepted a power of two"),
	      "hd_block 100: %s", uroce_last_error());
	ia.rel.hd_block = 64;
	ia.rel.hd_stride = 3;
	CHECK(uroce_qp_create(b->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "stride 3; accepted"),
	      "hd_stride 3: %s", uroce_last_error());
	ia.rel.hd_block = 0;
	ia.rel.hd_stride = 4;
	CHECK(uroce_qp_create(b->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "without rel.hd_block"),
	      "hd_stride alone: %s", uroce_last_error());
	tr_close(&p);
}

int main(void)
{
	/* stride = the floats of a packet: a lost packet is one coefficient of each block */
	struct drops mid = { .msg = -1, .idx = { 3, 77, 200 }, .n = 3 };
	struct drops tail = { .msg = -1, .idx = { 255 }, .n = 1 };
	struct drops blk = { .msg = -1, .idx = { 5 }, .n = 1 };
	struct drops big = { .msg = -1, .idx = { 10, 11, 12, 400, 700, 1023 }, .n = 6 };
	struct drops rag = { .msg = -1, .idx = { 1, 257 }, .n = 2 };

	lossless_and_plain();
	lossy(256, 256, 65536, &mid, UROCE_WC_HADAMARD | UROCE_WC_PARTIAL);
	lossy(256, 256, 65536, &tail, UROCE_WC_HADAMARD | UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT);
	/* stride 1: the lost packet held one block whole, zero after decoding */
	lossy(256, 1, 65536, &blk, UROCE_WC_HADAMARD | UROCE_WC_PARTIAL);
	lossy(1024, 256, 262144, &big, UROCE_WC_HADAMARD | UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT);
	/* one group (64 x 256 floats = 64 packets) four times, and a tail of 3 packets */
	lossy(64, 256, 64 * 256 * 4 + 3 * PKT_FLOATS, &rag, UROCE_WC_HADAMARD | UROCE_WC_PARTIAL);
	refusals();
	return test_done("tr_be_hadamard");
}
