/* SPDX-License-Identifier: MIT */
/* ICRC and IPv4 checksum against independent references: a bitwise CRC-32
 * (zlib's reflected polynomial) over a pseudo packet masked here by field
 * name, a ConnectX-4 Lx capture, and the masking rules field by field. */
#include "wire_test.h"

/* Bit-at-a-time CRC-32, reflected polynomial 0xedb88320, pre- and
 * post-inverted: zlib's crc32(). Deliberately the slowest, plainest form. */
static uint32_t ref_crc32(uint32_t crc, const uint8_t *b, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
	}
	return ~crc;
}

/* The IBTA A17.8 rule spelled out on a whole copy of the IP packet. */
static uint32_t ref_icrc(const uint8_t *l3, uint32_t l3_len, bool ipv6)
{
	uint8_t *ps = malloc(8 + l3_len);
	uint32_t udp = ipv6 ? 40 : 20, bth = udp + 8;

	memset(ps, 0xff, 8);
	memcpy(ps + 8, l3, l3_len);
	uint8_t *ip = ps + 8;
	if (ipv6) {
		ip[0] |= 0x0f; /* traffic class, high nibble */
		ip[1] = ip[2] = ip[3] = 0xff; /* traffic class low nibble, flow label */
		ip[7] = 0xff; /* hop limit */
	} else {
		ip[1] = 0xff; /* type of service */
		ip[8] = 0xff; /* time to live */
		ip[10] = ip[11] = 0xff; /* header checksum */
	}
	ip[udp + 6] = ip[udp + 7] = 0xff; /* UDP checksum */
	ip[bth + 4] = 0xff; /* FECN, BECN, resv6a */
	uint32_t crc = ref_crc32(0, ps, 8 + l3_len - 4);
	free(ps);
	return crc;
}

static void test_reference_itself(void)
{
	/* the catalogued check value of CRC-32/ISO-HDLC (zlib) */
	CHECK(ref_crc32(0, (const uint8_t *)"123456789", 9) == 0xcbf43926, "reference CRC broken");
}

static const uint8_t cx4_cnp[] = WIRE_CX4_CNP;

static void test_known_vector(void)
{
	/* Stored little-endian: bytes 82 fd 00 2a are the CRC 0x2a00fd82. */
	const uint8_t *l3 = cx4_cnp + ETH_HDR_LEN;
	uint32_t l3_len = sizeof(cx4_cnp) - ETH_HDR_LEN;

	CHECK(roce_icrc(l3, l3_len, false) == 0x2a00fd82, "ConnectX CNP ICRC: got 0x%08x",
	      roce_icrc(l3, l3_len, false));
	CHECK(ref_icrc(l3, l3_len, false) == 0x2a00fd82, "reference disagrees with ConnectX");
}

static void test_random_frames(void)
{
	struct rng r = { 0x1c2c0001 };
	static uint8_t payload[9000], buf[9200];
	uint8_t ops[256];
	unsigned nops = all_opcodes(ops), n = 0;

	for (unsigned iter = 0; iter < 2000; iter++) {
		uint8_t op = ops[rng_below(&r, nops)];
		bool ipv6 = rng_next(&r) & 1, vlan = rng_next(&r) & 1;
		/* every length 0..64 (all alignments), then spread up to jumbo */
		uint32_t plen = iter < 1000 ? iter % 65 : rng_below(&r, 9000);
		struct roce_pkt p;

		random_pkt(&p, &r, op, ipv6, vlan, payload, plen);
		int len = roce_build(buf, sizeof(buf), &p);
		if (len < 0) {
			CHECK(len > 0, "build failed: %d", len);
			continue;
		}
		uint32_t l3 = ETH_HDR_LEN + (vlan ? VLAN_HDR_LEN : 0);
		uint32_t want = ref_icrc(buf + l3, (uint32_t)len - l3, ipv6);
		uint32_t got = roce_icrc(buf + l3, (uint32_t)len - l3, ipv6);
		CHECK(got == want && roce_get_le32(buf + len - 4) == want,
		      "op 0x%02x v6=%d len %u: icrc 0x%08x stored 0x%08x reference 0x%08x", op, ipv6,
		      plen, got, roce_get_le32(buf + len - 4), want);
		n++;
	}
	printf("icrc: %u random frames agree with the reference\n", n);
}

/* Change one byte of a built frame; the ICRC must (or must not) move. */
static bool icrc_moves(const uint8_t *frame, int len, uint32_t l3, bool ipv6, uint32_t at,
                       uint8_t xor)
{
	uint8_t *f = exact_copy(frame, (uint32_t)len);
	uint32_t before = roce_icrc(f + l3, (uint32_t)len - l3, ipv6);
	f[at] ^= xor;
	uint32_t after = roce_icrc(f + l3, (uint32_t)len - l3, ipv6);
	free(f);
	return before != after;
}

