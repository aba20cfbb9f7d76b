/* SPDX-License-Identifier: MIT */
/* IPv6 neighbour discovery (dataplane/nd.c) against the Linux kernel's own
 * frames: an NS and the NA that answered it, captured on a veth (fd99::1
 * at 02:00:00:00:00:0a asking for fd99::2 at 02:00:00:00:00:0b). uroce's
 * NS and its in-place NA must equal them byte for byte; frames that RFC
 * 4861 says to discard are refused; the table learns and forgets. */
#include <string.h>

#include "dataplane/nd.h"
#include "dp_test.h"

static const uint8_t kernel_ns[86] = {
	0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x86, 0xdd, 0x60, 0x00,
	0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfd, 0x99, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0x7c, 0x5c, 0x00, 0x00, 0x00, 0x00, 0xfd, 0x99,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0x01,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x0a,
};

static const uint8_t kernel_na[86] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x86, 0xdd, 0x60, 0x00,
	0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfd, 0x99, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xfd, 0x99, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00, 0x1a, 0xc6, 0x60, 0x00, 0x00, 0x00, 0xfd, 0x99,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x0b,
};

static const uint8_t mac_a[6] = { 2, 0, 0, 0, 0, 0x0a }, mac_b[6] = { 2, 0, 0, 0, 0, 0x0b };
static const uint8_t ip_a[16] = { 0xfd, 0x99, [15] = 1 }, ip_b[16] = { 0xfd, 0x99, [15] = 2 };

static void test_kernel_frames(void)
{
	uint8_t buf[128], frame[128], group[16], gmac[6];
	struct nd_msg m;
	int n;

	nd_solicited_node(ip_b, group, gmac);
	CHECK(!memcmp(gmac, kernel_ns, 6) && !memcmp(group, kernel_ns + 38, 16), "solicited-node group");
	n = nd_build_ns(buf, sizeof(buf), mac_a, ip_a, ip_b);
	CHECK(n == 86 && !memcmp(buf, kernel_ns, 86), "our NS differs from the kernel's");
	n = nd_build_na(buf, sizeof(buf), mac_b, ip_b, mac_a, ip_a, ND_NA_SOLICITED | ND_NA_OVERRIDE);
	CHECK(n == 86 && !memcmp(buf, kernel_na, 86), "our NA differs from the kernel's");
	CHECK(nd_build_ns(buf, 85, mac_a, ip_a, ip_b) < 0, "NS into 85 bytes");

	CHECK(nd_is_nd(kernel_ns, 86) && nd_is_nd(kernel_na, 86), "nd_is_nd");
	CHECK(nd_parse(kernel_ns, 86, &m) == ND_OK && m.type == ND_TYPE_NS && m.has_lladdr &&
	      !memcmp(m.lladdr, mac_a, 6) && !memcmp(m.target, ip_b, 16) && !memcmp(m.src, ip_a, 16), "parse NS");
	CHECK(nd_parse(kernel_na, 86, &m) == ND_OK && m.type == ND_TYPE_NA && m.flags == 0x60 && m.has_lladdr &&
	      !memcmp(m.lladdr, mac_b, 6), "parse NA");

	/* the kernel's NS, answered in place, is the kernel's NA */
	{
		struct nd_table t;
		struct nd_stats st = { 0 };
		uint8_t mac[6];
		uint32_t out = 0;

		nd_table_init(&t);
		memcpy(frame, kernel_ns, 86);
		CHECK(nd_input(&t, &st, mac_b, &ip_b, 1, frame, 86, sizeof(frame), 1, &out) == ND_ACTION_REPLY &&
		      out == 86 && !memcmp(frame, kernel_na, 86), "NS not answered with the kernel's NA");
		CHECK(nd_table_lookup(&t, ip_a, mac) && !memcmp(mac, mac_a, 6), "solicitor not learned");
		CHECK(st.ns_rx == 1 && st.na_tx == 1, "counters");
		/* for someone else: learned from, not answered */
		memcpy(frame, kernel_ns, 86);
		CHECK(nd_input(&t, &st, mac_b, &ip_a, 1, frame, 86, sizeof(frame), 2, &out) == ND_ACTION_CONSUMED &&
		      st.ignored == 1, "an NS for another address answered");
		/* an NA nobody asked for fills nothing: no host on the link can
		 * fill the table or claim an address we never solicited */
		nd_table_init(&t);
		memcpy(frame, kernel_na, 86);
		CHECK(nd_input(&t, &st, mac_a, &ip_a, 1, frame, 86, sizeof(frame), 3, &out) == ND_ACTION_CONSUMED &&
		      !nd_table_lookup(&t, ip_b, mac) && st.na_rx == 0 && st.ignored == 2, "an unsolicited NA was learned");
		/* the answer to our solicitation is learned */
		nd_table_solicit(&t, ip_b, 3);
		CHECK(!nd_table_lookup(&t, ip_b, mac), "an incomplete entry gives a MAC");
		memcpy(frame, kernel_na, 86);
		CHECK(nd_input(&t, &st, mac_a, &ip_a, 1, frame, 86, sizeof(frame), 3, &out) == ND_ACTION_CONSUMED &&
		      nd_table_lookup(&t, ip_b, mac) && !memcmp(mac, mac_b, 6) && st.na_rx == 1, "NA not learned");
		/* no room for the answer: learned, not answered */
		memcpy(frame, kernel_ns, 86);
		CHECK(nd_input(&t, &st, mac_b, &ip_b, 1, frame, 86, 80, 4, &out) == ND_ACTION_CONSUMED, "no room");
	}
}

