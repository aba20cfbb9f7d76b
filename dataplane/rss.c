/* SPDX-License-Identifier: MIT */
/* Toeplitz RSS (Microsoft's RSS specification; Linux's default for most
 * NICs and virtio_net's only hash). */
#include <string.h>

#include "dataplane/rss.h"

uint32_t rss_toeplitz(const uint8_t *key, uint32_t key_len, const uint8_t *in, uint32_t n)
{
	uint32_t hash = 0, window;
	uint32_t next = 4; /* key byte that enters the window next */

	if (key_len < n + 4)
		return 0;
	/* the 32 key bits aligned with each input bit, sliding one bit at a time */
	window = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 | key[3];
	for (uint32_t i = 0; i < n; i++) {
		uint8_t kb = key[next++];

		for (int b = 7; b >= 0; b--) {
			if (in[i] & (1u << b))
				hash ^= window;
			window = window << 1 | ((kb >> b) & 1u);
		}
	}
	return hash;
}

uint32_t rss_queue_udp4(const struct nic_rss *r, uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t dport)
{
	uint8_t in[12];
	uint32_t n = r->udp4_ports ? 12 : 8;

	memcpy(in, &saddr_be, 4);
	memcpy(in + 4, &daddr_be, 4);
	in[8] = (uint8_t)(sport >> 8);
	in[9] = (uint8_t)sport;
	in[10] = (uint8_t)(dport >> 8);
	in[11] = (uint8_t)dport;
	if (!r->indir_n)
		return 0;
	return r->indir[rss_toeplitz(r->key, r->key_len, in, n) % r->indir_n];
}
