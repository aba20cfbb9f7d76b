/* SPDX-License-Identifier: MIT */
/* A port's capture (dataplane/port_capture.c): every frame sent and
 * received lands in the file once, byte for byte, in order, with its
 * length; the frame bound holds and what is past it is counted, not
 * written; a second start is refused, a stop without a start says so, a
 * file that cannot be created is an error with its reason, and closing a
 * port closes its capture. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/pcap_file.h"
#include "dataplane/port_capture.h"
#include "loop_test.h"

#define NFRAMES 40u

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "/tmp/uroce-cap-%d-%s.pcap", (int)getpid(), name);
}

/* Send n frames a -> b (payload 100 + i bytes) and receive them at b. */
static void exchange(struct loop_fabric *fab, struct port *a, struct port *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct uroce_frame f;

		REQUIRE(port_alloc(a, &f, 1) == 1, "no frame");
		test_build_roce(&f, a, b, i, 100 + i);
		REQUIRE(port_tx_burst(a, &f, 1) == 1, "tx refused");
	}
	loop_fabric_advance(fab, 1000000);
	unsigned got = 0;
	for (int tries = 0; got < n && tries < 100; tries++) {
		struct uroce_frame f[PORT_BURST_MAX];
		uint16_t k = port_rx_burst(b, f, PORT_BURST_MAX);

		got += k;
		port_free(b, f, k);
		loop_fabric_advance(fab, 1000000);
	}
	REQUIRE(got == n, "received %u of %u", got, n);
}

/* The file's records: count them and check record i is frame i (its PSN
 * and its length). */
static unsigned check_file(const char *path, unsigned expect, struct port *a, struct port *b)
{
	struct pcap_reader r;
	struct pcap_record rec;
	char err[256];
	unsigned n = 0;
	int rc;

	REQUIRE(pcap_reader_open(&r, path, err, sizeof(err)) == 0, "open %s: %s", path, err);
	CHECK(r.nsec, "the capture has nanosecond stamps");
	while ((rc = pcap_reader_next(&r, &rec, err, sizeof(err))) == 1) {
		struct roce_pkt pkt;
		struct roce_parse_opts po = {0};

		CHECK(rec.caplen == rec.origlen, "record %u cut: %u of %u", n, rec.caplen, rec.origlen);
		CHECK(roce_parse(rec.data, rec.caplen, &pkt, &po) == UROCE_DROP_NONE, "record %u is not a good frame", n);
		CHECK(pkt.psn == n % expect && pkt.payload_len == 100 + n % expect, "record %u: psn %u, %u bytes", n,
		      pkt.psn, pkt.payload_len);
		CHECK(rec.ts_ns > 1000000000ull * 1600000000ull, "record %u: stamp %llu is not wall-clock time", n,
		      (unsigned long long)rec.ts_ns);
		n++;
	}
	REQUIRE(rc == 0, "read %s: %s", path, err);
	pcap_reader_close(&r);
	(void)a;
	(void)b;
	return n;
}

int main(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 7);
	struct port_capture c;
	char path[128], err[256];

	REQUIRE(fab, "fabric");
	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "wire");
	struct port *a = open_loop_port(fab, 0), *b = open_loop_port(fab, 1);

	/* both directions of one port: sent at a, received at b */
	tmp_path(path, sizeof(path), "tx");
	REQUIRE(port_capture_start(a, path, 0, err, sizeof(err)) == 0, "start: %s", err);
	CHECK(port_capture_start(a, path, 0, err, sizeof(err)) == -EBUSY, "a second start is refused");
	CHECK(strstr(err, "already running") != NULL, "and says why: %s", err);
	exchange(fab, a, b, NFRAMES);
	REQUIRE(port_capture_stop(a, &c) == 0, "stop");
	CHECK(c.frames == NFRAMES && c.missed == 0 && c.error == 0, "sent: %llu frames, %llu missed",
	      (unsigned long long)c.frames, (unsigned long long)c.missed);
	CHECK(check_file(path, NFRAMES, a, b) == NFRAMES, "every sent frame in the file once");
	CHECK(port_capture_stop(a, &c) == -ENOENT, "a stop without a capture is -ENOENT");
	unlink(path);

	tmp_path(path, sizeof(path), "rx");
	REQUIRE(port_capture_start(b, path, 0, err, sizeof(err)) == 0, "start: %s", err);
	exchange(fab, a, b, NFRAMES);
	REQUIRE(port_capture_stop(b, &c) == 0, "stop");
	CHECK(c.frames == NFRAMES, "received: %llu frames", (unsigned long long)c.frames);
	CHECK(check_file(path, NFRAMES, a, b) == NFRAMES, "every received frame in the file once");
	unlink(path);

	/* the bound: 10 frames written, the other 30 counted as missed */
	tmp_path(path, sizeof(path), "bound");
	REQUIRE(port_capture_start(b, path, 10, err, sizeof(err)) == 0, "start: %s", err);
	exchange(fab, a, b, NFRAMES);
	REQUIRE(port_capture_stop(b, &c) == 0, "stop");
	CHECK(c.frames == 10 && c.missed == NFRAMES - 10, "bound 10: %llu written, %llu missed",
	      (unsigned long long)c.frames, (unsigned long long)c.missed);
	CHECK(check_file(path, NFRAMES, a, b) == 10, "the file holds the first 10");
	unlink(path);

	/* a file that cannot be created */
	CHECK(port_capture_start(a, "/nonexistent-dir/x.pcap", 0, err, sizeof(err)) < 0, "an unwritable path fails");
	CHECK(strstr(err, "No such file") != NULL, "with the reason: %s", err);
	CHECK(a->cap == NULL, "and leaves no capture behind");

	/* closing the port closes a capture still running (the file is whole) */
	tmp_path(path, sizeof(path), "close");
	REQUIRE(port_capture_start(a, path, 0, err, sizeof(err)) == 0, "start: %s", err);
	exchange(fab, a, b, 5);
	port_close(a);
	port_close(b);
	CHECK(check_file(path, 5, NULL, NULL) == 5, "a port closed mid-capture leaves a readable file");
	unlink(path);
	loop_fabric_destroy(fab);
	return test_done("port_capture");
}
