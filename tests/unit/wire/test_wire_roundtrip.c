/* SPDX-License-Identifier: MIT */
/* Builder and parser agree: every opcode built then parsed gives back every
 * field, over IPv4 and IPv6, with and without 802.1Q; the opcode table
 * matches rxe's layout; the builder refuses what it cannot encode; and it
 * reproduces a ConnectX-4 Lx CNP byte for byte. */
#include <errno.h>

#include "wire_test.h"

/* rxe's layout (drivers/infiniband/sw/rxe/rxe_opcode.c), written out by
 * hand rather than derived, so a slip in the table's macros shows here.
 * Offsets are from the start of the BTH; 0 = header absent. */
struct expect {
	uint8_t op;
	const char *name;
	uint8_t hdr_len;
	bool payload;
	uint8_t reth, aeth, imm, deth, ieth, atom, atomack;
};

#define UC_RC_SHARED(tr, pfx)                                                        \
	{ tr | 0x00, pfx "_SEND_FIRST", 12, true, 0, 0, 0, 0, 0, 0, 0 },                 \
	{ tr | 0x01, pfx "_SEND_MIDDLE", 12, true, 0, 0, 0, 0, 0, 0, 0 },                \
	{ tr | 0x02, pfx "_SEND_LAST", 12, true, 0, 0, 0, 0, 0, 0, 0 },                  \
	{ tr | 0x03, pfx "_SEND_LAST_WITH_IMMEDIATE", 16, true, 0, 0, 12, 0, 0, 0, 0 },  \
	{ tr | 0x04, pfx "_SEND_ONLY", 12, true, 0, 0, 0, 0, 0, 0, 0 },                  \
	{ tr | 0x05, pfx "_SEND_ONLY_WITH_IMMEDIATE", 16, true, 0, 0, 12, 0, 0, 0, 0 },  \
	{ tr | 0x06, pfx "_RDMA_WRITE_FIRST", 28, true, 12, 0, 0, 0, 0, 0, 0 },          \
	{ tr | 0x07, pfx "_RDMA_WRITE_MIDDLE", 12, true, 0, 0, 0, 0, 0, 0, 0 },          \
	{ tr | 0x08, pfx "_RDMA_WRITE_LAST", 12, true, 0, 0, 0, 0, 0, 0, 0 },            \
	{ tr | 0x09, pfx "_RDMA_WRITE_LAST_WITH_IMMEDIATE", 16, true, 0, 0, 12, 0, 0, 0, 0 }, \
	{ tr | 0x0a, pfx "_RDMA_WRITE_ONLY", 28, true, 12, 0, 0, 0, 0, 0, 0 },           \
	{ tr | 0x0b, pfx "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, true, 12, 0, 28, 0, 0, 0, 0 }

static const struct expect expected[] = {
	UC_RC_SHARED(0x00, "RC"),
	{ 0x0c, "RC_RDMA_READ_REQUEST", 28, false, 12, 0, 0, 0, 0, 0, 0 },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", 16, true, 0, 12, 0, 0, 0, 0, 0 },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 12, true, 0, 0, 0, 0, 0, 0, 0 },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", 16, true, 0, 12, 0, 0, 0, 0, 0 },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", 16, true, 0, 12, 0, 0, 0, 0, 0 },
	{ 0x11, "RC_ACKNOWLEDGE", 16, false, 0, 12, 0, 0, 0, 0, 0 },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", 24, false, 0, 12, 0, 0, 0, 0, 16 },
	{ 0x13, "RC_COMPARE_SWAP", 40, false, 0, 0, 0, 0, 0, 12, 0 },
	{ 0x14, "RC_FETCH_ADD", 40, false, 0, 0, 0, 0, 0, 12, 0 },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", 16, true, 0, 0, 0, 0, 12, 0, 0 },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", 16, true, 0, 0, 0, 0, 12, 0, 0 },
	UC_RC_SHARED(0x20, "UC"),
	{ 0x64, "UD_SEND_ONLY", 20, true, 0, 0, 0, 12, 0, 0, 0 },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", 24, true, 0, 0, 20, 12, 0, 0, 0 },
	{ 0x81, "CNP", 28, false, 0, 0, 0, 0, 0, 0, 0 },
};

