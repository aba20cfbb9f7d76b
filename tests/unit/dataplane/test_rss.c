/* SPDX-License-Identifier: MIT */
/* Toeplitz RSS against the published verification vectors of Microsoft's
 * RSS specification (IPv4, and IPv4 with TCP/UDP ports), and the queue
 * choice through an indirection table. */
#include <arpa/inet.h>
#include <string.h>

#include "dataplane/rss.h"
#include "dp_test.h"

static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static const struct {
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t ip_hash, l4_hash;
} vec[] = {
	{ "66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178 },
	{ "199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea },
	{ "24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
	{ "38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f },
	{ "153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2 },
};

int main(void)
{
	struct nic_rss r;

	for (unsigned i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		uint8_t in[12];
		uint32_t s, d, h;

		inet_pton(AF_INET, vec[i].src, &s);
		inet_pton(AF_INET, vec[i].dst, &d);
		memcpy(in, &s, 4);
		memcpy(in + 4, &d, 4);
		in[8] = (uint8_t)(vec[i].sport >> 8);
		in[9] = (uint8_t)vec[i].sport;
		in[10] = (uint8_t)(vec[i].dport >> 8);
		in[11] = (uint8_t)vec[i].dport;
		h = rss_toeplitz(ms_key, sizeof(ms_key), in, 8);
		CHECK(h == vec[i].ip_hash, "vector %u, addresses only: 0x%08x, want 0x%08x", i, h, vec[i].ip_hash);
		h = rss_toeplitz(ms_key, sizeof(ms_key), in, 12);
		CHECK(h == vec[i].l4_hash, "vector %u, with ports: 0x%08x, want 0x%08x", i, h, vec[i].l4_hash);

		/* the queue: the table entry at hash mod its size */
		memset(&r, 0, sizeof(r));
		memcpy(r.key, ms_key, sizeof(ms_key));
		r.key_len = sizeof(ms_key);
		r.indir_n = 128;
		for (uint32_t k = 0; k < r.indir_n; k++)
			r.indir[k] = k % 3;
		r.udp4_ports = true;
		CHECK(rss_queue_udp4(&r, s, d, vec[i].sport, vec[i].dport) == (vec[i].l4_hash % 128) % 3,
		      "vector %u: queue by the table", i);
		r.udp4_ports = false;
		CHECK(rss_queue_udp4(&r, s, d, vec[i].sport, vec[i].dport) == (vec[i].ip_hash % 128) % 3,
		      "vector %u: queue by addresses only", i);
	}
	/* a key too short for the input hashes nothing */
	CHECK(rss_toeplitz(ms_key, 15, (const uint8_t[12]){ 1 }, 12) == 0, "short key");
	return test_done("rss");
}
