/* SPDX-License-Identifier: MIT */
/* Error messages for setup paths (see errbuf.h). */
#include <stdarg.h>
#include <stdio.h>

#include "dataplane/errbuf.h"

int errbuf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