static void test_table(void)
{
	const size_t n = sizeof(expected) / sizeof(expected[0]);
	uint8_t ops[256];
	unsigned count = all_opcodes(ops);

	CHECK(count == n, "table has %u opcodes, expected %zu", count, n);
	for (size_t i = 0; i < n; i++) {
		const struct expect *e = &expected[i];
		const struct roce_opcode_info *info = roce_opcode_info(e->op);

		CHECK(info != NULL, "opcode 0x%02x missing", e->op);
		if (!info)
			continue;
		CHECK(!strcmp(info->name, e->name), "0x%02x: name %s, expected %s", e->op, info->name,
		      e->name);
		CHECK(info->hdr_len == e->hdr_len, "%s: hdr_len %u, expected %u", e->name, info->hdr_len,
		      e->hdr_len);
		CHECK(info->payload_offset == e->hdr_len, "%s: payload_offset %u", e->name,
		      info->payload_offset);
		CHECK(!!(info->mask & ROCE_PAYLOAD) == e->payload, "%s: payload flag", e->name);
		const uint8_t want[ROCE_HDR__COUNT] = {
			[ROCE_HDR_RETH] = e->reth,   [ROCE_HDR_AETH] = e->aeth,
			[ROCE_HDR_IMMDT] = e->imm,   [ROCE_HDR_DETH] = e->deth,
			[ROCE_HDR_IETH] = e->ieth,   [ROCE_HDR_ATOMETH] = e->atom,
			[ROCE_HDR_ATOMACKETH] = e->atomack,
		};
		for (int h = 0; h < ROCE_HDR__COUNT; h++) {
			CHECK(info->offset[h] == want[h], "%s: header %d at %u, expected %u", e->name, h,
			      info->offset[h], want[h]);
			CHECK(!!(info->mask & ROCE_HAS(h)) == !!want[h], "%s: mask bit of header %d",
			      e->name, h);
		}
		CHECK(!!(info->mask & ROCE_REQ) == (strstr(e->name, "RESPONSE") == NULL &&
		                                    strstr(e->name, "ACK") == NULL && e->op != 0x81),
		      "%s: request flag", e->name);
	}
}

static const uint32_t payload_sizes[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 255, 256, 1024, 4096 };

static void check_layout(const uint8_t *f, int len, const struct roce_pkt *in,
                         const struct roce_pkt *out)
{
	const struct roce_opcode_info *info = roce_opcode_info(in->opcode);
	uint32_t l3 = ETH_HDR_LEN + (in->has_vlan ? VLAN_HDR_LEN : 0);
	uint32_t l4 = l3 + (in->ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN);
	uint32_t pad = -in->payload_len & 3u;

	CHECK(out->l3_off == l3 && out->l4_off == l4 && out->bth_off == l4 + UDP_HDR_LEN,
	      "%s: offsets %u/%u/%u", info->name, out->l3_off, out->l4_off, out->bth_off);
	CHECK(out->payload_off == l4 + UDP_HDR_LEN + info->hdr_len, "%s: payload_off %u", info->name,
	      out->payload_off);
	CHECK(out->pad == pad, "%s: pad %u for %u bytes", info->name, out->pad, in->payload_len);
	CHECK(out->frame_len == (uint32_t)len, "%s: frame_len %u vs %d", info->name, out->frame_len,
	      len);
	CHECK((uint32_t)len == roce_frame_len(in), "%s: roce_frame_len %u vs built %d", info->name,
	      roce_frame_len(in), len);
	CHECK(roce_hdr_len(in) == out->payload_off, "%s: roce_hdr_len %u", info->name,
	      roce_hdr_len(in));
	/* UDP: checksum 0, length to the end of the IP packet */
	CHECK(roce_get_be16(f + l4 + 6) == 0, "%s: UDP checksum not 0", info->name);
	CHECK(roce_get_be16(f + l4 + 4) == len - l4, "%s: UDP length", info->name);
	if (!in->ipv6) {
		CHECK(ipv4_csum(f + l3, IPV4_HDR_LEN) == 0, "%s: IPv4 checksum", info->name);
		CHECK(roce_get_be16(f + l3 + 2) == len - l3, "%s: IPv4 total length", info->name);
	} else {
		CHECK(roce_get_be16(f + l3 + 4) == len - l4, "%s: IPv6 payload length", info->name);
	}
	/* pad bytes are zero, and the BTH-to-ICRC span is a multiple of 4 */
	for (uint32_t i = 0; i < pad; i++)
		CHECK(f[out->payload_off + in->payload_len + i] == 0, "%s: pad byte %u", info->name, i);
	CHECK((len - (l4 + UDP_HDR_LEN)) % 4 == 0, "%s: BTH..ICRC not 4-aligned", info->name);
	CHECK(out->icrc == roce_get_le32(f + len - 4), "%s: icrc field", info->name);
}

