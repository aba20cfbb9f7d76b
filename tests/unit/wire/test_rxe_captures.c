/* SPDX-License-Identifier: MIT */
/* Byte-exact against the kernel: every RoCEv2 packet in captures of Linux
 * rdma_rxe traffic parses with a good ICRC, and rebuilding it from the
 * parsed descriptor gives the very same bytes. Proves builder == kernel.
 *
 * usage: test_rxe_captures FILE.pcap...
 */
#include "dataplane/pcap_file.h"
#include "wire_test.h"

struct tally {
	uint64_t frames, roce, other;
	uint64_t by_opcode[256];
};

static bool is_udp_4791(const uint8_t *f, uint32_t len)
{
	uint32_t l3 = ETH_HDR_LEN;
	uint16_t et;

	if (len < ETH_HDR_LEN)
		return false;
	et = roce_get_be16(f + 12);
	if (et == ROCE_ETHERTYPE_VLAN && len >= 18) {
		et = roce_get_be16(f + 16);
		l3 += 4;
	}
	if (et == ROCE_ETHERTYPE_IPV4 && len >= l3 + 24)
		return f[l3 + 9] == ROCE_IPPROTO_UDP &&
		       roce_get_be16(f + l3 + (f[l3] & 15u) * 4 + 2) == ROCE_UDP_PORT;
	if (et == ROCE_ETHERTYPE_IPV6 && len >= l3 + 44)
		return f[l3 + 6] == ROCE_IPPROTO_UDP && roce_get_be16(f + l3 + 42) == ROCE_UDP_PORT;
	return false;
}

static void hexdiff(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	unsigned shown = 0;
	for (uint32_t i = 0; i < len && shown < 8; i++) {
		if (a[i] != b[i]) {
			fprintf(stderr, "    offset %u: capture %02x, rebuilt %02x\n", i, a[i], b[i]);
			shown++;
		}
	}
}

static int one_file(const char *path, struct tally *t)
{
	struct pcap_reader r;
	struct pcap_record rec;
	char err[512];
	static uint8_t rebuilt[PCAP_SNAPLEN_MAX];
	int rc;
	uint64_t roce_before = t->roce;

	if (pcap_reader_open(&r, path, err, sizeof(err)) < 0) {
		CHECK(0, "%s", err);
		return -1;
	}
	while ((rc = pcap_reader_next(&r, &rec, err, sizeof(err))) > 0) {
		uint64_t n = ++t->frames;
		if (!is_udp_4791(rec.data, rec.caplen)) {
			t->other++;
			continue;
		}
		t->roce++;
		CHECK(rec.caplen == rec.origlen, "%s frame %llu: cut by the snaplen", path,
		      (unsigned long long)r.records);
		uint8_t *f = exact_copy(rec.data, rec.caplen);
		struct roce_pkt p;
		enum uroce_drop_reason why = roce_parse(f, rec.caplen, &p, NULL);
		CHECK(why == UROCE_DROP_NONE, "%s frame %llu: %s", path, (unsigned long long)r.records,
		      uroce_drop_reason_name(why));
		if (why == UROCE_DROP_NONE) {
			t->by_opcode[p.opcode]++;
			int len = roce_build(rebuilt, sizeof(rebuilt), &p);
			bool same = len == (int)p.frame_len && !memcmp(rebuilt, f, p.frame_len);
			CHECK(same, "%s frame %llu (%s): rebuilt %d bytes, capture %u: differs", path,
			      (unsigned long long)r.records, roce_opcode_info(p.opcode)->name, len,
			      p.frame_len);
			if (!same && len > 0)
				hexdiff(f, rebuilt, p.frame_len < (uint32_t)len ? p.frame_len : (uint32_t)len);
			/* Ethernet padding, if any, is all the capture may add */
			CHECK(rec.caplen == p.frame_len || rec.caplen <= 60, "%s frame %llu: %u trailing bytes",
			      path, (unsigned long long)r.records, rec.caplen - p.frame_len);
		}
		free(f);
		(void)n;
	}
	CHECK(rc == 0, "%s", err);
	CHECK(t->roce > roce_before, "%s: no RoCEv2 packets in it", path);
	pcap_reader_close(&r);
	return 0;
}

int main(int argc, char **argv)
{
	struct tally t = { 0 };

	if (argc < 2) {
		fprintf(stderr, "test_rxe_captures: no capture given; expected FILE.pcap... "
		                "(tests/data/rxe_*.pcap)\n");
		return 1;
	}
	for (int i = 1; i < argc; i++)
		one_file(argv[i], &t);

	printf("%d capture(s), %llu frames, %llu RoCEv2, %llu other\n", argc - 1,
	       (unsigned long long)t.frames, (unsigned long long)t.roce, (unsigned long long)t.other);
	for (unsigned op = 0; op < 256; op++)
		if (t.by_opcode[op])
			printf("  %-34s %6llu\n", roce_opcode_info((uint8_t)op)->name,
			       (unsigned long long)t.by_opcode[op]);
	return test_done("test_rxe_captures");
}