static void test_masking(void)
{
	struct rng r = { 0x1c2c0002 };
	uint8_t payload[32], buf[256];
	struct roce_pkt p;

	for (int v6 = 0; v6 < 2; v6++) {
		random_pkt(&p, &r, ROCE_OP_WRITE_ONLY_IMM, v6, false, payload, 19);
		int len = roce_build(buf, sizeof(buf), &p);
		uint32_t l3 = ETH_HDR_LEN, udp = l3 + (v6 ? 40 : 20), bth = udp + 8;

		/* masked: rewritten by routers, so not covered */
		if (v6) {
			CHECK(!icrc_moves(buf, len, l3, true, l3 + 0, 0x0f), "IPv6 traffic class (hi)");
			CHECK(!icrc_moves(buf, len, l3, true, l3 + 1, 0xff), "IPv6 tc/flow label");
			CHECK(!icrc_moves(buf, len, l3, true, l3 + 3, 0xff), "IPv6 flow label");
			CHECK(!icrc_moves(buf, len, l3, true, l3 + 7, 0xff), "IPv6 hop limit");
			/* covered */
			CHECK(icrc_moves(buf, len, l3, true, l3 + 0, 0x10), "IPv6 version");
			CHECK(icrc_moves(buf, len, l3, true, l3 + 5, 0x01), "IPv6 payload length");
			CHECK(icrc_moves(buf, len, l3, true, l3 + 6, 0x01), "IPv6 next header");
			CHECK(icrc_moves(buf, len, l3, true, l3 + 8, 0x01), "IPv6 source");
			CHECK(icrc_moves(buf, len, l3, true, l3 + 39, 0x01), "IPv6 destination");
		} else {
			CHECK(!icrc_moves(buf, len, l3, false, l3 + 1, 0xff), "IPv4 TOS");
			CHECK(!icrc_moves(buf, len, l3, false, l3 + 8, 0xff), "IPv4 TTL");
			CHECK(!icrc_moves(buf, len, l3, false, l3 + 10, 0xff), "IPv4 checksum");
			CHECK(!icrc_moves(buf, len, l3, false, l3 + 11, 0xff), "IPv4 checksum");
			/* covered: identification and total length are not masked */
			CHECK(icrc_moves(buf, len, l3, false, l3 + 0, 0x01), "IPv4 version/IHL");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 3, 0x01), "IPv4 total length");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 4, 0x01), "IPv4 identification");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 5, 0x01), "IPv4 identification");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 6, 0x40), "IPv4 DF");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 9, 0x01), "IPv4 protocol");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 12, 0x01), "IPv4 source");
			CHECK(icrc_moves(buf, len, l3, false, l3 + 19, 0x01), "IPv4 destination");
		}
		CHECK(!icrc_moves(buf, len, l3, v6, udp + 6, 0xff), "UDP checksum");
		CHECK(!icrc_moves(buf, len, l3, v6, udp + 7, 0xff), "UDP checksum");
		CHECK(!icrc_moves(buf, len, l3, v6, bth + 4, 0xc0), "BTH FECN/BECN");
		CHECK(!icrc_moves(buf, len, l3, v6, bth + 4, 0x3f), "BTH resv6a");
		CHECK(icrc_moves(buf, len, l3, v6, udp + 0, 0x01), "UDP source port");
		CHECK(icrc_moves(buf, len, l3, v6, udp + 3, 0x01), "UDP destination port");
		CHECK(icrc_moves(buf, len, l3, v6, udp + 5, 0x01), "UDP length");
		for (uint32_t i = 0; i < 12; i++)
			if (i != 4)
				CHECK(icrc_moves(buf, len, l3, v6, bth + i, 0x01), "BTH byte %u", i);
		CHECK(icrc_moves(buf, len, l3, v6, bth + 12, 0x01), "RETH");
		CHECK(icrc_moves(buf, len, l3, v6, (uint32_t)len - 5, 0x01), "pad byte");
		CHECK(icrc_moves(buf, len, l3, v6, (uint32_t)len - 8, 0x01), "payload");
		/* Ethernet is outside the ICRC */
		CHECK(roce_icrc(buf + l3, (uint32_t)len - l3, v6) == roce_get_le32(buf + len - 4),
		      "stored ICRC");
	}

	/* A too-short span is refused without reading it (callers check). */
	CHECK(roce_icrc(cx4_cnp + ETH_HDR_LEN, 20 + 8 + 12 + 3, false) == 0, "short span");
}

static uint16_t ref_csum(const uint8_t *b, size_t n)
{
	uint32_t sum = 0;
	for (size_t i = 0; i < n; i += 2)
		sum += (uint32_t)b[i] << 8 | (i + 1 < n ? b[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void test_ipv4_csum(void)
{
	/* RFC 1071-style worked example: a UDP/IPv4 header with checksum b861 */
	uint8_t h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
	                  0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	CHECK(ipv4_csum(h, 20) == 0xb861, "checksum 0x%04x, expected 0xb861", ipv4_csum(h, 20));
	h[10] = 0xb8;
	h[11] = 0x61;
	CHECK(ipv4_csum(h, 20) == 0, "valid header sums to 0x%04x", ipv4_csum(h, 20));
	CHECK(ipv4_csum(cx4_cnp + ETH_HDR_LEN, 20) == 0, "ConnectX header checksum");

	struct rng r = { 0x1c2c0003 };
	uint8_t b[64];
	for (int i = 0; i < 500; i++) {
		size_t n = rng_below(&r, 64);
		rng_fill(&r, b, n);
		CHECK(ipv4_csum(b, (uint32_t)n) == ref_csum(b, n), "length %zu: 0x%04x vs 0x%04x", n,
		      ipv4_csum(b, (uint32_t)n), ref_csum(b, n));
	}
}

int main(void)
{
	test_reference_itself();
	test_known_vector();
	test_random_frames();
	test_masking();
	test_ipv4_csum();
	return test_done("test_icrc");
}
