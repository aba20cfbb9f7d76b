/* SPDX-License-Identifier: MIT */
/* Fuzz target for the RoCEv2 parser: any bytes must parse without reading
 * past the frame, and whatever parses must survive a rebuild and re-parse
 * unchanged. Built for libFuzzer with clang; with -DFUZZ_STANDALONE_MAIN
 * it carries its own main() that replays a corpus and a few thousand
 * seeded mutations, so every build exercises it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/wire.h"

/* Larger than any IP packet plus Ethernet and VLAN headers. */
#define FUZZ_MAX_FRAME (65535u + IPV6_HDR_LEN + ETH_HDR_LEN + VLAN_HDR_LEN)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const uint8_t *f, size_t n)
{
	fprintf(stderr, "fuzz_parse: %s (frame of %zu bytes:", what, n);
	for (size_t i = 0; i < n && i < 128; i++)
		fprintf(stderr, " %02x", f[i]);
	fprintf(stderr, ")\n");
	abort();
}

/* Bytes the parser does not keep (reserved fields, the UDP checksum, pad
 * content, the ICRC) are the only ones a rebuild may change. */
static void clear_unkept(uint8_t *f, const struct roce_pkt *p)
{
	const struct roce_opcode_info *info = roce_opcode_info(p->opcode);
	uint8_t *bth = f + p->bth_off;

	f[p->l4_off + 6] = f[p->l4_off + 7] = 0;
	bth[4] &= 0xc0;  /* resv6a */
	bth[8] &= 0x80;  /* resv7 */
	if (info->mask & ROCE_HAS(ROCE_HDR_DETH))
		bth[info->offset[ROCE_HDR_DETH] + 4] = 0;
	if (info->mask & ROCE_RSVD16)
		memset(bth + BTH_LEN, 0, CNP_RSVD_LEN);
	memset(f + p->payload_off + p->payload_len, 0, p->pad + ICRC_LEN);
}

static void check_one(const uint8_t *f, size_t size, const struct roce_parse_opts *o)
{
	static uint8_t rebuilt[FUZZ_MAX_FRAME];
	struct roce_pkt a, b;

	memset(&a, 0, sizeof(a));
	if (roce_parse(f, (uint32_t)size, &a, o) != UROCE_DROP_NONE)
		return;

	const struct roce_opcode_info *info = roce_opcode_info(a.opcode);
	if (!info)
		fail("accepted an opcode without a row", f, size);
	if (a.frame_len > size || a.payload_off + a.payload_len + a.pad + ICRC_LEN != a.frame_len ||
	    a.payload != f + a.payload_off || (a.payload_len && !(info->mask & ROCE_PAYLOAD)))
		fail("descriptor inconsistent with the frame", f, size);

	int len = roce_build(rebuilt, sizeof(rebuilt), &a);
	if (len != (int)a.frame_len)
		fail("rebuild length differs", f, size);

	/* same port, but the rebuilt ICRC must now be right */
	const struct roce_parse_opts strict = { .extra_port = o->extra_port };
	memset(&b, 0, sizeof(b));
	if (roce_parse(rebuilt, (uint32_t)len, &b, &strict) != UROCE_DROP_NONE)
		fail("rebuilt frame does not parse", f, size);
	/* Both descriptors were zeroed first, so absent headers compare too. */
	b.payload = a.payload;
	b.icrc = a.icrc; /* may differ only when the ICRC check was skipped */
	if (memcmp(&a, &b, sizeof(a)) != 0)
		fail("re-parse of the rebuilt frame differs", f, size);

	uint8_t *x = malloc(a.frame_len);
	if (!x)
		abort();
	memcpy(x, f, a.frame_len);
	clear_unkept(x, &a);

	/* The ICRC covers the pad and the reserved fields a rebuild zeroes
	 * (it masks only the UDP checksum and BTH byte 4), so only an original
	 * that had them zero keeps its ICRC through a rebuild. */
	x[a.l4_off + 6] = f[a.l4_off + 6];
	x[a.l4_off + 7] = f[a.l4_off + 7];
	x[a.bth_off + 4] = f[a.bth_off + 4];
	bool icrc_kept = memcmp(x, f, a.frame_len - ICRC_LEN) == 0;
	if (!o->skip_icrc && icrc_kept && roce_get_le32(rebuilt + len - ICRC_LEN) != a.icrc)
		fail("rebuilt ICRC differs from a valid original", f, size);
	clear_unkept(x, &a);
	clear_unkept(rebuilt, &a);
	if (memcmp(x, rebuilt, a.frame_len) != 0)
		fail("rebuilt frame differs in bytes the parser keeps", f, size);
	free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The first byte picks the parser options; an exact-size heap copy of
	 * the rest lets ASan catch any read past the end. */
	if (size < 1 || size > FUZZ_MAX_FRAME)
		return 0;
	struct roce_parse_opts o = {
		.skip_icrc = data[0] & 1,
		.extra_port = (data[0] & 2) ? 4792 : 0,
	};
	size--;
	uint8_t *f = malloc(size ? size : 1);
	if (!f)
		abort();
	memcpy(f, data + 1, size);
	check_one(f, size, &o);
	/* Random bytes almost never carry a valid ICRC; trusting it lets the
	 * fuzzer reach everything behind the check as well. */
	o.skip_icrc = true;
	check_one(f, size, &o);
	free(f);
	return 0;
}

