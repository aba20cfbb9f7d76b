/* SPDX-License-Identifier: MIT */
/* Classic libpcap capture files (not pcapng), LINKTYPE_ETHERNET only: a
 * reader that takes either byte order and microsecond or nanosecond
 * timestamps, and a writer. Used by uroce-pcap, the tests, and port dumps.
 */
#ifndef UROCE_DATAPLANE_PCAP_FILE_H
#define UROCE_DATAPLANE_PCAP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_LINKTYPE_ETHERNET 1u
/* Largest record accepted on read and default snaplen on write: tcpdump's
 * MAXIMUM_SNAPLEN, far above any Ethernet frame uroce sends. */
#define PCAP_SNAPLEN_MAX 262144u

struct pcap_reader {
	FILE *f;
	char *path;
	bool swapped;      /* file written in the other byte order */
	bool nsec;         /* timestamps' fraction is nanoseconds */
	uint32_t snaplen;
	uint64_t records;  /* records returned so far */
	uint64_t offset;   /* file offset of the next record header */
	uint8_t *buf;      /* holds the current record's bytes */
	uint32_t buf_cap;
};

struct pcap_record {
	uint64_t ts_ns;    /* since the epoch */
	uint32_t caplen;   /* bytes in data */
	uint32_t origlen;  /* length on the wire (> caplen if truncated) */
	const uint8_t *data; /* valid until the next pcap_reader_next/close */
};

/* Open path for reading and check its header. Returns 0, or -errno with a
 * message in err that says what is wrong (not a pcap, pcapng, another link
 * type, unreadable). */
int pcap_reader_open(struct pcap_reader *r, const char *path, char *err, size_t errlen);

/* Next record: 1 and rec filled, 0 at a clean end of file, or -errno with
 * a message in err (a record cut short, a length beyond PCAP_SNAPLEN_MAX). */
int pcap_reader_next(struct pcap_reader *r, struct pcap_record *rec, char *err, size_t errlen);

void pcap_reader_close(struct pcap_reader *r);

struct pcap_writer {
	FILE *f;
	bool nsec;
	uint32_t snaplen;
	uint64_t records;
};

/* Create (truncate) path and write a header in host byte order, with
 * nanosecond timestamps when nsec. Returns 0 or -errno with err filled. */
int pcap_writer_open(struct pcap_writer *w, const char *path, bool nsec, char *err, size_t errlen);

/* Append one frame; bytes past the snaplen are cut and origlen keeps len.
 * Returns 0 or -errno. */
int pcap_writer_write(struct pcap_writer *w, uint64_t ts_ns, const uint8_t *data, uint32_t len);

/* Flush and close. Returns 0 or -errno (a failed final write). */
int pcap_writer_close(struct pcap_writer *w);

#endif /* UROCE_DATAPLANE_PCAP_FILE_H */
