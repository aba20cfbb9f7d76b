/* SPDX-License-Identifier: MIT */
/* The GID table of loop ports: its layout (fe80:: EUI-64 of the MAC,
 * ::ffff:IPv4, fd00::), uroce_query_gid's bounds, sgid_index choosing the
 * source address (RC traffic over each kind, packets' source checked by the
 * receiver), refusal of a dgid of the other family, and PORT_ERR /
 * PORT_ACTIVE from the loop fabric's link state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tr_test.h"

/* The slow path looks at link state every 5 ms of real time: waits for an
 * event are bounded by this many 1 ms sleeps. */
#define EVENT_WAIT_MS 2000

static void test_layout(void)
{
	struct tr_opts o;
	struct tr_pair p;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_gid_index = 1;
	tr_open(&p, &o, 1, NULL, NULL);
	for (unsigned i = 0; i < 2; i++) {
		struct uroce_context *ctx = p.s[i].ctx;
		struct uroce_port_attr pa;
		uint8_t gid[16], want[16] = { 0xfe, 0x80 };

		REQUIRE(uroce_query_port(ctx, 1, &pa) == 0, "query_port");
		CHECK(pa.gid_tbl_len == 3, "loop port %u has %d GIDs, wanted 3", i, pa.gid_tbl_len);
		/* index 0: fe80:: with the modified EUI-64 of the MAC */
		want[8] = pa.mac[0] ^ 2;
		want[9] = pa.mac[1];
		want[10] = pa.mac[2];
		want[11] = 0xff;
		want[12] = 0xfe;
		memcpy(want + 13, pa.mac + 3, 3);
		CHECK(uroce_query_gid(ctx, 1, 0, gid) == 0 && !memcmp(gid, want, 16), "GID 0 is not fe80::EUI-64");
		/* index 1: the IPv4 address mapped, the same as the port's gid */
		memset(want, 0, 16);
		want[10] = want[11] = 0xff;
		memcpy(want + 12, &pa.ipv4_be, 4);
		CHECK(uroce_query_gid(ctx, 1, 1, gid) == 0 && !memcmp(gid, want, 16) && !memcmp(pa.gid, want, 16),
		      "GID 1 is not ::ffff:IPv4");
		memset(want, 0, 16);
		want[0] = 0xfd;
		want[15] = (uint8_t)(i + 1);
		CHECK(uroce_query_gid(ctx, 1, 2, gid) == 0 && !memcmp(gid, want, 16), "GID 2 is not fd00::%u", i + 1);
		CHECK(uroce_query_gid(ctx, 1, 3, gid) == -ENOENT, "index past the end not -ENOENT");
		CHECK(strstr(uroce_last_error(), "accepted: 0-2") != NULL, "message: %s", uroce_last_error());
		CHECK(uroce_query_gid(ctx, 1, -1, gid) == -EINVAL, "negative index");
		CHECK(uroce_query_gid(ctx, 2, 0, gid) == -EINVAL, "port 2 of a one-port context");
	}
	tr_close(&p);
}

/* RC SEND of a message checked byte for byte with both QPs on sgid_index
 * gidx: the receive check accepts a packet only when its source is the
 * QP's remote GID, so delivery proves the source address followed it. */
static void test_traffic(int gidx)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_sge sg;
	struct uroce_wc wc;
	const uint32_t len = 3000;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_gid_index = gidx;
	tr_open(&p, &o, 2, NULL, NULL);
	tr_fill(p.s[0].buf, len, (uint32_t)gidx);
	memset(p.s[1].buf + 8192, 0, len);
	tr_sge(&sg, &p.s[1], 8192, len);
	struct uroce_recv_wr rw = { .wr_id = 7, .sg_list = &sg, .num_sge = 1 };
	REQUIRE(uroce_post_recv(p.s[1].qp, &rw, NULL) == 0, "post_recv: %s", uroce_last_error());
	struct uroce_sge ss;
	tr_sge(&ss, &p.s[0], 0, len);
	struct uroce_send_wr sw = { .wr_id = 9, .sg_list = &ss, .num_sge = 1, .opcode = UROCE_WR_SEND,
	                            .send_flags = UROCE_SEND_SIGNALED };
	REQUIRE(uroce_post_send(p.s[0].qp, &sw, NULL) == 0, "post_send: %s", uroce_last_error());
	CHECK(tr_wait(&p, p.s[1].rcq, &wc, 100000) == 0 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == len,
	      "GID %d: no receive completion", gidx);
	CHECK(!memcmp(p.s[0].buf, p.s[1].buf + 8192, len), "GID %d: data differs", gidx);
	CHECK(tr_wait(&p, p.s[0].scq, &wc, 100000) == 0 && wc.status == UROCE_WC_SUCCESS,
	      "GID %d: no send completion", gidx);
	tr_close(&p);
	tr_gid_index = 1;
}

