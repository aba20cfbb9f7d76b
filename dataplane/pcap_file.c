/* SPDX-License-Identifier: MIT */
/* Reading and writing classic pcap files (Ethernet link type). The reader
 * tolerates both byte orders and both timestamp resolutions and rejects
 * everything else with a message that says what it found. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/errbuf.h"
#include "dataplane/pcap_file.h"

#define PCAPNG_MAGIC 0x0a0d0d0au
#define PCAP_HDR_LEN 24u
#define PCAP_REC_HDR_LEN 16u


static uint32_t rd32(const uint8_t *b, bool swapped)
{
	uint32_t v;
	memcpy(&v, b, 4);
	return swapped ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const uint8_t *b, bool swapped)
{
	uint16_t v;
	memcpy(&v, b, 2);
	return swapped ? __builtin_bswap16(v) : v;
}

int pcap_reader_open(struct pcap_reader *r, const char *path, char *err, size_t errlen)
{
	uint8_t h[PCAP_HDR_LEN];
	uint32_t magic, linktype;
	size_t n;
	int rc;

	memset(r, 0, sizeof(*r));
	r->f = fopen(path, "rb");
	if (!r->f)
		return errbuf_fail(err, errlen, -errno, "%s: cannot open: %s", path, strerror(errno));
	n = fread(h, 1, sizeof(h), r->f);
	if (n < 4) {
		rc = errbuf_fail(err, errlen, -EINVAL, "%s: not a pcap file (%zu bytes, shorter than a pcap header)",
		          path, n);
		goto err_close;
	}
	memcpy(&magic, h, 4);
	if (magic == PCAP_MAGIC_USEC || magic == PCAP_MAGIC_NSEC) {
		r->swapped = false;
	} else if (__builtin_bswap32(magic) == PCAP_MAGIC_USEC ||
	           __builtin_bswap32(magic) == PCAP_MAGIC_NSEC) {
		r->swapped = true;
		magic = __builtin_bswap32(magic);
	} else if (magic == PCAPNG_MAGIC) {
		rc = errbuf_fail(err, errlen, -EINVAL,
		          "%s: pcapng is not supported; accepted: classic pcap "
		          "(convert with: editcap -F pcap IN OUT)", path);
		goto err_close;
	} else {
		rc = errbuf_fail(err, errlen, -EINVAL,
		          "%s: not a pcap file (magic 0x%08x; accepted: 0xa1b2c3d4 or 0xa1b23c4d, either byte order)",
		          path, magic);
		goto err_close;
	}
	if (n < sizeof(h)) {
		rc = errbuf_fail(err, errlen, -EINVAL, "%s: pcap header cut short (%zu of %u bytes)", path, n,
		          PCAP_HDR_LEN);
		goto err_close;
	}
	r->nsec = magic == PCAP_MAGIC_NSEC;
	if (rd16(h + 4, r->swapped) != 2) {
		rc = errbuf_fail(err, errlen, -EINVAL, "%s: pcap version %u.%u not supported; accepted: 2.x", path,
		          rd16(h + 4, r->swapped), rd16(h + 6, r->swapped));
		goto err_close;
	}
	r->snaplen = rd32(h + 16, r->swapped);
	/* The top bits of the link type field may carry FCS information. */
	linktype = rd32(h + 20, r->swapped) & 0xffffu;
	if (linktype != PCAP_LINKTYPE_ETHERNET) {
		rc = errbuf_fail(err, errlen, -EINVAL, "%s: link type %u not supported; accepted: 1 (Ethernet)", path,
		          linktype);
		goto err_close;
	}
	r->path = strdup(path);
	if (!r->path) {
		rc = errbuf_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
		goto err_close;
	}
	r->offset = PCAP_HDR_LEN;
	return 0;

err_close:
	fclose(r->f);
	r->f = NULL;
	return rc;
}

