/* SPDX-License-Identifier: MIT */
/* The engine over two loop ports: RoCE frames built with roce_build go
 * out through engine_tx and come back through the parser to the handler;
 * corrupted and malformed frames are counted by reason; kept frames are
 * echoed; a refusing port's frames are retried, never lost; timers run on
 * the fabric's clock; commands arrive from another thread through the
 * SPSC rings while the engine runs pinned on its own thread. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "dataplane/engine.h"
#include "loop_test.h"

#define PAYLOAD 512u

static struct engine *make_engine(struct loop_fabric *fab, struct port **ports, unsigned n, unsigned ncmd)
{
	struct engine_config cfg = {
		.ports = ports,
		.nports = n,
		.burst = 32,
		.tick_ns = 1000,
		.ncmd_rings = ncmd,
		.clock = loop_fabric_clock,
		.clock_ctx = fab,
	};
	char err[256] = "";
	struct engine *eng = engine_create(&cfg, err, sizeof(err));

	REQUIRE(eng, "engine_create: %s", err);
	return eng;
}

static void test_config(void)
{
	struct port *ports[ENGINE_MAX_PORTS + 1] = { 0 };
	struct engine_config cfg = { .ports = ports, .nports = ENGINE_MAX_PORTS + 1 };
	char err[256] = "";

	CHECK(!engine_create(&cfg, err, sizeof(err)) && strstr(err, "accepted"), "too many ports: '%s'", err);
	cfg.nports = 1;
	CHECK(!engine_create(&cfg, err, sizeof(err)) && strstr(err, "NULL"), "NULL port: '%s'", err);
	cfg.nports = 0;
	cfg.burst = PORT_BURST_MAX + 1;
	CHECK(!engine_create(&cfg, err, sizeof(err)) && strstr(err, "burst"), "burst: '%s'", err);
	cfg.burst = 0;
	cfg.ncmd_rings = 1;
	cfg.cmd_ring_size = 1000;
	CHECK(!engine_create(&cfg, err, sizeof(err)) && strstr(err, "power of two"), "ring size: '%s'", err);
	cfg.ncmd_rings = ENGINE_MAX_CMD_RINGS + 1;
	cfg.cmd_ring_size = 0;
	CHECK(!engine_create(&cfg, err, sizeof(err)) && strstr(err, "command rings"), "rings: '%s'", err);
}

/* ---- end to end: B checks what it gets and echoes every 10th ---- */

struct e2e {
	uint32_t next_psn_b;    /* next PSN B expects: no loss, no reorder on this link */
	uint32_t got_b;
	uint32_t bad_b;
	uint32_t kept_b;
	uint32_t echo_fail;
	uint32_t got_a;         /* echoes back at A */
	uint32_t bad_port;
};

static bool e2e_rx(struct engine *eng, unsigned port, struct uroce_frame *f, const struct roce_pkt *pkt, void *ctx)
{
	struct e2e *s = ctx;

	if (port == 0) {
		s->got_a++;
		return false;
	}
	if (port != 1) {
		s->bad_port++;
		return false;
	}
	/* corrupted frames never get here, so PSNs that arrive are in order
	 * with gaps exactly where the ICRC check dropped one */
	if (pkt->psn < s->next_psn_b || pkt->payload_len != PAYLOAD)
		s->bad_b++;
	for (uint32_t i = 0; i < pkt->payload_len; i++) {
		if (pkt->payload[i] != test_payload_byte(pkt->psn, i)) {
			s->bad_b++;
			break;
		}
	}
	s->next_psn_b = pkt->psn + 1;
	s->got_b++;
	if (pkt->psn % 10 == 0) {
		/* keep it and send the very same frame back */
		if (engine_tx(eng, 1, f) == 0) {
			s->kept_b++;
			return true;
		}
		s->echo_fail++;
	}
	return false;
}

/* One raw frame of len bytes with the given bytes at the front. */
static void send_raw(struct engine *eng, unsigned port, const uint8_t *head, uint32_t headlen, uint32_t len)
{
	struct uroce_frame f;

	REQUIRE(engine_alloc(eng, port, &f, 1) == 1, "alloc");
	memset(f.data, 0, len);
	memcpy(f.data, head, headlen < len ? headlen : len);
	f.len = len;
	REQUIRE(engine_tx(eng, port, &f) == 0, "engine_tx of a raw frame");
}