/* A dgid of the other family than the sgid, and an sgid past the table. */
static void test_refusals(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_ah *ah;
	struct uroce_ah_attr aa;

	tr_opts_default(&o, UROCE_QPT_UD);
	tr_gid_index = 1;
	tr_open(&p, &o, 3, NULL, NULL);
	memset(&aa, 0, sizeof(aa));
	REQUIRE(uroce_query_gid(p.s[1].ctx, 1, 1, aa.dgid) == 0, "gid");
	aa.sgid_index = 0; /* link-local IPv6 towards an IPv4-mapped dgid */
	CHECK(uroce_ah_create(p.s[0].pd, &aa, &ah) == -EINVAL, "IPv6 sgid with an IPv4 dgid accepted");
	CHECK(strstr(uroce_last_error(), "family") != NULL, "message: %s", uroce_last_error());
	aa.sgid_index = 2;
	CHECK(uroce_ah_create(p.s[0].pd, &aa, &ah) == -EINVAL, "fd00:: sgid with an IPv4 dgid accepted");
	REQUIRE(uroce_query_gid(p.s[1].ctx, 1, 0, aa.dgid) == 0, "gid");
	aa.sgid_index = 1; /* IPv4 towards fe80:: */
	CHECK(uroce_ah_create(p.s[0].pd, &aa, &ah) == -EINVAL, "IPv4 sgid with an IPv6 dgid accepted");
	aa.sgid_index = 3;
	CHECK(uroce_ah_create(p.s[0].pd, &aa, &ah) == -EINVAL, "sgid_index past the table accepted");
	CHECK(strstr(uroce_last_error(), "accepted: 0-2") != NULL, "message: %s", uroce_last_error());
	aa.sgid_index = 0; /* fe80:: to fe80::, resolved from the EUI-64 */
	CHECK(uroce_ah_create(p.s[0].pd, &aa, &ah) == 0, "link-local AH: %s", uroce_last_error());
	CHECK(uroce_ah_destroy(ah) == 0, "ah destroy");
	tr_close(&p);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* The first port event of ctx within EVENT_WAIT_MS, or -1. */
static int wait_port_event(struct uroce_context *ctx, int *port)
{
	struct uroce_async_event ev;

	for (unsigned i = 0; i < EVENT_WAIT_MS; i++) {
		uroce_progress(ctx);
		if (uroce_get_async_event(ctx, &ev) == 0) {
			*port = ev.element.port_num;
			return ev.event_type;
		}
		sleep_ms(1);
	}
	return -1;
}

static void test_link_events(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_port_attr pa;
	int port = 0, ev;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 4, NULL, NULL);
	REQUIRE(loop_fabric_set_link(p.fab, 0, false) == 0, "link down");
	ev = wait_port_event(p.s[0].ctx, &port);
	CHECK(ev == UROCE_EVENT_PORT_ERR && port == 1, "link down: event %d on port %d, wanted PORT_ERR on 1", ev,
	      port);
	CHECK(uroce_query_port(p.s[0].ctx, 1, &pa) == 0 && !pa.link_up, "port still up");
	REQUIRE(loop_fabric_set_link(p.fab, 0, true) == 0, "link up");
	ev = wait_port_event(p.s[0].ctx, &port);
	CHECK(ev == UROCE_EVENT_PORT_ACTIVE && port == 1, "link up: event %d on port %d, wanted PORT_ACTIVE on 1", ev,
	      port);
	/* nothing more: one event per change */
	ev = wait_port_event(p.s[0].ctx, &port);
	CHECK(ev == -1, "an extra event %d", ev);
	tr_close(&p);
}

int main(void)
{
	test_layout();
	test_traffic(0);
	test_traffic(1);
	test_traffic(2);
	test_refusals();
	test_link_events();
	return test_done("transport_gid");
}
