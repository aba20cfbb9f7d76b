/* SPDX-License-Identifier: MIT */
/* pcap files: what the writer writes the reader reads back (frames,
 * lengths, timestamps); files in the other byte order and with microsecond
 * stamps read the same; damaged or foreign files fail with a message. */
#include <errno.h>
#include <unistd.h>

#include "dataplane/pcap_file.h"
#include "wire_test.h"

static char dir[] = "/tmp/uroce-pcap-test-XXXXXX";

static const char *path_of(const char *name)
{
	static char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(99);
	}
}

static void test_roundtrip(bool nsec)
{
	struct rng r = { 0x9ca90001 };
	struct pcap_writer w;
	struct pcap_reader rd;
	struct pcap_record rec;
	char err[256];
	static uint8_t frames[20][1600];
	uint32_t lens[20];
	uint64_t ts[20];
	const char *p = path_of(nsec ? "ns.pcap" : "us.pcap");

	CHECK(pcap_writer_open(&w, p, nsec, err, sizeof(err)) == 0, "open for write: %s", err);
	for (int i = 0; i < 20; i++) {
		lens[i] = i == 0 ? 0 : rng_below(&r, 1600);
		rng_fill(&r, frames[i], lens[i]);
		ts[i] = 1700000000ull * 1000000000ull + (uint64_t)i * 1234567;
		CHECK(pcap_writer_write(&w, ts[i], frames[i], lens[i]) == 0, "write %d", i);
	}
	CHECK(pcap_writer_close(&w) == 0, "close");

	CHECK(pcap_reader_open(&rd, p, err, sizeof(err)) == 0, "open: %s", err);
	CHECK(rd.nsec == nsec && !rd.swapped, "header flags");
	for (int i = 0; i < 20; i++) {
		int rc = pcap_reader_next(&rd, &rec, err, sizeof(err));
		CHECK(rc == 1, "record %d: %d %s", i, rc, err);
		if (rc != 1)
			break;
		CHECK(rec.caplen == lens[i] && rec.origlen == lens[i], "record %d length", i);
		CHECK(!lens[i] || !memcmp(rec.data, frames[i], lens[i]), "record %d bytes", i); /* an empty record has no data pointer */
		/* microsecond files keep microseconds */
		uint64_t want = nsec ? ts[i] : ts[i] / 1000 * 1000;
		CHECK(rec.ts_ns == want, "record %d time %llu, want %llu", i,
		      (unsigned long long)rec.ts_ns, (unsigned long long)want);
	}
	CHECK(pcap_reader_next(&rd, &rec, err, sizeof(err)) == 0, "end of file");
	CHECK(pcap_reader_next(&rd, &rec, err, sizeof(err)) == 0, "still end of file");
	pcap_reader_close(&rd);
}

/* A file as a big-endian machine writes it, built by hand. */
static void test_swapped(void)
{
	uint8_t b[24 + 16 + 5 + 16 + 3];
	uint8_t *q = b;
	struct pcap_reader rd;
	struct pcap_record rec;
	char err[256];

	for (int nsec = 0; nsec < 2; nsec++) {
		q = b;
		roce_put_be32(q, nsec ? PCAP_MAGIC_NSEC : PCAP_MAGIC_USEC);
		roce_put_be16(q + 4, 2);
		roce_put_be16(q + 6, 4);
		memset(q + 8, 0, 8);
		roce_put_be32(q + 16, 65535);
		roce_put_be32(q + 20, 1);
		q += 24;
		roce_put_be32(q, 10);      /* seconds */
		roce_put_be32(q + 4, 20);  /* fraction */
		roce_put_be32(q + 8, 5);
		roce_put_be32(q + 12, 9);  /* cut from 9 to 5 by a snaplen */
		memcpy(q + 16, "hello", 5);
		q += 21;
		roce_put_be32(q, 11);
		roce_put_be32(q + 4, 0);
		roce_put_be32(q + 8, 3);
		roce_put_be32(q + 12, 3);
		memcpy(q + 16, "abc", 3);
		write_bytes(path_of("be.pcap"), b, sizeof(b));

		CHECK(pcap_reader_open(&rd, path_of("be.pcap"), err, sizeof(err)) == 0, "open: %s", err);
		CHECK(rd.swapped && rd.nsec == nsec, "big-endian header not recognised");
		CHECK(pcap_reader_next(&rd, &rec, err, sizeof(err)) == 1 && rec.caplen == 5 &&
		      rec.origlen == 9 && !memcmp(rec.data, "hello", 5) &&
		      rec.ts_ns == 10000000000ull + 20 * (nsec ? 1 : 1000), "first record");
		CHECK(pcap_reader_next(&rd, &rec, err, sizeof(err)) == 1 && rec.caplen == 3 &&
		      !memcmp(rec.data, "abc", 3) && rec.ts_ns == 11000000000ull, "second record");
		CHECK(pcap_reader_next(&rd, &rec, err, sizeof(err)) == 0, "end");
		pcap_reader_close(&rd);
	}
}

