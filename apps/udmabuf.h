/* SPDX-License-Identifier: MIT */
/* A buffer the tools can hand to uroce_mr_reg_dmabuf: pages of a memfd
 * made into a dmabuf by /dev/udmabuf (Linux >= 5.x with CONFIG_UDMABUF). */
#ifndef UROCE_APPS_UDMABUF_H
#define UROCE_APPS_UDMABUF_H

#include <stddef.h>

struct udmabuf {
	int memfd, fd;   /* the pages, and the dmabuf over them */
	void *buf;       /* the pages mapped through the memfd: the tool's view */
	size_t len;      /* page-rounded */
};

/* 0, or -1 with a message (what is missing and what would help) in err. */
int udmabuf_alloc(struct udmabuf *u, size_t len, char *err, size_t errlen);
void udmabuf_free(struct udmabuf *u);

#endif /* UROCE_APPS_UDMABUF_H */
