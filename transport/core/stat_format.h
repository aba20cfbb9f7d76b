/* SPDX-License-Identifier: MIT */
/* The statistics endpoint's layout: the shared-memory file a context
 * publishes (/dev/shm/uroce-stat.PID.INDEX, stat_endpoint.c writes it)
 * and uroce-stat reads. One writer, the engine's thread; any number of
 * readers, which only ever map it read-only. docs/api.md describes it.
 *
 * The file is a fixed header, written once before the file gets its
 * final name, then a snapshot body under a sequence lock: the writer
 * makes seq odd, stores the body, makes it even again. Every word of the
 * body is stored and loaded as a relaxed 64-bit atomic (the C11 seqlock
 * pattern), so a reader racing the engine reads torn data at worst, and
 * throws it away when seq moved; it never stalls or changes the engine.
 *
 * Compatibility: the reader checks magic, version and the record sizes
 * in the header; a change to any record bumps USTAT_VERSION. */
#ifndef UROCE_TRANSPORT_CORE_STAT_FORMAT_H
#define UROCE_TRANSPORT_CORE_STAT_FORMAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uroce/uroce.h>

#define USTAT_MAGIC 0x5441545345434f52ull /* "ROCESTAT" little-endian */
#define USTAT_VERSION 1u
#define USTAT_DIR "/dev/shm"
#define USTAT_PREFIX "uroce-stat." /* then PID.INDEX */
#define USTAT_MAX_PATHS 8u         /* paths listed per QP (the rest counted) */
#define USTAT_MAX_QPS_DEFAULT 256u /* QPs listed per context unless stat_max_qps says otherwise */
#define USTAT_MAX_QPS_LIMIT 65536u
#define USTAT_REFRESH_NS 100000000ull /* the engine refreshes the snapshot at most this often */

/* ustat_snap.flags */
#define USTAT_F_QPS_TRUNCATED 1u /* more live QPs than the file has records for */

/* ustat_qp.flags */
#define USTAT_QP_ON_NIC 1u          /* a verbs port's NIC runs it: no counters here */
#define USTAT_QP_PATHS_TRUNCATED 2u /* more paths than USTAT_MAX_PATHS */

/* One port: its spec and uroce_port_stats. */
struct ustat_port {
	char spec[48];             /* "afxdp:veth0" as given to uroce_context_create */
	uint32_t port_num;         /* 1.. */
	uint32_t link_up;
	struct uroce_port_stats st;
};

/* One QP: identity, policies, uroce_qp_stats and its first paths. */
struct ustat_qp {
	uint32_t qpn, dqpn;
	uint8_t type;              /* enum uroce_qp_type */
	uint8_t state;             /* enum uroce_qp_state */
	uint8_t rel;               /* enum uroce_reliability */
	uint8_t cc;                /* enum uroce_cc */
	uint8_t port_num;
	uint8_t npaths_listed;     /* entries of paths[] filled */
	uint16_t npaths;           /* paths the QP has (0: keeps none, rc/uc/ud) */
	uint32_t flags;            /* USTAT_QP_* */
	uint32_t pad;
	struct uroce_qp_stats st;
	struct uroce_path_stats paths[USTAT_MAX_PATHS];
};

/* The snapshot's first part; nports ustat_port and nqps_listed ustat_qp
 * records follow it (the port array always has UROCE_MAX_PORTS slots). */
struct ustat_snap {
	uint64_t mono_ns;          /* CLOCK_MONOTONIC when taken (rates divide by its deltas) */
	uint64_t real_ns;          /* CLOCK_REALTIME when taken */
	uint64_t snapshots;        /* how many the engine has published */
	uint32_t nports;
	uint32_t flags;            /* USTAT_F_* */
	uint32_t nqps;             /* live QPs of the context */
	uint32_t nqps_listed;      /* records filled (<= header's max_qps) */
	struct uroce_engine_stats eng;
	uint64_t async_lost;       /* asynchronous events lost (ring full) */
	struct ustat_port ports[UROCE_MAX_PORTS];
	/* struct ustat_qp qps[max_qps] */
};

/* At offset 0 of the file. Everything but seq is written once, before the
 * file is linked under its name. */
struct ustat_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_bytes;     /* sizeof(struct ustat_header): the snapshot starts here */
	uint32_t snap_bytes, port_bytes, qp_bytes, path_bytes, qp_stats_bytes, port_stats_bytes;
	uint32_t max_qps;          /* ustat_qp records the file has room for */
	uint32_t ndrop_reasons;    /* UROCE_DROP__COUNT of the writer */
	uint64_t file_bytes;
	int32_t pid;
	uint32_t ctx_index;        /* the process's contexts, numbered from 0 as created */
	uint64_t start_ticks;      /* the process's start time (field 22 of /proc/PID/stat): a reused PID differs */
	uint64_t refresh_ns;
	int32_t mode;              /* enum uroce_engine_mode */
	int32_t engine_cpu;
	char comm[16];             /* the process's name then */
	uint64_t reserved[8];
	_Atomic uint64_t seq;      /* odd while the engine writes the snapshot */
	uint64_t pad;
};

_Static_assert(sizeof(struct ustat_header) % 8 == 0, "the snapshot starts 8-byte aligned");
_Static_assert(sizeof(struct ustat_snap) % 8 == 0, "the snapshot is copied in 64-bit words");
_Static_assert(sizeof(struct ustat_qp) % 8 == 0, "QP records are copied in 64-bit words");
_Static_assert(sizeof(struct ustat_port) % 8 == 0, "port records are 64-bit words");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "the seqlock's words are plain 64-bit words");

static inline size_t ustat_body_bytes(uint32_t max_qps)
{
	return sizeof(struct ustat_snap) + (size_t)max_qps * sizeof(struct ustat_qp);
}

static inline struct ustat_qp *ustat_qp_at(struct ustat_snap *s, uint32_t i)
{
	return (struct ustat_qp *)(void *)((char *)s + sizeof(*s) + (size_t)i * sizeof(struct ustat_qp));
}

/* Copy n bytes (a multiple of 8) out of the shared body word by word with
 * relaxed atomic loads: readers race the writer by design, and relaxed
 * atomics make that race defined (the sequence count says whether to keep
 * the copy). */
static inline void ustat_words_load(void *dst, const void *src, size_t n)
{
	const _Atomic uint64_t *s = src;
	uint64_t *d = dst;

	for (size_t i = 0; i < n / 8; i++)
		d[i] = atomic_load_explicit(&s[i], memory_order_relaxed);
}

/* A consistent copy of the first n body bytes of a mapped endpoint into
 * dst: true, or false when the writer kept rewriting it for tries
 * attempts (the reader waits for nothing: it simply tries again). */
static inline bool ustat_read(const struct ustat_header *h, void *dst, size_t n, unsigned tries)
{
	const void *body = (const char *)h + sizeof(*h);
	uint64_t s1, s2;

	for (unsigned t = 0; t < tries; t++) {
		s1 = atomic_load_explicit(&h->seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		ustat_words_load(dst, body, n);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&h->seq, memory_order_relaxed);
		if (s1 == s2)
			return true;
	}
	return false;
}

/* Field 22 of /proc/PID/stat (starttime, clock ticks after boot): a PID
 * the kernel hands out again comes with another one, so a reader tells a
 * live endpoint from a stale one by it. 0 when unreadable. */
static inline uint64_t ustat_proc_start_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return 0;
	/* after ')': state (field 3) ... starttime (field 22) */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) !=
	    1)
		return 0;
	return v;
}

#endif