static void expect_open_error(const void *b, size_t n, const char *needle)
{
	struct pcap_reader rd;
	char err[256] = "";

	write_bytes(path_of("bad.pcap"), b, n);
	int rc = pcap_reader_open(&rd, path_of("bad.pcap"), err, sizeof(err));
	CHECK(rc < 0 && strstr(err, needle), "open: rc %d, message '%s', wanted '%s'", rc, err, needle);
	if (rc == 0)
		pcap_reader_close(&rd);
}

static void expect_next_error(const void *b, size_t n, const char *needle)
{
	struct pcap_reader rd;
	struct pcap_record rec;
	char err[256] = "";
	int rc;

	write_bytes(path_of("bad.pcap"), b, n);
	CHECK(pcap_reader_open(&rd, path_of("bad.pcap"), err, sizeof(err)) == 0, "open: %s", err);
	while ((rc = pcap_reader_next(&rd, &rec, err, sizeof(err))) == 1)
		;
	CHECK(rc < 0 && strstr(err, needle), "next: rc %d, message '%s', wanted '%s'", rc, err, needle);
	pcap_reader_close(&rd);
}

static void test_errors(void)
{
	uint8_t h[24 + 16 + 8];
	struct pcap_reader rd;
	char err[256];

	CHECK(pcap_reader_open(&rd, path_of("missing.pcap"), err, sizeof(err)) == -ENOENT &&
	      strstr(err, "cannot open"), "missing file: %s", err);
	expect_open_error("", 0, "not a pcap file");
	expect_open_error("GIF89a-and-more-bytes-here-to-fill", 30, "not a pcap file (magic");
	static const uint8_t ng[28] = { 0x0a, 0x0d, 0x0d, 0x0a };
	expect_open_error(ng, sizeof(ng), "pcapng is not supported");

	/* a valid header to edit */
	uint32_t v = PCAP_MAGIC_USEC;
	memcpy(h, &v, 4);
	uint16_t s = 2;
	memcpy(h + 4, &s, 2);
	s = 4;
	memcpy(h + 6, &s, 2);
	memset(h + 8, 0, 8);
	v = 65535;
	memcpy(h + 16, &v, 4);
	v = 1;
	memcpy(h + 20, &v, 4);
	expect_open_error(h, 10, "cut short");

	v = 113; /* Linux cooked capture */
	memcpy(h + 20, &v, 4);
	expect_open_error(h, 24, "link type 113 not supported");
	v = 1 | 0x10000000u; /* FCS length bits in the upper half are fine */
	memcpy(h + 20, &v, 4);
	CHECK(pcap_reader_open(&rd, (write_bytes(path_of("fcs.pcap"), h, 24), path_of("fcs.pcap")),
	                       err, sizeof(err)) == 0, "FCS bits in link type: %s", err);
	pcap_reader_close(&rd);
	v = 1;
	memcpy(h + 20, &v, 4);
	s = 3;
	memcpy(h + 4, &s, 2);
	expect_open_error(h, 24, "version 3.4 not supported");
	s = 2;
	memcpy(h + 4, &s, 2);

	/* records: header cut, data cut, absurd length */
	uint32_t rec[4] = { 1, 2, 8, 8 };
	memcpy(h + 24, rec, 16);
	memcpy(h + 40, "12345678", 8);
	expect_next_error(h, 24 + 10, "header cut short");
	expect_next_error(h, 24 + 16 + 3, "data cut short");
	rec[2] = PCAP_SNAPLEN_MAX + 1;
	memcpy(h + 24, rec, 16);
	expect_next_error(h, sizeof(h), "claims");

	/* writer: a directory that does not exist */
	struct pcap_writer w;
	CHECK(pcap_writer_open(&w, "/nonexistent-dir/x.pcap", true, err, sizeof(err)) < 0 &&
	      strstr(err, "cannot create"), "writer error: %s", err);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	test_roundtrip(true);
	test_roundtrip(false);
	test_swapped();
	test_errors();
	static const char *const names[] = { "ns.pcap", "us.pcap", "be.pcap", "bad.pcap", "fcs.pcap" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path_of(names[i]));
	rmdir(dir);
	return test_done("test_pcap_file");
}
