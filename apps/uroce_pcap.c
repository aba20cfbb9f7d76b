/* SPDX-License-Identifier: MIT */
/* uroce-pcap: decode the RoCEv2 packets of a pcap file, one line (or one
 * JSON object) each, and check every ICRC. Exit 0 when all are good, 1 when
 * any is malformed or has a bad ICRC, 2 on usage or file errors. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <uroce/uroce.h>

#include "dataplane/pcap_file.h"
#include "dataplane/wire.h"
#include "app_version.h"

enum { EXIT_GOOD = 0, EXIT_BAD_PACKETS = 1, EXIT_USAGE = 2 };

struct opts {
	bool json;
	bool quiet;
	uint16_t extra_port;
};

struct counts {
	uint64_t frames;
	uint64_t roce;
	uint64_t good;
	uint64_t bad_icrc;
	uint64_t malformed;
	uint64_t skipped;
};

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: uroce-pcap [--json] [--port N] [--quiet] FILE.pcap\n"
	        "\n"
	        "Prints one line per RoCEv2 packet (UDP destination port 4791) in FILE:\n"
	        "  FRAME OPCODE dqpn=QPN psn=PSN ackreq=0|1 len=PAYLOAD icrc=ok|bad\n"
	        "or, for a packet that fails parsing, FRAME malformed reason=REASON.\n"
	        "Other packets (ARP, TCP, other UDP) are skipped and counted in a\n"
	        "summary line on stderr.\n"
	        "\n"
	        "  --json       one JSON object per packet instead of a line\n"
	        "  --port N     also decode UDP destination port N as RoCEv2\n"
	        "  --quiet      only the summary and the exit status\n"
	        "  --help       this text\n"
	        "  --version    the version\n"
	        "\n"
	        "Exit status: 0 every RoCEv2 packet is well-formed with a good ICRC,\n"
	        "1 some packet is malformed or has a bad ICRC, 2 usage or file error.\n"
	        "FILE is a classic pcap (not pcapng) with Ethernet link type.\n");
}

/*
 * Whether a frame is addressed to RoCEv2 at all, looked at leniently: a
 * broken RoCEv2 packet must be reported, not skipped, even when the parser
 * rejects it before it reads the port (bad IP checksum, bad lengths).
 */
static bool is_roce_candidate(const uint8_t *f, uint32_t len, uint16_t extra_port)
{
	uint32_t l3 = ETH_HDR_LEN, l4;
	uint16_t etype, dport;

	if (len < ETH_HDR_LEN)
		return false;
	etype = roce_get_be16(f + 12);
	if (etype == ROCE_ETHERTYPE_VLAN) {
		if (len < ETH_HDR_LEN + VLAN_HDR_LEN)
			return false;
		etype = roce_get_be16(f + 16);
		l3 += VLAN_HDR_LEN;
	}
	if (etype == ROCE_ETHERTYPE_IPV4) {
		if (len < l3 + IPV4_HDR_LEN || f[l3 + 9] != ROCE_IPPROTO_UDP)
			return false;
		l4 = l3 + (f[l3] & 0x0fu) * 4u;
	} else if (etype == ROCE_ETHERTYPE_IPV6) {
		if (len < l3 + IPV6_HDR_LEN || f[l3 + 6] != ROCE_IPPROTO_UDP)
			return false;
		l4 = l3 + IPV6_HDR_LEN;
	} else {
		return false;
	}
	if (len < l4 + 4)
		return true; /* UDP cut off before its port: report it as broken */
	dport = roce_get_be16(f + l4 + 2);
	return dport == ROCE_UDP_PORT || (extra_port && dport == extra_port);
}

static void ip_text(const struct roce_pkt *p, const uint8_t a[16], char *out, size_t n)
{
	if (p->ipv6)
		inet_ntop(AF_INET6, a, out, (socklen_t)n);
	else
		inet_ntop(AF_INET, a + 12, out, (socklen_t)n);
}