static void test_roundtrip(void)
{
	struct rng r = { 0x5eed0001 };
	static uint8_t payload[4096];
	uint8_t ops[256];
	unsigned nops = all_opcodes(ops);
	unsigned cases = 0;

	for (unsigned i = 0; i < nops; i++) {
		const struct roce_opcode_info *info = roce_opcode_info(ops[i]);
		for (int shape = 0; shape < 4; shape++) {
			bool ipv6 = shape & 1, vlan = shape & 2;
			for (size_t s = 0; s < sizeof(payload_sizes) / sizeof(payload_sizes[0]); s++) {
				uint32_t plen = payload_sizes[s];
				struct roce_pkt in, out;
				char why[128];

				if (plen && !(info->mask & ROCE_PAYLOAD))
					break;
				random_pkt(&in, &r, ops[i], ipv6, vlan, payload, plen);
				uint32_t want = roce_frame_len(&in);
				uint8_t *buf = malloc(want);
				int len = roce_build(buf, want, &in);
				CHECK(len == (int)want, "%s: build returned %d, expected %u", info->name, len,
				      want);
				if (len != (int)want) {
					free(buf);
					continue;
				}
				enum uroce_drop_reason rc = roce_parse(buf, (uint32_t)len, &out, NULL);
				CHECK(rc == UROCE_DROP_NONE, "%s v6=%d vlan=%d len=%u: parse: %s", info->name,
				      ipv6, vlan, plen, uroce_drop_reason_name(rc));
				if (rc == UROCE_DROP_NONE) {
					CHECK(pkt_equal(&in, &out, why, sizeof(why)),
					      "%s v6=%d vlan=%d len=%u: %s", info->name, ipv6, vlan, plen, why);
					CHECK(out.payload == buf + out.payload_off, "payload points into frame");
					check_layout(buf, len, &in, &out);
				}
				free(buf);
				cases++;
			}
		}
	}
	CHECK(cases > 38 * 4, "only %u cases ran", cases);
	printf("roundtrip: %u cases\n", cases);
}

