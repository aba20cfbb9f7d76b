/* SPDX-License-Identifier: MIT */
/* Completion channels: the application sleeps in poll() on the channel's
 * fd while a DEDICATED engine thread moves SENDs between two QPs over a
 * real-time loop port; an armed CQ makes one event per arming, an unarmed
 * one none; events carry their CQ and cq_context; a non-blocking fd gives
 * -EAGAIN; a CQ with unacknowledged events and a channel with CQs are not
 * destroyed; bad calls say why. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "tr_test.h"

#define NMSG 200u
#define SLOT 1024u

struct app {
	TR_APP_FIELDS(2);
	struct uroce_comp_channel *ch;
};

static void post_recv(struct app *a, uint32_t i)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)(a->buf + SLOT * (64 + i % 64)), SLOT, a->mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

	REQUIRE(uroce_post_recv(a->qp[1], &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static void post_send(struct app *a, uint32_t i)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)(a->buf + SLOT * (i % 64)), SLOT, a->mr->lkey };
	struct uroce_send_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_SEND,
		                    .send_flags = UROCE_SEND_SIGNALED };

	tr_fill(a->buf + SLOT * (i % 64), SLOT, i);
	REQUIRE(uroce_post_send(a->qp[0], &wr, NULL) == 0, "post_send %u: %s", i, uroce_last_error());
}

/* An RC QP on the given CQs (given their channel first) */
static void qp_on(struct app *a, struct uroce_cq *scq, struct uroce_cq *rcq, struct uroce_qp **qp)
{
	struct uroce_qp_init_attr ia = { 0 };

	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	REQUIRE(uroce_qp_create(a->pd, &ia, qp) == 0, "qp: %s", uroce_last_error());
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Drain a CQ: completions counted into *n, each must be a success. */
static void drain(struct uroce_cq *cq, uint32_t *n)
{
	struct uroce_wc wc[16];
	int got;

	while ((got = uroce_poll_cq(cq, 16, wc)) > 0)
		for (int i = 0; i < got; i++) {
			CHECK(wc[i].status == UROCE_WC_SUCCESS, "wc %llu: %s", (unsigned long long)wc[i].wr_id,
			      uroce_wc_status_str(wc[i].status));
			(*n)++;
		}
	CHECK(got == 0, "poll_cq: %d", got);
}

int main(void)
{
	struct loop_impairment imp = { 0 };
	struct uroce_context_attr ca;
	struct loop_fabric *fab;
	struct app a;
	struct uroce_cq *cq, *bare;
	void *cq_ctx;
	uint32_t sent = 0, completed = 0, received = 0, events = 0;
	uint64_t t0;
	int fd, fl;

	memset(&a, 0, sizeof(a));
	fab = tr_rt_context(31, &imp, &ca, &a.ctx);
	REQUIRE(uroce_pd_alloc(a.ctx, &a.pd) == 0, "pd");
	a.buf = tr_buf_reg(a.pd, 128 * SLOT, &a.mr);
	REQUIRE(uroce_comp_channel_create(a.ctx, &a.ch) == 0, "channel: %s", uroce_last_error());
	fd = uroce_comp_channel_fd(a.ch);
	CHECK(fd >= 0, "fd %d", fd);
	for (int i = 0; i < 2; i++) {
		REQUIRE(uroce_cq_create(a.ctx, 256, &a.scq[i]) == 0 && uroce_cq_create(a.ctx, 256, &a.rcq[i]) == 0,
		        "cq");
	}
	/* the sender's send CQ and the receiver's receive CQ on the channel */
	CHECK(uroce_req_notify_cq(a.scq[0], 0) == -EINVAL && strstr(uroce_last_error(), "uroce_cq_set_channel"),
	      "arming a CQ without a channel: '%s'", uroce_last_error());
	REQUIRE(uroce_cq_set_channel(a.scq[0], a.ch, &a.scq[0]) == 0, "set_channel: %s", uroce_last_error());
	REQUIRE(uroce_cq_set_channel(a.rcq[1], a.ch, &a.rcq[1]) == 0, "set_channel: %s", uroce_last_error());
	CHECK(uroce_cq_set_channel(a.rcq[1], a.ch, NULL) == -EBUSY, "a second channel accepted");
	CHECK(uroce_req_notify_cq(a.scq[0], 1) == -EOPNOTSUPP && strstr(uroce_last_error(), "solicited_only"),
	      "solicited_only: '%s'", uroce_last_error());
	for (int i = 0; i < 2; i++)
		qp_on(&a, a.scq[i], a.rcq[i], &a.qp[i]);
	CHECK(uroce_cq_set_channel(a.scq[1], a.ch, NULL) == -EBUSY && strstr(uroce_last_error(), "QP"),
	      "a channel for a CQ a QP already uses: '%s'", uroce_last_error());
	{
		const struct tr_link l = { .access = 15, .psn = test_psn(31), .timeout = 14 };

		tr_loop_link(a.ctx, a.qp[0], a.qp[1], &l);
		tr_loop_link(a.ctx, a.qp[1], a.qp[0], &l);
	}
	for (uint32_t i = 0; i < 32; i++)
		post_recv(&a, i);

	/* one message, both CQs armed: one event each, with its context */
	CHECK(!readable(fd, 0), "readable before anything happened");
	CHECK(uroce_req_notify_cq(a.scq[0], 0) == 0 && uroce_req_notify_cq(a.rcq[1], 0) == 0, "arm");
	post_send(&a, sent++);
	{
		bool seen[2] = { false, false };

		for (int k = 0; k < 2; k++) {
			CHECK(readable(fd, 10000), "no event within 10 s (event %d)", k);
			REQUIRE(uroce_get_cq_event(a.ch, &cq, &cq_ctx) == 0, "get_cq_event: %s", uroce_last_error());
			CHECK(cq == a.scq[0] || cq == a.rcq[1], "an event of a CQ not on the channel");
			CHECK(cq_ctx == (void *)(cq == a.scq[0] ? &a.scq[0] : &a.rcq[1]), "cq_context");
			seen[cq == a.rcq[1]] = true;
			uroce_ack_cq_events(cq, 1);
		}
		CHECK(seen[0] && seen[1], "both CQs' events: %d %d", seen[0], seen[1]);
	}
	t0 = test_mono_ns();
	while ((completed < 1 || received < 1) && test_mono_ns() - t0 < TR_LIMIT_NS) {
		drain(a.scq[0], &completed);
		drain(a.rcq[1], &received);
	}
	CHECK(completed == 1 && received == 1, "completed %u received %u", completed, received);
	CHECK(!readable(fd, 0), "readable with no event left");

	/* unarmed: completions come, no event */
	post_recv(&a, 32);
	post_send(&a, sent++);
	t0 = test_mono_ns();
	while ((completed < 2 || received < 2) && test_mono_ns() - t0 < TR_LIMIT_NS) {
		drain(a.scq[0], &completed);
		drain(a.rcq[1], &received);
		sched_yield();
	}
	CHECK(completed == 2 && received == 2, "unarmed: completed %u received %u", completed, received);
	CHECK(!readable(fd, 100), "an event from an unarmed CQ");

	/* a non-blocking fd: -EAGAIN, not a wait */
	fl = fcntl(fd, F_GETFL);
	REQUIRE(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0, "fcntl");
	CHECK(uroce_get_cq_event(a.ch, &cq, NULL) == -EAGAIN, "non-blocking: not -EAGAIN");
	REQUIRE(fcntl(fd, F_SETFL, fl) == 0, "fcntl");

	/* the verbs loop, sleeping in poll() between events: NMSG messages
	 * with a window of 8, every completion found through an event */
	CHECK(uroce_req_notify_cq(a.scq[0], 0) == 0 && uroce_req_notify_cq(a.rcq[1], 0) == 0, "arm");
	for (uint32_t i = 33; i < 64; i++)
		post_recv(&a, i);
	uint32_t posted_recv = 64;
	t0 = test_mono_ns();
	while ((completed < NMSG + 2 || received < NMSG + 2) && test_mono_ns() - t0 < TR_LIMIT_NS) {
		while (sent < NMSG + 2 && sent - completed < 8)
			post_send(&a, sent++);
		if (!readable(fd, 10000))
			break;
		REQUIRE(uroce_get_cq_event(a.ch, &cq, NULL) == 0, "get_cq_event: %s", uroce_last_error());
		events++;
		uroce_ack_cq_events(cq, 1);
		REQUIRE(uroce_req_notify_cq(cq, 0) == 0, "rearm");
		if (cq == a.scq[0]) {
			drain(cq, &completed);
		} else {
			uint32_t before = received;

			drain(cq, &received);
			for (; before < received; before++)
				post_recv(&a, posted_recv++);
		}
	}
	CHECK(completed == NMSG + 2 && received == NMSG + 2, "by events: completed %u received %u of %u", completed,
	      received, NMSG + 2);
	CHECK(events >= 2 && events <= 2 * (NMSG + 2), "%u events for %u messages", events, NMSG);
	printf("comp_channel: %u messages each way seen through %u events\n", NMSG, events);

	/* an event not acknowledged keeps its CQ; the channel keeps its CQs */
	post_send(&a, sent++);
	CHECK(readable(fd, 10000), "the last send's event");
	REQUIRE(uroce_get_cq_event(a.ch, &cq, NULL) == 0, "get_cq_event");
	CHECK(uroce_comp_channel_destroy(a.ch) == -EBUSY, "a channel with CQs destroyed");
	CHECK(uroce_qp_destroy(a.qp[0]) == 0 && uroce_qp_destroy(a.qp[1]) == 0, "qp destroy");
	CHECK(uroce_cq_destroy(cq) == -EBUSY && strstr(uroce_last_error(), "uroce_ack_cq_events"),
	      "a CQ with an unacknowledged event: '%s'", uroce_last_error());
	uroce_ack_cq_events(cq, 1);
	bare = cq == a.scq[0] ? a.rcq[1] : a.scq[0];
	CHECK(uroce_cq_destroy(cq) == 0, "cq destroy after the ack: %s", uroce_last_error());
	CHECK(uroce_cq_destroy(bare) == 0, "cq destroy: %s", uroce_last_error());
	CHECK(uroce_comp_channel_destroy(a.ch) == 0, "channel destroy: %s", uroce_last_error());
	CHECK(uroce_cq_destroy(a.rcq[0]) == 0 && uroce_cq_destroy(a.scq[1]) == 0, "cq destroy");
	CHECK(uroce_mr_dereg(a.mr) == 0 && uroce_pd_free(a.pd) == 0, "mr, pd");
	CHECK(uroce_context_destroy(a.ctx) == 0, "context: %s", uroce_last_error());
	loop_fabric_destroy(fab);
	free(a.buf);
	return test_done("tr_comp_channel");
}
