/* SPDX-License-Identifier: MIT */
/* gpu/ with the CPU backend (this machine has no CUDA driver): the same
 * calls a GPU program makes, on host memory. A message goes "device" ->
 * stage -> RDMA WRITE over the loop fabric -> the peer's stage -> its
 * "device" buffer, byte for byte; host memory registers as host memory;
 * out-of-range copies and bad arguments are refused with their messages.
 * The CUDA half runs on a GPU machine (tests/gpu/gpu_stage_cuda.sh). */
#include "tr_test.h"

#define STEPS 200000u
#define LEN 20000u

int main(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_gpu_stage *sa, *sb;
	struct uroce_mr *mr = NULL;
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN);
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;

	CHECK(!strcmp(uroce_gpu_backend(), "cpu"), "backend %s on a machine without a GPU", uroce_gpu_backend());
	CHECK(strstr(uroce_gpu_backend_why(), "libcuda.so.1"), "why: %s", uroce_gpu_backend_why());
	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 5, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	REQUIRE(src && dst, "alloc");
	tr_fill(src, LEN, 42);
	REQUIRE(uroce_gpu_stage_create(a->pd, LEN, o.mr_access, &sa) == 0, "stage a: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_create(b->pd, LEN, o.mr_access, &sb) == 0, "stage b: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_in(sa, 0, src, LEN) == 0, "stage in: %s", uroce_last_error());
	sg = (struct uroce_sge){ (uintptr_t)uroce_gpu_stage_mr(sa)->addr, LEN, uroce_gpu_stage_mr(sa)->lkey };
	tr_wr(&wr, 1, &sg, UROCE_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = (uintptr_t)uroce_gpu_stage_mr(sb)->addr;
	wr.wr.rdma.rkey = uroce_gpu_stage_mr(sb)->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "write: %s",
	      uroce_wc_status_str(wc.status));
	REQUIRE(uroce_gpu_stage_out(sb, 0, dst, LEN) == 0, "stage out: %s", uroce_last_error());
	CHECK(!memcmp(src, dst, LEN), "the message differs after device -> stage -> wire -> stage -> device");

	/* bounds and arguments */
	CHECK(uroce_gpu_stage_in(sa, LEN - 10, src, 11) == -EINVAL &&
	      strstr(uroce_last_error(), "bytes 19990..20001 are outside the 20000-byte stage"), "in past the end: %s",
	      uroce_last_error());
	CHECK(uroce_gpu_stage_out(sb, LEN + 1, dst, 0) == -EINVAL, "out past the end");
	CHECK(uroce_gpu_stage_create(a->pd, 0, o.mr_access, &sa) == -EINVAL, "stage of 0 bytes");
	/* host memory is host memory */
	REQUIRE(uroce_mr_reg_gpu(a->pd, src, LEN, o.mr_access, &mr) == 0, "reg host: %s", uroce_last_error());
	CHECK(mr->addr == src && !mr->flags, "host memory registered as something else");
	CHECK(uroce_mr_dereg(mr) == 0, "dereg");
	CHECK(uroce_mr_reg_gpu(a->pd, NULL, LEN, o.mr_access, &mr) == -EINVAL, "NULL ptr");

	CHECK(uroce_gpu_stage_destroy(sa) == 0 && uroce_gpu_stage_destroy(sb) == 0, "destroy: %s", uroce_last_error());
	tr_close(&p);
	free(src);
	free(dst);
	return test_done("transport_gpu_stage");
}
