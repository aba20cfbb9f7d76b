/* SPDX-License-Identifier: MIT */
/* Writes a pcap of uroce-built RoCEv2 packets covering every opcode over
 * IPv4 and IPv6, with and without 802.1Q, and a manifest line per RoCEv2
 * packet (frame, opcode, dqpn, psn, payload length) for the decoder tests.
 * Options add non-RoCE frames (ARP, TCP, other UDP) and broken RoCE ones. */
#include <getopt.h>

#include "dataplane/pcap_file.h"
#include "wire_test.h"

struct gen {
	struct pcap_writer w;
	FILE *manifest;
	uint64_t ts_ns;
	uint32_t frame;
};

static void emit(struct gen *g, const uint8_t *f, uint32_t len)
{
	if (pcap_writer_write(&g->w, g->ts_ns, f, len) < 0) {
		perror("gen_roce_pcap: write");
		exit(2);
	}
	g->ts_ns += 1000; /* 1 us apart */
	g->frame++;
}

static void emit_roce(struct gen *g, const struct roce_pkt *p, const char *tag)
{
	uint8_t buf[2048];
	int len = roce_build(buf, sizeof(buf), p);

	if (len < 0) {
		fprintf(stderr, "gen_roce_pcap: build of opcode 0x%02x failed: %d\n", p->opcode, len);
		exit(2);
	}
	emit(g, buf, (uint32_t)len);
	if (g->manifest)
		fprintf(g->manifest, "%u %u %u %u %u %s\n", g->frame, p->opcode, p->dqpn, p->psn,
		        p->payload_len, tag);
}

/* A plain, recognisable packet: fields chosen so a decoder's output is
 * easy to match by eye as well as by the test. */
static void base_pkt(struct roce_pkt *p, uint8_t op, bool ipv6, bool vlan, uint32_t n)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dmac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(p->smac, "\x02\x00\x00\x00\x00\x01", 6);
	p->has_vlan = vlan;
	p->vlan_tci = vlan ? 100 : 0;
	p->ipv6 = ipv6;
	if (ipv6) {
		memcpy(p->sip, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16);
		memcpy(p->dip, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02", 16);
		p->flow_label = 0x12345;
	} else {
		roce_ipv4_mapped(p->sip, htobe32(0x0a2f0001));
		roce_ipv4_mapped(p->dip, htobe32(0x0a2f0002));
		p->ip_id = (uint16_t)n;
		p->dont_fragment = true;
	}
	p->tos = 0x02; /* ECT(0) */
	p->ttl = 64;
	p->sport = (uint16_t)(0xc000 + n);
	p->dport = ROCE_UDP_PORT;
	p->opcode = op;
	p->pkey = ROCE_PKEY_DEFAULT;
	p->dqpn = 0x000100 + n;
	p->psn = (0xfff000 + n * 7) & ROCE_PSN_MASK;
	p->ackreq = (n & 1) != 0;
	p->reth.va = 0x00007f0000001000ull + n;
	p->reth.rkey = 0x1234;
	p->reth.dma_len = 64;
	p->aeth.syndrome = AETH_ACK_UNLIMITED;
	p->aeth.msn = n;
	p->imm = 0xdeadbeef;
	p->deth.qkey = 0x11111111;
	p->deth.src_qp = 0x000200 + n;
	p->ieth_rkey = 0x4321;
	p->atomic.va = 0x00007f0000002000ull;
	p->atomic.rkey = 0x5678;
	p->atomic.swap_add = 1;
	p->atomic.compare = 2;
	p->atomic_ack = 3;
	if (op == ROCE_OP_CNP) {
		/* A17.9.3: PSN and AckReq reserved, BECN set */
		p->becn = true;
		p->psn = 0;
		p->ackreq = false;
	}
}

