/* SPDX-License-Identifier: MIT */
/* Paged writes (TransferEngine's submit_paged_writes): a list of source
 * pages to a list of destination pages in one call, ending with one
 * WRITE_WITH_IMM. Runs of pages adjacent on both sides go as one WRITE.
 * The last WR carries UROCE_SEND_FENCE: on sr and ec the receiver then
 * completes (or counts) it only once every packet sent before it has
 * arrived, so the immediate means "all pages are here" without ordering;
 * rc delivers in order anyway. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"

#define PAGED_RUN_MAX (16u << 20) /* bytes one WRITE of a run carries at most */
#define PAGED_MAX_PAGES (1u << 20)

static uint64_t page_addr(uint64_t base, uint32_t stride, uint32_t idx)
{
	return base + (uint64_t)idx * stride;
}

int uroce_post_paged_write(struct uroce_qp *qp, const struct uroce_paged_write *pw)
{
	uint32_t sstride, dstride, nwr = 0, free_wr, i = 0;
	struct uroce_send_wr *wrs;
	struct uroce_sge *sges;
	int rc;

	if (!qp || !pw)
		return uroce_fail(-EINVAL, "uroce_post_paged_write: qp and pw are required");
	if (pw->npages > PAGED_MAX_PAGES || (pw->npages && (!pw->page_len || !pw->src_pages || !pw->dst_pages)))
		return uroce_fail(-EINVAL, "uroce_post_paged_write: npages %u, page_len %u, src_pages %p, dst_pages %p; "
		                           "accepted 0-%u pages, each with page_len > 0 and both index lists",
		                  pw->npages, pw->page_len, (const void *)pw->src_pages, (const void *)pw->dst_pages,
		                  PAGED_MAX_PAGES);
	if (pw->page_len > PAGED_RUN_MAX)
		return uroce_fail(-EINVAL, "uroce_post_paged_write: page_len %u; accepted up to %u", pw->page_len,
		                  PAGED_RUN_MAX);
	if (pw->send_flags & ~(unsigned)UROCE_SEND_SIGNALED)
		return uroce_fail(-EINVAL, "uroce_post_paged_write: send_flags 0x%x; accepted UROCE_SEND_SIGNALED",
		                  pw->send_flags);
	sstride = pw->src_stride ? pw->src_stride : pw->page_len;
	dstride = pw->dst_stride ? pw->dst_stride : pw->page_len;
	if (pw->npages && (sstride < pw->page_len || dstride < pw->page_len))
		return uroce_fail(-EINVAL, "uroce_post_paged_write: strides %u and %u; a stride is 0 or at least "
		                           "page_len %u (pages do not overlap)", pw->src_stride, pw->dst_stride,
		                  pw->page_len);
	wrs = calloc(pw->npages ? pw->npages : 1, sizeof(*wrs));
	sges = calloc(pw->npages ? pw->npages : 1, sizeof(*sges));
	if (!wrs || !sges) {
		free(wrs);
		free(sges);
		return uroce_fail(-ENOMEM, "uroce_post_paged_write: out of memory");
	}
	/* one WR per run of pages that follow each other on both sides */
	while (i < pw->npages) {
		uint64_t src = page_addr(pw->src_base, sstride, pw->src_pages[i]);
		uint64_t dst = page_addr(pw->dst_base, dstride, pw->dst_pages[i]);
		uint32_t len = pw->page_len;

		for (i++; i < pw->npages && len + pw->page_len <= PAGED_RUN_MAX; i++) {
			if (page_addr(pw->src_base, sstride, pw->src_pages[i]) != src + len ||
			    page_addr(pw->dst_base, dstride, pw->dst_pages[i]) != dst + len)
				break;
			len += pw->page_len;
		}
		sges[nwr] = (struct uroce_sge){ .addr = src, .length = len, .lkey = pw->lkey };
		wrs[nwr].sg_list = &sges[nwr];
		wrs[nwr].num_sge = 1;
		wrs[nwr].opcode = UROCE_WR_RDMA_WRITE;
		wrs[nwr].wr.rdma.remote_addr = dst;
		wrs[nwr].wr.rdma.rkey = pw->rkey;
		nwr++;
	}
	if (!nwr) {
		/* no pages: the immediate alone (TransferEngine's barrier) */
		wrs[0].opcode = UROCE_WR_RDMA_WRITE;
		wrs[0].wr.rdma.rkey = pw->rkey;
		wrs[0].wr.rdma.remote_addr = pw->dst_base;
		nwr = 1;
	}
	for (uint32_t k = 0; k + 1 < nwr; k++)
		wrs[k].next = &wrs[k + 1];
	wrs[nwr - 1].opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
	wrs[nwr - 1].imm_data = pw->imm_data;
	wrs[nwr - 1].wr_id = pw->wr_id;
	wrs[nwr - 1].send_flags = pw->send_flags | UROCE_SEND_FENCE;
	/* all or nothing: a half-posted transfer would end without its immediate */
	free_wr = qp->sq_size - (atomic_load_explicit(&qp->sq_head, memory_order_relaxed) -
	                         __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE));
	if (nwr > free_wr) {
		free(wrs);
		free(sges);
		return uroce_fail(-ENOMEM, "uroce_post_paged_write: %u WRs (runs of adjacent pages) and the send queue "
		                           "has room for %u", nwr, free_wr);
	}
	rc = uroce_post_send(qp, wrs, NULL);
	free(wrs);
	free(sges);
	return rc;
}
