/* SPDX-License-Identifier: MIT */
/* Malformed frames: every truncation and every single-byte corruption of
 * frames of every opcode is rejected with the reason that names it (or
 * accepted where the byte is genuinely not covered), without reading past
 * the frame; plus hand-made frames for each drop reason. */
#include "wire_test.h"

#define R(x) (1u << UROCE_DROP_##x)
#define ACCEPT R(NONE)

struct layout {
	uint32_t l3, l4, bth, len;
	bool ipv6, vlan;
	const struct roce_opcode_info *info;
};

static struct uroce_port_stats got_stats, want_stats;
static unsigned reported;

/* Outcome of the BTH checks for an opcode byte and flags byte, all else
 * intact: mirrors the rules, not the code (IBTA 9.2: pad aligns payload
 * to 4 bytes; opcodes without payload have no pad). */
static uint32_t expect_bth(const struct layout *L, uint8_t op, uint8_t b1)
{
	const struct roce_opcode_info *info = roce_opcode_info(op);
	uint32_t span = L->len - L->bth - ICRC_LEN, pad = (b1 >> 4) & 3u;

	if (b1 & 0x0f)
		return R(BAD_BTH);
	if (!info)
		return R(UNKNOWN_OPCODE);
	if (span < info->hdr_len)
		return R(SHORT_FRAME);
	uint32_t rem = span - info->hdr_len;
	if (!(info->mask & ROCE_PAYLOAD))
		return rem || pad ? R(BAD_PAD) : R(BAD_ICRC);
	if (pad > rem || rem % 4)
		return R(BAD_PAD);
	return R(BAD_ICRC);
}

/* What flipping byte i of a valid frame must give; f is the flipped frame
 * (with the IPv4 checksum recomputed when csum_fixed). */
static uint32_t expect_flip(const struct layout *L, const uint8_t *f, uint32_t i, uint8_t pat,
                            bool csum_fixed)
{
	if (i < 12)
		return ACCEPT; /* MAC addresses */
	if (L->vlan && i < 14)
		return R(NOT_IP); /* TPID: no longer 802.1Q, and not IP */
	if (L->vlan && i < 16)
		return ACCEPT; /* PCP/DEI/VID */
	if (i < L->l3)
		return R(NOT_IP); /* EtherType */
	if (i < L->l4) {
		uint32_t o = i - L->l3;
		const uint8_t *ip = f + L->l3;
		if (!L->ipv6) {
			if (o == 0)
				return R(BAD_IP_HEADER);
			if (!csum_fixed)
				return R(BAD_IP_CSUM);
			switch (o) {
			case 1:
			case 8:
				return ACCEPT; /* TOS, TTL: masked, and the checksum was redone */
			case 2:
			case 3: {
				uint32_t tot = roce_get_be16(ip + 2);
				if (tot < 20 || tot > L->len - L->l3)
					return R(BAD_LENGTH);
				return tot < 28 ? R(SHORT_FRAME) : R(BAD_LENGTH);
			}
			case 6:
				return (pat & ~0x40u) ? R(BAD_IP_HEADER) : R(BAD_ICRC); /* DF is covered */
			case 7:
				return R(BAD_IP_HEADER);
			case 9:
				return R(NOT_UDP);
			default:
				return R(BAD_ICRC); /* identification, addresses */
			}
		}
		if (o == 0)
			return (pat & 0xf0) ? R(BAD_IP_HEADER) : ACCEPT;
		if (o <= 3 || o == 7)
			return ACCEPT; /* traffic class, flow label, hop limit */
		if (o == 4 || o == 5) {
			uint32_t plen = roce_get_be16(ip + 4);
			if (plen > L->len - L->l3 - 40)
				return R(BAD_LENGTH);
			return plen < 8 ? R(SHORT_FRAME) : R(BAD_LENGTH);
		}
		if (o == 6)
			return R(NOT_UDP);
		return R(BAD_ICRC);
	}
	if (i < L->bth) {
		uint32_t o = i - L->l4;
		if (o < 2)
			return R(BAD_ICRC); /* source port */
		if (o < 4)
			return R(WRONG_PORT);
		if (o < 6)
			return R(BAD_LENGTH);
		return ACCEPT; /* UDP checksum: masked and not checked */
	}
	if (i < L->bth + BTH_LEN) {
		uint32_t o = i - L->bth;
		if (o == 0 || o == 1)
			return expect_bth(L, f[L->bth], f[L->bth + 1]);
		if (o == 4)
			return ACCEPT; /* FECN, BECN, resv6a: masked */
		return R(BAD_ICRC);
	}
	return R(BAD_ICRC); /* extension headers, payload, pad, the ICRC itself */
}