static void test_end_to_end(void)
{
	enum { N = 5000, SHORT = 7, NOT_IP = 5, WRONG_PORT = 3 };
	struct loop_fabric *fab = loop_fabric_create(2, 21);
	struct port *ports[2] = { open_loop_port(fab, 0), open_loop_port(fab, 1) };
	struct engine *eng = make_engine(fab, ports, 2, 0);
	struct e2e s = { 0 };
	struct roce_pkt pkt;
	struct loop_link_stats st;
	struct engine_stats es;
	uint32_t sent = 0;

	test_roce_pkt(&pkt, ports[0], ports[1], 0, PAYLOAD);
	struct loop_impairment ab = { .corrupt = 0.2, .corrupt_skip = roce_hdr_len(&pkt), .delay_ns = 5000,
		                      .jitter_ns = 3000 };
	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect: %s", loop_fabric_last_error(fab));
	engine_set_rx_handler(eng, e2e_rx, &s);

	/* malformed frames, counted by reason on B; sent over a clean wire so
	 * that corruption cannot change their reason */
	uint8_t nonip[14] = { 0 };
	nonip[12] = 0x88;
	nonip[13] = 0xb5;
	for (int i = 0; i < SHORT; i++)
		send_raw(eng, 0, nonip, 0, 10);
	for (int i = 0; i < NOT_IP; i++)
		send_raw(eng, 0, nonip, sizeof(nonip), 60);
	for (int i = 0; i < WRONG_PORT; i++) {
		struct uroce_frame f;
		REQUIRE(engine_alloc(eng, 0, &f, 1) == 1, "alloc");
		test_build_roce(&f, ports[0], ports[1], 0, 64);
		roce_put_be16(f.data + ETH_HDR_LEN + IPV4_HDR_LEN + 2, 4792);
		REQUIRE(engine_tx(eng, 0, &f) == 0, "tx");
	}
	engine_poll_once(eng);
	engine_poll_once(eng);
	REQUIRE(loop_fabric_set_impairment(fab, 0, &ab) == 0, "impair: %s", loop_fabric_last_error(fab));

	for (int iter = 0; iter < 100000 && (sent < N || loop_fabric_in_flight(fab) || s.got_a < s.kept_b); iter++) {
		for (int k = 0; k < 20 && sent < N; k++, sent++) {
			struct uroce_frame f;

			REQUIRE(engine_alloc(eng, 0, &f, 1) == 1, "alloc (pool exhausted: a leak?)");
			test_build_roce(&f, ports[0], ports[1], sent, PAYLOAD);
			REQUIRE(engine_tx(eng, 0, &f) == 0, "engine_tx on an idle link");
		}
		engine_poll_once(eng);
		loop_fabric_advance(fab, 1000);
	}
	for (int i = 0; i < 10; i++)
		engine_poll_once(eng);

	loop_fabric_link_stats(fab, 0, &st);
	engine_get_stats(eng, &es);
	const uint64_t *drops = ports[1]->stats.drops;
	CHECK(s.bad_b == 0 && s.bad_port == 0, "%u bad frames reached the handler", s.bad_b);
	CHECK(st.corrupted > 800, "corruption barely happened (%llu)", (unsigned long long)st.corrupted);
	CHECK(drops[UROCE_DROP_BAD_ICRC] == st.corrupted, "bad_icrc %llu != corrupted %llu",
	      (unsigned long long)drops[UROCE_DROP_BAD_ICRC], (unsigned long long)st.corrupted);
	CHECK(s.got_b + drops[UROCE_DROP_BAD_ICRC] == N, "handled %u + bad_icrc %llu != sent %d", s.got_b,
	      (unsigned long long)drops[UROCE_DROP_BAD_ICRC], N);
	CHECK(drops[UROCE_DROP_SHORT_FRAME] == SHORT, "short_frame %llu", (unsigned long long)drops[UROCE_DROP_SHORT_FRAME]);
	CHECK(drops[UROCE_DROP_NOT_IP] == NOT_IP, "not_ip %llu", (unsigned long long)drops[UROCE_DROP_NOT_IP]);
	CHECK(drops[UROCE_DROP_WRONG_PORT] == WRONG_PORT, "wrong_port %llu",
	      (unsigned long long)drops[UROCE_DROP_WRONG_PORT]);
	CHECK(es.rx_dropped == st.corrupted + SHORT + NOT_IP + WRONG_PORT, "engine rx_dropped %llu",
	      (unsigned long long)es.rx_dropped);
	CHECK(ports[1]->stats.rx_packets == N + SHORT + NOT_IP + WRONG_PORT, "B rx_packets %llu",
	      (unsigned long long)ports[1]->stats.rx_packets);
	CHECK(s.kept_b > 300 && s.echo_fail == 0, "kept %u, echo failures %u", s.kept_b, s.echo_fail);
	CHECK(s.got_a == s.kept_b, "echoes: A got %u of %u", s.got_a, s.kept_b);
	CHECK(ports[0]->stats.drops[UROCE_DROP_BAD_ICRC] == 0, "B->A is a perfect wire");
	CHECK(es.tx_sent == es.tx_staged && es.tx_full == 0, "staged %llu, sent %llu",
	      (unsigned long long)es.tx_staged, (unsigned long long)es.tx_sent);
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "frames leaked: %u free",
	      loop_fabric_free_frames(fab));
	engine_destroy(eng);
	port_close(ports[0]);
	port_close(ports[1]);
	loop_fabric_destroy(fab);
}