static void test_build_errors(void)
{
	struct rng r = { 0x5eed0002 };
	uint8_t buf[9000], payload[64];
	struct roce_pkt p;

	/* opcodes without a row: reserved, RD, unknown */
	static const uint8_t bad_ops[] = { 0x15, 0x18, 0x1f, 0x2c, 0x40, 0x60, 0x66, 0x80, 0x82, 0xff };
	for (size_t i = 0; i < sizeof(bad_ops); i++) {
		random_pkt(&p, &r, ROCE_OP_SEND_ONLY, false, false, payload, 0);
		p.opcode = bad_ops[i];
		CHECK(roce_build(buf, sizeof(buf), &p) == -EINVAL, "opcode 0x%02x built", bad_ops[i]);
		CHECK(roce_frame_len(&p) == 0 && roce_hdr_len(&p) == 0, "length of unknown opcode");
	}

	/* payload on opcodes that carry none */
	static const uint8_t nopay[] = { 0x0c, 0x11, 0x12, 0x13, 0x14, 0x81 };
	for (size_t i = 0; i < sizeof(nopay); i++) {
		random_pkt(&p, &r, nopay[i], false, false, payload, 0);
		p.payload = payload;
		p.payload_len = 4;
		CHECK(roce_build(buf, sizeof(buf), &p) == -EINVAL, "payload on 0x%02x accepted", nopay[i]);
	}

	/* fields wider than their wire width */
	random_pkt(&p, &r, ROCE_TR_UD | ROCE_OP_SEND_ONLY, true, false, payload, 8);
	CHECK(roce_build(buf, sizeof(buf), &p) > 0, "valid UD packet refused");
	struct roce_pkt q = p;
	q.dqpn = 1u << 24;
	CHECK(roce_build(buf, sizeof(buf), &q) == -EINVAL, "25-bit dqpn accepted");
	q = p;
	q.psn = 0x1000000;
	CHECK(roce_build(buf, sizeof(buf), &q) == -EINVAL, "25-bit psn accepted");
	q = p;
	q.deth.src_qp = 0x1000000;
	CHECK(roce_build(buf, sizeof(buf), &q) == -EINVAL, "25-bit src_qp accepted");
	q = p;
	q.flow_label = 0x100000;
	CHECK(roce_build(buf, sizeof(buf), &q) == -EINVAL, "21-bit flow label accepted");
	q = p;
	q.tver = 1;
	CHECK(roce_build(buf, sizeof(buf), &q) == -EINVAL, "tver 1 accepted");
	random_pkt(&p, &r, ROCE_OP_ACK, false, false, payload, 0);
	p.aeth.msn = 0x1000000;
	CHECK(roce_build(buf, sizeof(buf), &p) == -EINVAL, "25-bit msn accepted");

	/* IP length limits: IPv4 total length and IPv6 payload length are 16 bit */
	static uint8_t big[70000];
	random_pkt(&p, &r, ROCE_OP_SEND_ONLY, false, false, payload, 0);
	p.payload = big;
	/* 20 + 8 + 12 + 4 bytes of headers and ICRC; payload + pad is a
	 * multiple of 4, so 65488 is the largest payload that fits */
	p.payload_len = 65488;
	uint8_t *large = malloc(70000);
	CHECK(roce_build(large, 70000, &p) == (int)(65532 + ETH_HDR_LEN), "largest IPv4 packet");
	struct roce_pkt out;
	CHECK(roce_parse(large, 65532 + ETH_HDR_LEN, &out, NULL) == UROCE_DROP_NONE &&
	      out.payload_len == 65488, "largest IPv4 packet does not parse");
	p.payload_len = 65489; /* padded to 65492: total length 65536 */
	CHECK(roce_build(large, 70000, &p) == -EINVAL, "IPv4 total length > 65535 accepted");
	p.payload_len = 0xfffffff0u;
	CHECK(roce_build(large, 70000, &p) == -EINVAL, "huge payload_len accepted");
	p.ipv6 = true;
	p.payload_len = 65508; /* 8 + 12 + 65508 + 4 = 65532 of IPv6 payload */
	CHECK(roce_build(large, 70000, &p) == (int)(65532 + 40 + ETH_HDR_LEN), "largest IPv6 packet");
	CHECK(roce_parse(large, 65532 + 40 + ETH_HDR_LEN, &out, NULL) == UROCE_DROP_NONE &&
	      out.payload_len == 65508, "largest IPv6 packet does not parse");
	p.payload_len = 65509;
	CHECK(roce_build(large, 70000, &p) == -EINVAL, "IPv6 payload length > 65535 accepted");
	free(large);

	/* -ENOSPC: one byte short, and nothing written past cap */
	random_pkt(&p, &r, ROCE_OP_WRITE_ONLY_IMM, false, true, payload, 33);
	uint32_t want = roce_frame_len(&p);
	memset(buf, 0xa5, sizeof(buf));
	CHECK(roce_build(buf, want - 1, &p) == -ENOSPC, "cap one short accepted");
	CHECK(roce_build(buf, 0, &p) == -ENOSPC, "cap 0 accepted");
	for (uint32_t i = 0; i < want; i++)
		CHECK(buf[i] == 0xa5, "byte %u written on -ENOSPC", i);
	CHECK(roce_build(buf, want, &p) == (int)want, "exact cap refused");
}