static void run_case(const uint8_t *f, uint32_t len, uint32_t allowed, const char *what,
                     uint32_t at, uint8_t pat)
{
	uint8_t *copy = exact_copy(f, len);
	struct roce_pkt p;
	enum uroce_drop_reason rc = roce_parse(copy, len, &p, NULL);

	got_stats.drops[rc]++;
	if (__builtin_popcount(allowed) == 1)
		want_stats.drops[__builtin_ctz(allowed)]++;
	else
		want_stats.drops[rc]++; /* several reasons allowed: the check below decides */
	if (!(allowed & (1u << rc))) {
		test_failures++;
		if (reported++ < TEST_MAX_REPORTED)
			fprintf(stderr, "%s: byte %u ^0x%02x: got %s, allowed mask 0x%x\n", what, at, pat,
			        uroce_drop_reason_name(rc), allowed);
	}
	free(copy);
}

static void fix_ipv4_csum(uint8_t *ip)
{
	ip[10] = ip[11] = 0;
	roce_put_be16(ip + 10, ipv4_csum(ip, IPV4_HDR_LEN));
}

static const uint8_t patterns[] = { 0xff, 0x01, 0x10, 0x40, 0x80 };

static void torture(const uint8_t *frame, const struct layout *L, const char *what)
{
	uint8_t *f = malloc(L->len);

	/* every truncation: before the IP header is whole the frame is short;
	 * after, the IP length no longer fits */
	for (uint32_t n = 0; n < L->len; n++) {
		uint32_t iphl = L->ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;
		run_case(frame, n, n < L->l3 + iphl ? R(SHORT_FRAME) : R(BAD_LENGTH), what, n, 0);
	}

	/* every byte, several bit patterns */
	for (uint32_t i = 0; i < L->len; i++) {
		for (size_t k = 0; k < sizeof(patterns); k++) {
			memcpy(f, frame, L->len);
			f[i] ^= patterns[k];
			run_case(f, L->len, expect_flip(L, f, i, patterns[k], false), what, i, patterns[k]);

			/* IPv4 again with a correct header checksum, so the
			 * checks behind it are reached */
			if (!L->ipv6 && i > L->l3 && i < L->l4 && i != L->l3 + 10 && i != L->l3 + 11) {
				fix_ipv4_csum(f + L->l3);
				run_case(f, L->len, expect_flip(L, f, i, patterns[k], true), what, i,
				         patterns[k]);
			}
		}
	}
	free(f);
}

static void test_every_byte(void)
{
	struct rng r = { 0xbad0001 };
	uint8_t payload[8], buf[256], ops[256];
	unsigned nops = all_opcodes(ops), frames = 0;
	char what[96];

	for (unsigned o = 0; o < nops; o++) {
		const struct roce_opcode_info *info = roce_opcode_info(ops[o]);
		for (int shape = 0; shape < 4; shape++) {
			for (uint32_t plen = 0; plen <= 5; plen += 5) {
				struct roce_pkt p;
				struct layout L;

				if (plen && !(info->mask & ROCE_PAYLOAD))
					continue;
				random_pkt(&p, &r, ops[o], shape & 1, shape & 2, payload, plen);
				int len = roce_build(buf, sizeof(buf), &p);
				CHECK(len > 0, "build %s", info->name);
				if (len <= 0)
					continue;
				L.ipv6 = p.ipv6;
				L.vlan = p.has_vlan;
				L.l3 = ETH_HDR_LEN + (L.vlan ? VLAN_HDR_LEN : 0);
				L.l4 = L.l3 + (L.ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN);
				L.bth = L.l4 + UDP_HDR_LEN;
				L.len = (uint32_t)len;
				L.info = info;
				snprintf(what, sizeof(what), "%s %s%s payload %u", info->name,
				         L.ipv6 ? "IPv6" : "IPv4", L.vlan ? "+VLAN" : "", plen);
				torture(buf, &L, what);
				frames++;
			}
		}
	}
	printf("malformed: %u frames tortured\n", frames);
	for (int i = 0; i < UROCE_DROP__COUNT; i++) {
		printf("  %-16s %8llu\n", uroce_drop_reason_name(i),
		       (unsigned long long)got_stats.drops[i]);
		CHECK(got_stats.drops[i] == want_stats.drops[i], "%s counted %llu, expected %llu",
		      uroce_drop_reason_name(i), (unsigned long long)got_stats.drops[i],
		      (unsigned long long)want_stats.drops[i]);
	}
	/* every reason the parser can give was reached */
	for (int i = UROCE_DROP_NONE; i <= UROCE_DROP_BAD_ICRC; i++)
		CHECK(got_stats.drops[i] > 0, "reason %s never produced", uroce_drop_reason_name(i));
}