static void print_packet(const struct opts *o, uint64_t frame, const struct roce_pkt *p,
                         const char *name, bool icrc_ok)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	if (!o->json) {
		printf("%" PRIu64 " %s dqpn=0x%06x psn=0x%06x ackreq=%d len=%u icrc=%s\n", frame, name,
		       p->dqpn, p->psn, p->ackreq, p->payload_len, icrc_ok ? "ok" : "bad");
		return;
	}
	ip_text(p, p->sip, src, sizeof(src));
	ip_text(p, p->dip, dst, sizeof(dst));
	printf("{\"frame\":%" PRIu64 ",\"opcode\":\"%s\",\"opcode_num\":%u,\"src\":\"%s\","
	       "\"dst\":\"%s\",\"sport\":%u,\"dqpn\":%u,\"psn\":%u,\"ackreq\":%s,\"se\":%s,"
	       "\"pkey\":%u,\"fecn\":%s,\"becn\":%s,\"pad\":%u,\"payload_len\":%u,"
	       "\"icrc\":\"%s\"}\n",
	       frame, name, p->opcode, src, dst, p->sport, p->dqpn, p->psn,
	       p->ackreq ? "true" : "false", p->se ? "true" : "false", p->pkey,
	       p->fecn ? "true" : "false", p->becn ? "true" : "false", p->pad, p->payload_len,
	       icrc_ok ? "ok" : "bad");
}

static void print_malformed(const struct opts *o, uint64_t frame, enum uroce_drop_reason why,
                            bool cut_by_capture)
{
	const char *reason = uroce_drop_reason_name(why);

	if (o->json)
		printf("{\"frame\":%" PRIu64 ",\"error\":\"%s\",\"truncated_by_capture\":%s}\n", frame,
		       reason, cut_by_capture ? "true" : "false");
	else
		printf("%" PRIu64 " malformed reason=%s%s\n", frame, reason,
		       cut_by_capture ? " (frame truncated by the capture's snaplen)" : "");
}

static void one_frame(const struct opts *o, struct counts *c, const struct pcap_record *rec)
{
	/* Parse without the ICRC check so a bad-ICRC packet is still decoded
	 * and printed; the ICRC is then compared here. */
	const struct roce_parse_opts popts = { .skip_icrc = true, .extra_port = o->extra_port };
	struct roce_pkt p;
	enum uroce_drop_reason why;
	uint64_t frame = c->frames;

	if (!is_roce_candidate(rec->data, rec->caplen, o->extra_port)) {
		c->skipped++;
		return;
	}
	c->roce++;
	why = roce_parse(rec->data, rec->caplen, &p, &popts);
	if (why != UROCE_DROP_NONE) {
		c->malformed++;
		if (!o->quiet)
			print_malformed(o, frame, why, rec->caplen < rec->origlen);
		return;
	}
	bool ok = roce_icrc(rec->data + p.l3_off, p.frame_len - p.l3_off, p.ipv6) == p.icrc;
	if (ok)
		c->good++;
	else
		c->bad_icrc++;
	if (!o->quiet)
		print_packet(o, frame, &p, roce_opcode_info(p.opcode)->name, ok);
}

static int parse_port(const char *s, uint16_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v == 0 || v > 65535 || *s == '-' || *s == '+')
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "port", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0 };
	struct counts c = { 0 };
	struct pcap_reader r;
	struct pcap_record rec;
	char err[512];
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jp:qh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			o.json = true;
			break;
		case 'p':
			if (parse_port(optarg, &o.extra_port)) {
				fprintf(stderr, "uroce-pcap: --port '%s': not a UDP port; accepted: 1-65535\n",
				        optarg);
				return EXIT_USAGE;
			}
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_GOOD;
		case 'V':
			app_print_version("uroce-pcap");
			return EXIT_GOOD;
		default:
			fprintf(stderr, "uroce-pcap: try --help\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "uroce-pcap: %s; expected exactly one pcap file (try --help)\n",
		        argc == optind ? "no input file" : "too many arguments");
		return EXIT_USAGE;
	}

	if (pcap_reader_open(&r, argv[optind], err, sizeof(err)) < 0) {
		fprintf(stderr, "uroce-pcap: %s\n", err);
		return EXIT_USAGE;
	}
	while ((rc = pcap_reader_next(&r, &rec, err, sizeof(err))) > 0) {
		c.frames++;
		one_frame(&o, &c, &rec);
	}
	pcap_reader_close(&r);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "uroce-pcap: writing output: %s\n", strerror(errno));
		return EXIT_USAGE;
	}

	fprintf(stderr,
	        "uroce-pcap: %" PRIu64 " frames: %" PRIu64 " RoCEv2 (%" PRIu64 " good, %" PRIu64
	        " bad ICRC, %" PRIu64 " malformed), %" PRIu64 " skipped (not RoCEv2)\n",
	        c.frames, c.roce, c.good, c.bad_icrc, c.malformed, c.skipped);
	if (rc < 0) {
		fprintf(stderr, "uroce-pcap: %s\n", err);
		return EXIT_USAGE;
	}
	return c.bad_icrc || c.malformed ? EXIT_BAD_PACKETS : EXIT_GOOD;
}