int pcap_reader_next(struct pcap_reader *r, struct pcap_record *rec, char *err, size_t errlen)
{
	uint8_t h[PCAP_REC_HDR_LEN];
	uint32_t sec, frac, caplen, origlen;
	size_t n;

	if (!r->f)
		return errbuf_fail(err, errlen, -EBADF, "pcap reader is not open");
	n = fread(h, 1, sizeof(h), r->f);
	if (ferror(r->f))
		return errbuf_fail(err, errlen, -EIO, "%s: read error at offset %" PRIu64, r->path, r->offset);
	if (n == 0)
		return 0;
	if (n < sizeof(h))
		return errbuf_fail(err, errlen, -EINVAL, "%s: record %" PRIu64 " header cut short at offset %" PRIu64
		            " (%zu of %u bytes)", r->path, r->records + 1, r->offset, n, PCAP_REC_HDR_LEN);
	sec = rd32(h, r->swapped);
	frac = rd32(h + 4, r->swapped);
	caplen = rd32(h + 8, r->swapped);
	origlen = rd32(h + 12, r->swapped);
	if (caplen > PCAP_SNAPLEN_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "%s: record %" PRIu64 " at offset %" PRIu64
		            " claims %u bytes; accepted: at most %u (corrupt file?)", r->path,
		            r->records + 1, r->offset, caplen, PCAP_SNAPLEN_MAX);
	if (caplen > r->buf_cap) {
		uint8_t *nb = realloc(r->buf, caplen);
		if (!nb)
			return errbuf_fail(err, errlen, -ENOMEM, "%s: out of memory", r->path);
		r->buf = nb;
		r->buf_cap = caplen;
	}
	n = caplen ? fread(r->buf, 1, caplen, r->f) : 0;
	if (n < caplen)
		return errbuf_fail(err, errlen, -EINVAL, "%s: record %" PRIu64 " data cut short at offset %" PRIu64
		            " (%zu of %u bytes)", r->path, r->records + 1, r->offset, n, caplen);

	rec->ts_ns = (uint64_t)sec * 1000000000u + (uint64_t)frac * (r->nsec ? 1u : 1000u);
	rec->caplen = caplen;
	rec->origlen = origlen < caplen ? caplen : origlen;
	rec->data = r->buf;
	r->records++;
	r->offset += PCAP_REC_HDR_LEN + caplen;
	return 1;
}

void pcap_reader_close(struct pcap_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free(r->path);
	memset(r, 0, sizeof(*r));
}

int pcap_writer_open(struct pcap_writer *w, const char *path, bool nsec, char *err, size_t errlen)
{
	uint8_t h[PCAP_HDR_LEN];
	uint32_t v;
	uint16_t s;

	memset(w, 0, sizeof(*w));
	w->nsec = nsec;
	w->snaplen = PCAP_SNAPLEN_MAX;
	w->f = fopen(path, "wb");
	if (!w->f)
		return errbuf_fail(err, errlen, -errno, "%s: cannot create: %s", path, strerror(errno));
	v = nsec ? PCAP_MAGIC_NSEC : PCAP_MAGIC_USEC;
	memcpy(h, &v, 4);
	s = 2;
	memcpy(h + 4, &s, 2);
	s = 4;
	memcpy(h + 6, &s, 2);
	memset(h + 8, 0, 8); /* thiszone, sigfigs */
	v = w->snaplen;
	memcpy(h + 16, &v, 4);
	v = PCAP_LINKTYPE_ETHERNET;
	memcpy(h + 20, &v, 4);
	if (fwrite(h, 1, sizeof(h), w->f) != sizeof(h)) {
		int rc = -errno;
		fclose(w->f);
		w->f = NULL;
		return errbuf_fail(err, errlen, rc ? rc : -EIO, "%s: cannot write the header", path);
	}
	return 0;
}

int pcap_writer_write(struct pcap_writer *w, uint64_t ts_ns, const uint8_t *data, uint32_t len)
{
	uint32_t h[4];
	uint32_t caplen = len < w->snaplen ? len : w->snaplen;

	if (!w->f)
		return -EBADF;
	h[0] = (uint32_t)(ts_ns / 1000000000u);
	h[1] = (uint32_t)(ts_ns % 1000000000u / (w->nsec ? 1u : 1000u));
	h[2] = caplen;
	h[3] = len;
	if (fwrite(h, 1, sizeof(h), w->f) != sizeof(h) || fwrite(data, 1, caplen, w->f) != caplen)
		return errno ? -errno : -EIO;
	w->records++;
	return 0;
}

int pcap_writer_close(struct pcap_writer *w)
{
	int rc = 0;

	if (!w->f)
		return 0;
	if (fclose(w->f) != 0)
		rc = errno ? -errno : -EIO;
	w->f = NULL;
	return rc;
}
