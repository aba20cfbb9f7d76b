/* SPDX-License-Identifier: MIT */
/* gpu_check: CUDA memory through uroce on a GPU machine. cudaMalloc'ed
 * buffers are filled by a kernel, staged (uroce_gpu_stage_in: cuMemcpyDtoH
 * into pinned host memory), written by RDMA WRITE over a two-port loop
 * fabric, staged out into the peer's cudaMalloc'ed buffer and counted by a
 * kernel: 0 bytes may differ. uroce_mr_reg_gpu of device memory on a port
 * whose engine copies with the CPU must refuse with its message. Exits 0
 * when every check holds; prints what it moved. */
#include <stdio.h>

#include "tr_test.h"

int gpu_alloc(void **p, size_t n);
void gpu_free(void *p);
int gpu_fill(void *d, size_t n, unsigned seed);
long long gpu_count_bad(const void *d, size_t n, unsigned seed);
const char *gpu_last_error(void);

#define STEPS 2000000u
#define SEED 0x5au

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoull(argv[1], NULL, 0) : (8u << 20);
	struct uroce_gpu_stage *sa, *sb;
	struct uroce_mr *mr = NULL;
	struct uroce_send_wr wr = { 0 };
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct tr_pair p;
	struct tr_opts o;
	void *src, *dst;
	long long bad;

	printf("gpu_check: backend %s (%s), %zu bytes\n", uroce_gpu_backend(), uroce_gpu_backend_why(), len);
	REQUIRE(!strcmp(uroce_gpu_backend(), "cuda"), "no CUDA backend: %s", uroce_gpu_backend_why());
	REQUIRE(gpu_alloc(&src, len) == 0 && gpu_alloc(&dst, len) == 0, "cudaMalloc: %s", gpu_last_error());
	REQUIRE(gpu_fill(src, len, SEED) == 0, "fill: %s", gpu_last_error());
	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 7, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	CHECK(uroce_mr_reg_gpu(a->pd, src, len, o.mr_access, &mr) == -EOPNOTSUPP &&
	      strstr(uroce_last_error(), "is CUDA device memory"), "device memory on a CPU port: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_create(a->pd, len, o.mr_access, &sa) == 0, "stage: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_create(b->pd, len, o.mr_access, &sb) == 0, "stage: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_in(sa, 0, src, len) == 0, "stage in: %s", uroce_last_error());
	sg = (struct uroce_sge){ (uintptr_t)uroce_gpu_stage_mr(sa)->addr, (uint32_t)len, uroce_gpu_stage_mr(sa)->lkey };
	tr_wr(&wr, 1, &sg, UROCE_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = (uintptr_t)uroce_gpu_stage_mr(sb)->addr;
	wr.wr.rdma.rkey = uroce_gpu_stage_mr(sb)->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	REQUIRE(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "write: %s",
	        uroce_wc_status_str(wc.status));
	REQUIRE(uroce_gpu_stage_out(sb, 0, dst, len) == 0, "stage out: %s", uroce_last_error());
	bad = gpu_count_bad(dst, len, SEED);
	CHECK(bad == 0, "%lld of %zu bytes differ in the peer's GPU buffer (-1: CUDA error %s)", bad, len,
	      gpu_last_error());
	printf("gpu_check: %zu bytes GPU -> stage -> RDMA WRITE -> stage -> GPU, %lld differ\n", len, bad);
	CHECK(uroce_gpu_stage_destroy(sa) == 0 && uroce_gpu_stage_destroy(sb) == 0, "destroy");
	tr_close(&p);
	gpu_free(src);
	gpu_free(dst);
	return test_done("gpu_check");
}