static void test_options_and_edges(void)
{
	struct rng r = { 0x5eed0003 };
	uint8_t buf[256], payload[16];
	struct roce_pkt p, out;

	/* dport 0 means RoCEv2's port */
	random_pkt(&p, &r, ROCE_OP_SEND_ONLY, false, false, payload, 4);
	p.dport = 0;
	int len = roce_build(buf, sizeof(buf), &p);
	CHECK(len > 0 && roce_parse(buf, (uint32_t)len, &out, NULL) == UROCE_DROP_NONE &&
	      out.dport == ROCE_UDP_PORT, "dport 0 not sent as 4791");

	/* a second port only when the options name it */
	p.dport = 5000;
	len = roce_build(buf, sizeof(buf), &p);
	struct roce_parse_opts o = { .extra_port = 5000 };
	CHECK(roce_parse(buf, (uint32_t)len, &out, NULL) == UROCE_DROP_WRONG_PORT, "5000 w/o opts");
	struct roce_parse_opts o0 = { 0 };
	CHECK(roce_parse(buf, (uint32_t)len, &out, &o0) == UROCE_DROP_WRONG_PORT, "5000, extra 0");
	CHECK(roce_parse(buf, (uint32_t)len, &out, &o) == UROCE_DROP_NONE && out.dport == 5000,
	      "extra_port 5000 refused");

	/* Ethernet padding after a short packet is ignored, not counted */
	random_pkt(&p, &r, ROCE_OP_ACK, false, false, payload, 0);
	len = roce_build(buf, sizeof(buf), &p);
	CHECK(len == 14 + 20 + 8 + 12 + 4 + 4, "ACK length %d", len);
	memset(buf + len, 0, 8);
	uint8_t *padded = exact_copy(buf, (uint32_t)len + 8);
	CHECK(roce_parse(padded, (uint32_t)len + 8, &out, NULL) == UROCE_DROP_NONE &&
	      out.frame_len == (uint32_t)len, "padded frame: frame_len %u", out.frame_len);
	free(padded);

	/* payload == NULL: the builder leaves the payload area alone */
	random_pkt(&p, &r, ROCE_OP_SEND_ONLY, true, false, payload, 7);
	uint32_t hdr = roce_hdr_len(&p);
	memset(buf, 0, sizeof(buf));
	memcpy(buf + hdr, "in-place", 7);
	p.payload = NULL;
	len = roce_build(buf, sizeof(buf), &p);
	CHECK(len > 0 && !memcmp(buf + hdr, "in-plac", 7) && buf[hdr + 7] == 0,
	      "in-place payload disturbed");
	CHECK(roce_parse(buf, (uint32_t)len, &out, NULL) == UROCE_DROP_NONE, "in-place ICRC");
	/* payload pointing at its own place in buf is the same thing */
	p.payload = buf + hdr;
	CHECK(roce_build(buf, sizeof(buf), &p) == len && !memcmp(buf + hdr, "in-plac", 7),
	      "self-pointing payload");

	/* roce_ipv4_mapped and the IPv4 address round trip */
	uint8_t m[16];
	roce_ipv4_mapped(m, htobe32(0x0a000102));
	static const uint8_t want_m[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 1, 2 };
	CHECK(!memcmp(m, want_m, 16), "ipv4-mapped address");

	/* PSN arithmetic wraps at 2^24 */
	CHECK(roce_psn_diff(0, 0xffffff) == 1 && roce_psn_diff(0xffffff, 0) == -1 &&
	      roce_psn_diff(5, 3) == 2, "psn diff");
}

/* A CNP captured from a ConnectX-4 Lx (published with scapy's RoCE tests):
 * our builder, given the fields, must produce these exact bytes. */
static const uint8_t cx4_cnp[] = WIRE_CX4_CNP;

static void test_cnp_bytes(void)
{
	struct roce_pkt p;
	uint8_t buf[128];
	uint8_t *f = exact_copy(cx4_cnp, sizeof(cx4_cnp));

	enum uroce_drop_reason rc = roce_parse(f, sizeof(cx4_cnp), &p, NULL);
	CHECK(rc == UROCE_DROP_NONE, "ConnectX CNP: %s", uroce_drop_reason_name(rc));
	if (rc == UROCE_DROP_NONE) {
		CHECK(p.opcode == ROCE_OP_CNP && p.becn && !p.fecn && p.dqpn == 0x118 && p.psn == 0 &&
		      p.pkey == 0xffff && p.payload_len == 0 && p.tos == 0xc2 && p.ip_id == 0x718c &&
		      p.dont_fragment && p.sport == 0,
		      "CNP fields");
		int len = roce_build(buf, sizeof(buf), &p);
		CHECK(len == (int)sizeof(cx4_cnp) && !memcmp(buf, cx4_cnp, sizeof(cx4_cnp)),
		      "rebuilt CNP differs from the ConnectX capture");
	}

	/* The same CNP from fields written by hand, as the transport would. */
	memset(&p, 0, sizeof(p));
	memcpy(p.dmac, cx4_cnp, 6);
	memcpy(p.smac, cx4_cnp + 6, 6);
	roce_ipv4_mapped(p.sip, htobe32(0x0a001101));
	roce_ipv4_mapped(p.dip, htobe32(0x0a001201));
	p.tos = 0xc2;
	p.ttl = 64;
	p.ip_id = 0x718c;
	p.dont_fragment = true;
	p.opcode = ROCE_OP_CNP;
	p.pkey = ROCE_PKEY_DEFAULT;
	p.becn = true;
	p.dqpn = 0x118;
	int len = roce_build(buf, sizeof(buf), &p);
	CHECK(len == (int)sizeof(cx4_cnp) && !memcmp(buf, cx4_cnp, sizeof(cx4_cnp)),
	      "hand-filled CNP differs from the ConnectX capture");
	free(f);
}

int main(void)
{
	test_table();
	test_roundtrip();
	test_build_errors();
	test_options_and_edges();
	test_cnp_bytes();
	return test_done("test_wire_roundtrip");
}
