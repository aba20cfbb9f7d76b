/* SPDX-License-Identifier: MIT */
/* The frame path's side of the segment boundary (seg.h): a segment
 * becomes one RoCEv2 UC packet, its bytes gathered straight into the
 * frame. */
#include <string.h>

#include "transport/core/nic.h"
#include "transport/core/seg.h"

static const uint8_t seg_opcode[] = {
	[SEG_WRITE] = ROCE_TR_UC | ROCE_OP_WRITE_ONLY,
	[SEG_WRITE_IMM] = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM,
	[SEG_SEND] = ROCE_TR_UC | ROCE_OP_SEND_ONLY,
	[SEG_SEND_IMM] = ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM,
};

static void seg_gather(void *arg, uint8_t *dst, uint32_t len)
{
	const struct seg *s = arg;

	sge_copy_out(s->sge, s->nsge, s->off, dst, len);
}

int ctx_send_seg(struct uroce_context *ctx, const struct seg *s)
{
	struct roce_pkt pkt;

	if (ctx->nic)
		return ctx->nic->seg_post(s->qp, s);
	ctx_pkt_init(ctx, &pkt, s->d, s->sport);
	if (s->flags & SEG_ECT)
		pkt.tos = (uint8_t)((pkt.tos & ~3u) | 2u); /* ECT(0) */
	pkt.opcode = seg_opcode[s->op];
	pkt.dqpn = s->dqpn;
	pkt.psn = s->psn;
	pkt.ackreq = (s->flags & SEG_ACKREQ) != 0;
	pkt.payload_len = s->len;
	pkt.payload = s->buf;
	if (s->op == SEG_WRITE || s->op == SEG_WRITE_IMM) {
		pkt.reth.va = s->va;
		pkt.reth.rkey = s->rkey;
		pkt.reth.dma_len = s->len;
	}
	pkt.imm = s->imm;
	return ctx_send_pkt(ctx, s->d->port, &pkt, s->sge && s->len ? seg_gather : NULL, (void *)s);
}