/* Hand-made frames: start from a valid one, edit, then redo the IPv4
 * checksum and the ICRC so that only the intended defect remains. */
struct handmade {
	uint8_t f[256];
	uint32_t len, l3;
	bool ipv6;
};

static void make(struct handmade *h, uint8_t op, bool ipv6, uint32_t plen)
{
	struct rng r = { 0xbad0002 + op };
	uint8_t payload[64];
	struct roce_pkt p;

	random_pkt(&p, &r, op, ipv6, false, payload, plen);
	memset(h->f, 0, sizeof(h->f));
	h->len = (uint32_t)roce_build(h->f, sizeof(h->f), &p);
	h->l3 = ETH_HDR_LEN;
	h->ipv6 = ipv6;
}

/* Set the IP and UDP lengths for a frame of len bytes, then redo the
 * checksum and the ICRC. */
static void refix(struct handmade *h, uint32_t len)
{
	uint8_t *ip = h->f + h->l3;
	uint32_t iphl = h->ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;

	h->len = len;
	if (h->ipv6)
		roce_put_be16(ip + 4, (uint16_t)(len - h->l3 - IPV6_HDR_LEN));
	else
		roce_put_be16(ip + 2, (uint16_t)(len - h->l3));
	roce_put_be16(ip + iphl + 4, (uint16_t)(len - h->l3 - iphl));
	if (!h->ipv6)
		fix_ipv4_csum(ip);
	roce_put_le32(h->f + len - 4, roce_icrc(ip, len - h->l3, h->ipv6));
}

static enum uroce_drop_reason parse_h(const struct handmade *h)
{
	uint8_t *c = exact_copy(h->f, h->len);
	struct roce_pkt p;
	enum uroce_drop_reason rc = roce_parse(c, h->len, &p, NULL);
	free(c);
	return rc;
}