/* ---- a port that refuses: frames stay staged and are retried ---- */

struct count_rx {
	uint32_t got;
	uint32_t next_psn;
	uint32_t order_errors;
};

static bool count_rx(struct engine *eng, unsigned port, struct uroce_frame *f, const struct roce_pkt *pkt, void *ctx)
{
	struct count_rx *c = ctx;

	(void)eng;
	(void)f;
	if (port == 1) {
		if (pkt->psn != c->next_psn)
			c->order_errors++;
		c->next_psn = pkt->psn + 1;
		c->got++;
	}
	return false;
}

static void test_tx_retry(void)
{
	enum { N = 3000 };
	struct loop_fabric *fab = loop_fabric_create(2, 22);
	struct port *ports[2] = { open_loop_port(fab, 0), open_loop_port(fab, 1) };
	struct engine *eng = make_engine(fab, ports, 2, 0);
	/* 100 Mbit/s with the smallest queue allowed (one full-size frame,
	 * six of these) and back-pressure: the port takes a frame every
	 * 54 us while the test offers eight per microsecond */
	struct loop_impairment ab = { .rate_bps = 100000000ull, .queue_bytes = LOOP_MTU_DEFAULT + 18,
		                      .backpressure = true };
	struct count_rx c = { 0 };
	struct engine_stats es;
	struct loop_link_stats st;
	uint32_t sent = 0, enobufs = 0;
	struct uroce_frame pending;
	bool have_pending = false;

	REQUIRE(loop_fabric_connect(fab, 0, 1, &ab, NULL) == 0, "connect: %s", loop_fabric_last_error(fab));
	engine_set_rx_handler(eng, count_rx, &c);
	for (int iter = 0; iter < 1000000 && c.got < N; iter++) {
		/* offer far more than the link carries */
		for (int k = 0; k < 8 && sent < N; k++) {
			int rc;

			if (!have_pending) {
				REQUIRE(engine_alloc(eng, 0, &pending, 1) == 1, "alloc");
				test_build_roce(&pending, ports[0], ports[1], sent, 600);
				have_pending = true;
			}
			rc = engine_tx(eng, 0, &pending);
			if (rc == -ENOBUFS) {
				enobufs++; /* still ours: retry after the next poll */
				break;
			}
			REQUIRE(rc == 0, "engine_tx: %d", rc);
			have_pending = false;
			sent++;
		}
		engine_poll_once(eng);
		loop_fabric_advance(fab, 1000);
	}
	engine_get_stats(eng, &es);
	loop_fabric_link_stats(fab, 0, &st);
	CHECK(c.got == N && c.order_errors == 0, "received %u of %d (%u out of order)", c.got, N, c.order_errors);
	CHECK(es.tx_partial > 0, "the port never refused part of a flush");
	CHECK(enobufs > 0 && es.tx_full == enobufs, "ENOBUFS %u, tx_full %llu", enobufs, (unsigned long long)es.tx_full);
	CHECK(st.refused > 0 && st.queue_drops == 0 && st.delivered == N, "refused %llu, drops %llu, delivered %llu",
	      (unsigned long long)st.refused, (unsigned long long)st.queue_drops, (unsigned long long)st.delivered);
	CHECK(ports[0]->stats.tx_packets == N, "A tx_packets %llu", (unsigned long long)ports[0]->stats.tx_packets);

	/* destroy with frames still staged gives them back to the pool */
	for (int k = 0; k < 100; k++) {
		struct uroce_frame f;
		REQUIRE(engine_alloc(eng, 0, &f, 1) == 1, "alloc");
		test_build_roce(&f, ports[0], ports[1], k, 600);
		if (engine_tx(eng, 0, &f) != 0)
			port_free(ports[0], &f, 1);
	}
	engine_destroy(eng);
	loop_fabric_set_link(fab, 0, false);
	for (int i = 0; i < 1000 && loop_fabric_in_flight(fab); i++)
		loop_fabric_advance(fab, 100000);
	{
		struct uroce_frame f[PORT_BURST_MAX];
		uint16_t n;
		while ((n = port_rx_burst(ports[1], f, PORT_BURST_MAX)) > 0)
			port_free(ports[1], f, n);
	}
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "engine_destroy leaked staged frames: %u free",
	      loop_fabric_free_frames(fab));
	port_close(ports[0]);
	port_close(ports[1]);
	loop_fabric_destroy(fab);
}