/* RFC 4861 7.1: what must be discarded. */
static void test_refused(void)
{
	uint8_t f[128];
	struct nd_msg m;

	memcpy(f, kernel_ns, 86);
	f[21] = 64; /* hop limit: forwarded, so not from the link */
	CHECK(nd_parse(f, 86, &m) == ND_INVALID, "hop limit 64 accepted");
	memcpy(f, kernel_ns, 86);
	f[57] ^= 1; /* checksum */
	CHECK(nd_parse(f, 86, &m) == ND_INVALID, "bad checksum accepted");
	memcpy(f, kernel_ns, 86);
	f[55] = 1; /* code */
	CHECK(nd_parse(f, 86, &m) == ND_INVALID, "code 1 accepted");
	memcpy(f, kernel_ns, 86);
	f[79] = 0; /* option of length 0 (checksum made valid again below) */
	f[56] = f[57] = 0;
	{
		uint16_t c = nd_icmp6_csum(f + 22, f + 38, f + 54, 32);

		f[56] = (uint8_t)(c >> 8);
		f[57] = (uint8_t)c;
	}
	CHECK(nd_parse(f, 86, &m) == ND_INVALID, "zero-length option accepted");
	CHECK(nd_parse(kernel_ns, 70, &m) == ND_SHORT, "truncated NS accepted");
	memcpy(f, kernel_ns, 86);
	f[20] = 17;
	CHECK(nd_parse(f, 86, &m) == ND_NOT_ND && !nd_is_nd(f, 86), "UDP taken for ND");
	{
		/* a DAD probe (source ::) with a source link-layer option */
		static const uint8_t zero[16];
		uint8_t b[128];

		CHECK(nd_build_ns(b, sizeof(b), mac_a, zero, ip_b) == 86, "build");
		CHECK(nd_parse(b, 86, &m) == ND_INVALID, "DAD probe with SLLA accepted");
	}
}

static void test_table(void)
{
	struct nd_table t;
	uint8_t ip[16] = { 0xfd }, mac[6] = { 2 }, got[6];

	nd_table_init(&t);
	for (unsigned i = 0; i < ND_NEIGH_MAX + 1; i++) {
		ip[15] = (uint8_t)i;
		mac[5] = (uint8_t)i;
		nd_table_learn(&t, ip, mac, 100 + i);
	}
	ip[15] = 0; /* the oldest made room */
	CHECK(!nd_table_lookup(&t, ip, got), "oldest entry kept in a full table");
	ip[15] = ND_NEIGH_MAX;
	CHECK(nd_table_lookup(&t, ip, got) && got[5] == ND_NEIGH_MAX, "newest entry missing");
	mac[5] = 0xee; /* refresh in place */
	nd_table_learn(&t, ip, mac, 1000);
	CHECK(nd_table_lookup(&t, ip, got) && got[5] == 0xee, "refresh");
}

int main(void)
{
	test_kernel_frames();
	test_refused();
	test_table();
	return test_done("dataplane_nd");
}
