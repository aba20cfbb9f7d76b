/* SPDX-License-Identifier: MIT */
/* udmabuf: a memfd, sealed against shrinking, turned into a dmabuf. */
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "udmabuf.h"

int udmabuf_alloc(struct udmabuf *u, size_t len, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	struct udmabuf_create c;
	int dev;

	memset(u, 0, sizeof(*u));
	u->memfd = u->fd = -1;
	u->len = (len + (size_t)page - 1) & ~((size_t)page - 1);
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		snprintf(err, errlen, "cannot open /dev/udmabuf: %s (a kernel with CONFIG_UDMABUF: Debian's 6.12, "
		         "or modprobe udmabuf)", strerror(errno));
		return -1;
	}
	u->memfd = memfd_create("uroce-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (u->memfd < 0 || ftruncate(u->memfd, (off_t)u->len) ||
	    fcntl(u->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		snprintf(err, errlen, "memfd for the udmabuf: %s", strerror(errno));
		goto fail;
	}
	memset(&c, 0, sizeof(c));
	c.memfd = (uint32_t)u->memfd;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.offset = 0;
	c.size = u->len;
	u->fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (u->fd < 0) {
		snprintf(err, errlen, "UDMABUF_CREATE of %zu bytes: %s", u->len, strerror(errno));
		goto fail;
	}
	u->buf = mmap(NULL, u->len, PROT_READ | PROT_WRITE, MAP_SHARED, u->memfd, 0);
	if (u->buf == MAP_FAILED) {
		u->buf = NULL;
		snprintf(err, errlen, "mapping the udmabuf's memfd: %s", strerror(errno));
		goto fail;
	}
	close(dev);
	return 0;
fail:
	close(dev);
	udmabuf_free(u);
	return -1;
}

void udmabuf_free(struct udmabuf *u)
{
	if (u->buf)
		munmap(u->buf, u->len);
	if (u->fd >= 0)
		close(u->fd);
	if (u->memfd >= 0)
		close(u->memfd);
	u->buf = NULL;
	u->fd = u->memfd = -1;
}