/* ---- timers on the fabric's clock; a timer that transmits ---- */

struct tmr {
	struct wheel_timer t;
	struct engine *eng;
	struct port *from, *to;
	uint64_t deadline;
	uint64_t fired_at;
	unsigned fired;
	unsigned rearm;
};

static void on_timer(struct wheel_timer *t, void *arg)
{
	struct tmr *x = arg;
	struct uroce_frame f;

	x->fired++;
	x->fired_at = engine_now(x->eng);
	REQUIRE(engine_alloc(x->eng, 0, &f, 1) == 1, "alloc in timer");
	test_build_roce(&f, x->from, x->to, 1000 + x->fired, 64);
	REQUIRE(engine_tx(x->eng, 0, &f) == 0, "tx in timer");
	if (x->rearm && x->fired < x->rearm) {
		x->deadline += 7000;
		engine_timer_arm(x->eng, t, x->deadline);
	}
}

static void test_timers(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 23);
	struct port *ports[2] = { open_loop_port(fab, 0), open_loop_port(fab, 1) };
	struct engine *eng = make_engine(fab, ports, 2, 0);
	struct count_rx c = { .next_psn = 1001 };
	struct tmr a = { .eng = eng, .from = ports[0], .to = ports[1], .rearm = 5 };
	struct tmr b = { .eng = eng, .from = ports[0], .to = ports[1] };

	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
	engine_set_rx_handler(eng, count_rx, &c);
	wheel_timer_init(&a.t, on_timer, &a);
	wheel_timer_init(&b.t, on_timer, &b);
	engine_poll_once(eng);
	a.deadline = engine_now(eng) + 10000;
	engine_timer_arm(eng, &a.t, a.deadline);
	engine_timer_arm_in(eng, &b.t, 20000);
	CHECK(engine_timer_cancel(eng, &b.t), "cancel a pending engine timer");
	for (int i = 0; i < 100; i++) {
		uint64_t due = a.deadline;
		unsigned before = a.fired;

		engine_poll_once(eng);
		if (a.fired != before)
			CHECK(a.fired_at >= due && a.fired_at < due + 1000 + 1000,
			      "timer due %llu fired at %llu", (unsigned long long)due, (unsigned long long)a.fired_at);
		loop_fabric_advance(fab, 1000);
	}
	CHECK(a.fired == 5, "re-armed timer fired %u times", a.fired);
	CHECK(b.fired == 0, "cancelled timer fired");
	CHECK(c.got == 5 && c.order_errors == 0, "frames sent from timers: %u", c.got);
	engine_destroy(eng);
	port_close(ports[0]);
	port_close(ports[1]);
	loop_fabric_destroy(fab);
}

/* ---- commands: embedded mode, then from another thread to a pinned engine ---- */

struct cmd_ctx {
	struct port *from, *to;
	uint32_t ran;
	uint64_t sum;
};

static void cmd_send(struct engine *eng, void *arg, uint64_t data)
{
	struct cmd_ctx *c = arg;
	struct uroce_frame f;

	c->ran++;
	c->sum += data;
	if (engine_alloc(eng, 0, &f, 1) != 1)
		return;
	test_build_roce(&f, c->from, c->to, (uint32_t)data, 128);
	if (engine_tx(eng, 0, &f) != 0)
		port_free(engine_port(eng, 0), &f, 1);
}

static void test_cmds_embedded(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 24);
	struct port *ports[2] = { open_loop_port(fab, 0), open_loop_port(fab, 1) };
	struct engine *eng = make_engine(fab, ports, 2, 2);
	struct cmd_ctx ctx = { .from = ports[0], .to = ports[1] };
	struct count_rx c = { 0 };

	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
	engine_set_rx_handler(eng, count_rx, &c);
	CHECK(engine_post(eng, 2, cmd_send, &ctx, 0) == -EINVAL, "ring 2 of 2 accepted");
	CHECK(engine_post(eng, 0, NULL, &ctx, 0) == -EINVAL, "NULL command accepted");
	for (uint32_t i = 0; i < 100; i++)
		CHECK(engine_post(eng, i % 2, cmd_send, &ctx, i) == 0, "post");
	for (int i = 0; i < 10; i++)
		engine_poll_once(eng);
	CHECK(ctx.ran == 100 && ctx.sum == 4950, "ran %u commands", ctx.ran);
	CHECK(c.got == 100, "their frames: %u", c.got);
	engine_destroy(eng);
	port_close(ports[0]);
	port_close(ports[1]);
	loop_fabric_destroy(fab);
}