#define EXPECT(h, reason, what)                                                         \
	do {                                                                            \
		enum uroce_drop_reason got_ = parse_h(h);                               \
		CHECK(got_ == UROCE_DROP_##reason, "%s: got %s, expected %s", what,      \
		      uroce_drop_reason_name(got_), uroce_drop_reason_name(UROCE_DROP_##reason)); \
	} while (0)

static void test_handmade(void)
{
	struct handmade h;
	const uint32_t bth = ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN;

	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	EXPECT(&h, NONE, "valid");

	/* not IP: ARP; not UDP: TCP with a good header checksum */
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + 12, 0x0806);
	EXPECT(&h, NOT_IP, "ARP EtherType");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3 + 9] = 6;
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, NOT_UDP, "TCP");
	make(&h, ROCE_OP_SEND_ONLY, true, 8);
	h.f[h.l3 + 6] = 0; /* hop-by-hop options header in front of UDP */
	EXPECT(&h, NOT_UDP, "IPv6 extension header");

	/* IP header rules */
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3] = 0x46; /* options */
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, BAD_IP_HEADER, "IPv4 options");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3] = 0x65; /* version 6 behind an IPv4 EtherType */
	EXPECT(&h, BAD_IP_HEADER, "version mismatch");
	make(&h, ROCE_OP_SEND_ONLY, true, 8);
	h.f[h.l3] = 0x45;
	EXPECT(&h, BAD_IP_HEADER, "IPv4 behind IPv6 EtherType");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3 + 6] |= 0x20; /* more fragments */
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, BAD_IP_HEADER, "fragment");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3 + 7] = 1; /* fragment offset */
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, BAD_IP_HEADER, "fragment offset");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[h.l3 + 11] ^= 1;
	EXPECT(&h, BAD_IP_CSUM, "checksum");

	/* lengths */
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + h.l3 + 2, 19);
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, BAD_LENGTH, "IPv4 total length 19");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + h.l3 + 2, 20);
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, SHORT_FRAME, "IPv4 packet with no room for UDP");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + h.l3 + 2, (uint16_t)(h.len - h.l3 + 1));
	fix_ipv4_csum(h.f + h.l3);
	EXPECT(&h, BAD_LENGTH, "IPv4 total length one past the frame");
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + h.l3 + 20 + 4, (uint16_t)(h.len - h.l3 - 20 - 4));
	EXPECT(&h, BAD_LENGTH, "UDP length shorter than IP's");
	make(&h, ROCE_OP_SEND_ONLY, true, 8);
	roce_put_be16(h.f + h.l3 + 4, 0); /* jumbogram marker, unsupported */
	EXPECT(&h, SHORT_FRAME, "IPv6 payload length 0");
	/* an IP packet that ends inside the BTH */
	make(&h, ROCE_OP_SEND_ONLY, false, 0);
	refix(&h, bth + 8);
	EXPECT(&h, SHORT_FRAME, "ends inside the BTH");
	/* ... or inside an extension header */
	make(&h, ROCE_OP_WRITE_ONLY, false, 0);
	refix(&h, bth + 12 + 8 + 4);
	EXPECT(&h, SHORT_FRAME, "ends inside the RETH");

	/* ports: the XDP program's second port is accepted only when asked */
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	roce_put_be16(h.f + h.l3 + 20 + 2, 4792);
	EXPECT(&h, WRONG_PORT, "dport 4792");

	/* BTH */
	make(&h, ROCE_OP_SEND_ONLY, false, 8);
	h.f[bth + 1] |= 1;
	refix(&h, h.len);
	EXPECT(&h, BAD_BTH, "tver 1");
	static const uint8_t unknown[] = { 0x15, 0x18, 0x1c, 0x1d, 0x2c, 0x40, 0x44, 0x60, 0x64 - 1,
	                                   0x66, 0x80, 0x82, 0xc0, 0xff };
	for (size_t i = 0; i < sizeof(unknown); i++) {
		make(&h, ROCE_OP_SEND_ONLY, false, 8);
		h.f[bth] = unknown[i];
		refix(&h, h.len);
		EXPECT(&h, UNKNOWN_OPCODE, "unknown opcode");
	}

	/* pad: payload on an opcode without, pad beyond the payload, and a
	 * payload that pad does not bring to a multiple of 4 */
	make(&h, ROCE_OP_ACK, false, 0);
	refix(&h, h.len + 4);
	EXPECT(&h, BAD_PAD, "payload on ACK");
	make(&h, ROCE_OP_ACK, false, 0);
	h.f[bth + 1] |= 0x10;
	refix(&h, h.len);
	EXPECT(&h, BAD_PAD, "pad on ACK");
	make(&h, ROCE_OP_CNP, true, 0);
	refix(&h, h.len + 4);
	EXPECT(&h, BAD_PAD, "payload on CNP");
	make(&h, ROCE_OP_SEND_ONLY, false, 0);
	h.f[bth + 1] |= 0x30;
	refix(&h, h.len);
	EXPECT(&h, BAD_PAD, "pad 3 with no payload");
	make(&h, ROCE_OP_SEND_ONLY, false, 4);
	refix(&h, h.len + 1);
	EXPECT(&h, BAD_PAD, "5 bytes with pad 0");
	make(&h, ROCE_OP_SEND_ONLY, false, 5); /* pad 3 */
	EXPECT(&h, NONE, "5 bytes with pad 3");
	h.f[bth + 1] &= (uint8_t)~0x30;
	h.f[bth + 1] |= 0x20;
	refix(&h, h.len);
	EXPECT(&h, NONE, "pad 2 of 8: 6 bytes of payload");

	/* ICRC, and the option that trusts it */
	make(&h, ROCE_OP_SEND_ONLY, true, 8);
	h.f[h.len - 1] ^= 0x80;
	EXPECT(&h, BAD_ICRC, "ICRC");
	struct roce_pkt p;
	const struct roce_parse_opts skip = { .skip_icrc = true };
	uint8_t *c = exact_copy(h.f, h.len);
	CHECK(roce_parse(c, h.len, &p, &skip) == UROCE_DROP_NONE, "skip_icrc still checks ICRC");
	free(c);
}

int main(void)
{
	test_every_byte();
	test_handmade();
	return test_done("test_malformed");
}
