/* SPDX-License-Identifier: MIT */
/* Error messages for setup paths: every open/parse function that can fail
 * takes (char *err, size_t errlen) and says what is wrong in it. */
#ifndef UROCE_DATAPLANE_ERRBUF_H
#define UROCE_DATAPLANE_ERRBUF_H

#include <stddef.h>

/* Room for any setup message whole, for the buffers that carry one: the
 * longest, DPDK's EAL failure, names every EAL argument. */
#define ERRBUF_LEN 2048

/* Format a message into err (if err and errlen are set) and return rc, so
 * a failure path is one line: `return errbuf_fail(err, errlen, -EINVAL, ...)`. */
int errbuf_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif /* UROCE_DATAPLANE_ERRBUF_H */