static void emit_other(struct gen *g)
{
	uint8_t f[128];

	/* ARP request */
	memset(f, 0, 60);
	memset(f, 0xff, 6);
	memcpy(f + 6, "\x02\x00\x00\x00\x00\x01", 6);
	roce_put_be16(f + 12, 0x0806);
	memcpy(f + 14, "\x00\x01\x08\x00\x06\x04\x00\x01", 8);
	emit(g, f, 60);

	/* TCP SYN over IPv4 */
	memset(f, 0, 60);
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
	uint8_t *ip = f + 14;
	ip[0] = 0x45;
	roce_put_be16(ip + 2, 40);
	ip[8] = 64;
	ip[9] = 6;
	roce_put_be32(ip + 12, 0x0a2f0001);
	roce_put_be32(ip + 16, 0x0a2f0002);
	roce_put_be16(ip + 10, ipv4_csum(ip, 20));
	roce_put_be16(ip + 20, 40000);
	roce_put_be16(ip + 22, ROCE_UDP_PORT); /* TCP to 4791 is still not RoCE */
	ip[32] = 0x50;
	ip[33] = 0x02;
	emit(g, f, 60);

	/* UDP to another port: a RoCE-looking payload that is not RoCE */
	struct roce_pkt p;
	uint8_t buf[256];
	base_pkt(&p, ROCE_OP_SEND_ONLY, false, false, 99);
	p.dport = 53;
	int len = roce_build(buf, sizeof(buf), &p);
	emit(g, buf, (uint32_t)len);
}

static void emit_bad(struct gen *g)
{
	struct roce_pkt p;
	uint8_t buf[256];
	int len;

	/* a bad ICRC: decodable, reported as icrc=bad */
	base_pkt(&p, ROCE_OP_SEND_ONLY, false, false, 200);
	p.payload = (const uint8_t *)"corrupted in flight";
	p.payload_len = 19;
	len = roce_build(buf, sizeof(buf), &p);
	buf[len - 10] ^= 0x01;
	emit(g, buf, (uint32_t)len);
	if (g->manifest)
		fprintf(g->manifest, "%u %u %u %u %u bad_icrc\n", g->frame, p.opcode, p.dqpn, p.psn,
		        p.payload_len);

	/* an IP total length past the frame: malformed, bad_length */
	base_pkt(&p, ROCE_OP_ACK, false, false, 201);
	len = roce_build(buf, sizeof(buf), &p);
	roce_put_be16(buf + 14 + 2, (uint16_t)(len - 14 + 8));
	buf[14 + 10] = buf[14 + 11] = 0;
	roce_put_be16(buf + 14 + 10, ipv4_csum(buf + 14, 20));
	emit(g, buf, (uint32_t)len);
	if (g->manifest)
		fprintf(g->manifest, "%u - - - - bad_length\n", g->frame);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "other", no_argument, NULL, 'o' },
		{ "bad", no_argument, NULL, 'b' },
		{ "manifest", required_argument, NULL, 'm' },
		{ "usec", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	struct gen g = { .ts_ns = 1700000000ull * 1000000000ull };
	bool other = false, bad = false, nsec = true;
	const char *manifest = NULL;
	char err[256];
	int ch;

	while ((ch = getopt_long(argc, argv, "obm:u", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': other = true; break;
		case 'b': bad = true; break;
		case 'm': manifest = optarg; break;
		case 'u': nsec = false; break;
		default:
			fprintf(stderr, "usage: gen_roce_pcap [--other] [--bad] [--usec] [--manifest FILE] OUT.pcap\n");
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "usage: gen_roce_pcap [--other] [--bad] [--usec] [--manifest FILE] OUT.pcap\n");
		return 2;
	}
	if (pcap_writer_open(&g.w, argv[optind], nsec, err, sizeof(err)) < 0) {
		fprintf(stderr, "gen_roce_pcap: %s\n", err);
		return 2;
	}
	if (manifest && !(g.manifest = fopen(manifest, "w"))) {
		perror(manifest);
		return 2;
	}

	uint8_t ops[256], payload[64];
	unsigned nops = all_opcodes(ops), n = 0;
	for (uint32_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)('a' + i % 26);
	if (other)
		emit_other(&g);
	for (int shape = 0; shape < 4; shape++) {
		for (unsigned i = 0; i < nops; i++) {
			const struct roce_opcode_info *info = roce_opcode_info(ops[i]);
			struct roce_pkt p;
			base_pkt(&p, ops[i], shape & 1, shape & 2, n++);
			if (info->mask & ROCE_PAYLOAD) {
				p.payload = payload;
				p.payload_len = 1 + n % 33; /* every pad count occurs */
			}
			emit_roce(&g, &p, "ok");
		}
	}
	if (other)
		emit_other(&g);
	if (bad)
		emit_bad(&g);
	if (g.manifest && fclose(g.manifest) != 0) {
		perror(manifest);
		return 2;
	}
	if (pcap_writer_close(&g.w) < 0) {
		perror(argv[optind]);
		return 2;
	}
	return 0;
}