#ifdef FUZZ_STANDALONE_MAIN
#include <dirent.h>
#include <errno.h>

#include "fuzz_rng.h"

/* Mutations per seed frame and pure-random frames: enough to touch every
 * check in a second or two under the sanitizers. */
#define MUTATIONS 6000u
#define RANDOM_FRAMES 1000u

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	return fuzz_rng_next(&rng);
}

static unsigned feed_dir(const char *dir)
{
	static uint8_t buf[FUZZ_MAX_FRAME + 1];
	char path[4096];
	unsigned n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		fprintf(stderr, "fuzz_parse: corpus %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		n++;
	}
	closedir(d);
	return n;
}

/* Valid frames of every opcode and shape to mutate from. */
static unsigned make_seeds(uint8_t (*seeds)[512], uint32_t *lens, unsigned max)
{
	static const uint8_t payload[64] = "uroce fuzz seed payload, 64 bytes long..........................";
	unsigned n = 0;

	for (unsigned op = 0; op < 256 && n < max; op++) {
		const struct roce_opcode_info *info = roce_opcode_info((uint8_t)op);
		if (!info)
			continue;
		for (int shape = 0; shape < 4 && n < max; shape++) {
			struct roce_pkt p;
			memset(&p, 0, sizeof(p));
			p.opcode = (uint8_t)op;
			p.ipv6 = shape & 1;
			p.has_vlan = shape & 2;
			p.vlan_tci = 7;
			p.ttl = 64;
			p.ip_id = (uint16_t)n;
			p.sip[15] = 1;
			p.dip[15] = 2;
			p.sport = 0xc000;
			p.pkey = 0xffff;
			p.dqpn = 0x11;
			p.psn = n;
			if (info->mask & ROCE_PAYLOAD) {
				p.payload = payload;
				p.payload_len = n % 64;
			}
			int len = roce_build(seeds[n] + 1, 511, &p);
			if (len > 0) {
				seeds[n][0] = (uint8_t)n; /* options byte */
				lens[n++] = (uint32_t)len + 1;
			}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t seeds[256][512], buf[1024];
	static uint32_t lens[256];
	unsigned corpus = 0, nseeds;

	for (int i = 1; i < argc; i++)
		corpus += feed_dir(argv[i]);
	nseeds = make_seeds(seeds, lens, 256);

	for (unsigned i = 0; i < MUTATIONS; i++) {
		unsigned s = (unsigned)(next() % nseeds);
		uint32_t len = lens[s];
		memcpy(buf, seeds[s], len);
		unsigned edits = 1 + (unsigned)(next() % 4);
		for (unsigned k = 0; k < edits; k++) {
			uint32_t at = len > 1 ? 1 + (uint32_t)(next() % (len - 1)) : 0;
			switch (next() % 6) {
			case 0: buf[at] ^= (uint8_t)(1u << (next() % 8)); break;
			case 1: buf[at] = (uint8_t)next(); break;
			case 2: len = 1 + (uint32_t)(next() % len); break;        /* truncate */
			case 3:                                                   /* extend */
				while (len < sizeof(buf) && next() % 8)
					buf[len++] = (uint8_t)next();
				break;
			case 4: buf[at] = (uint8_t)(next() % 2 ? 0x00 : 0xff); break;
			case 5: buf[0] = (uint8_t)next(); break;                  /* options */
			}
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	for (unsigned i = 0; i < RANDOM_FRAMES; i++) {
		uint32_t len = (uint32_t)(next() % 200);
		for (uint32_t k = 0; k < len; k++)
			buf[k] = (uint8_t)next();
		LLVMFuzzerTestOneInput(buf, len);
	}
	/* and every seed as is */
	for (unsigned s = 0; s < nseeds; s++)
		LLVMFuzzerTestOneInput(seeds[s], lens[s]);

	printf("fuzz_parse: %u corpus files, %u seeds, %u mutations, %u random frames: no failure\n",
	       corpus, nseeds, MUTATIONS, RANDOM_FRAMES);
	return 0;
}
#endif