struct threaded {
	atomic_uint got;
	atomic_int engine_cpu;
};

static bool threaded_rx(struct engine *eng, unsigned port, struct uroce_frame *f, const struct roce_pkt *pkt,
                        void *ctx)
{
	struct threaded *t = ctx;

	(void)eng;
	(void)f;
	(void)pkt;
	if (port == 1)
		atomic_fetch_add_explicit(&t->got, 1, memory_order_relaxed);
	atomic_store_explicit(&t->engine_cpu, sched_getcpu(), memory_order_relaxed);
	return false;
}

static void test_cmds_threaded(void)
{
	enum { N = 20000 };
	struct loop_fabric_opts o = { .nports = 2, .seed = 25, .real_time = true };
	char err[256] = "";
	struct loop_fabric *fab = loop_fabric_create_opts(&o, err, sizeof(err));
	REQUIRE(fab, "create: %s", err);
	struct port *ports[2] = { open_loop_port(fab, 0), open_loop_port(fab, 1) };
	struct cmd_ctx ctx = { .from = ports[0], .to = ports[1] };
	struct threaded t;
	cpu_set_t allowed;
	int cpu = -1;

	atomic_init(&t.got, 0);
	atomic_init(&t.engine_cpu, -1);
	/* pin to the last CPU this process may use */
	REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0, "sched_getaffinity");
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &allowed))
			cpu = i;
	REQUIRE(cpu >= 0, "no CPU allowed?");

	struct engine_config cfg = {
		.ports = ports,
		.nports = 2,
		.ncmd_rings = 1,
		.cmd_ring_size = 256,
		.clock = loop_fabric_clock,
		.clock_ctx = fab,
		.pin = true,
		.cpu = (unsigned)cpu,
		.idle_yield = true,
	};
	struct engine *eng = engine_create(&cfg, err, sizeof(err));
	REQUIRE(eng, "engine_create: %s", err);
	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "connect");
	engine_set_rx_handler(eng, threaded_rx, &t);
	REQUIRE(engine_start(eng, err, sizeof(err)) == 0, "engine_start: %s", err);
	CHECK(engine_start(eng, err, sizeof(err)) == -EBUSY, "started twice");

	uint64_t deadline = test_mono_ns() + TEST_HANG_NS;
	uint32_t posted = 0;
	while (posted < N && test_mono_ns() < deadline) {
		int rc = engine_post(eng, 0, cmd_send, &ctx, posted);

		if (rc == 0)
			posted++;
		else if (rc == -EAGAIN)
			sched_yield(); /* ring full: the engine is behind */
		else
			REQUIRE(0, "engine_post: %d", rc);
	}
	while (atomic_load(&t.got) < N && test_mono_ns() < deadline)
		sched_yield();
	engine_stop(eng);
	CHECK(posted == N, "posted %u of %d before the hang guard", posted, N);
	CHECK(atomic_load(&t.got) == N, "engine delivered %u of %d commands' frames", atomic_load(&t.got), N);
	/* the engine thread is joined: its counters are ours to read now */
	CHECK(ctx.ran == N && ctx.sum == (uint64_t)N * (N - 1) / 2, "commands ran %u", ctx.ran);
	CHECK(atomic_load(&t.engine_cpu) == cpu, "engine ran on cpu %d, pinned to %d", atomic_load(&t.engine_cpu), cpu);

	/* restart after a stop works, and stop without start is harmless */
	REQUIRE(engine_start(eng, err, sizeof(err)) == 0, "restart: %s", err);
	engine_stop(eng);
	engine_stop(eng);
	engine_destroy(eng);
	CHECK(loop_fabric_free_frames(fab) == LOOP_NFRAMES_DEFAULT, "frames leaked");
	port_close(ports[0]);
	port_close(ports[1]);
	loop_fabric_destroy(fab);
}

int main(void)
{
	test_config();
	test_end_to_end();
	test_tx_retry();
	test_timers();
	test_cmds_embedded();
	test_cmds_threaded();
	return test_done("engine");
}
