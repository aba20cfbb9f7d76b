/* SPDX-License-Identifier: MIT */
/* dmabuf registration on frame ports (uroce_mr_reg_dmabuf): the buffer is
 * mapped into the process and registered as any region, so the engine
 * copies packets in and out of it. A verbs port hands the fd to the NIC
 * instead (nic.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/core/qp_internal.h"
#include "transport/core/dmabuf.h"
#include "transport/core/nic.h"

int dmabuf_check(int fd, char *what, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, what, len - 1);
	if (n < 0) {
		snprintf(what, len, "not an open file descriptor");
		return -EBADF;
	}
	what[n] = '\0';
	/* the kernel names every dmabuf's anonymous inode "dmabuf:NAME" */
	return strncmp(what, "/dmabuf:", 8) ? -EINVAL : 0;
}

int dmabuf_map(int fd, uint64_t offset, size_t length, void **addr, void **map, size_t *map_len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = offset & ~(uint64_t)(page - 1);
	size_t len = (size_t)(offset - start) + length;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);

	if (m == MAP_FAILED)
		return -errno;
	*map = m;
	*map_len = len;
	*addr = (uint8_t *)m + (offset - start);
	return 0;
}

void dmabuf_unmap(void *map, size_t map_len)
{
	if (map)
		munmap(map, map_len);
}

int uroce_mr_reg_dmabuf(struct uroce_pd *pd, int fd, uint64_t offset, size_t length, uint64_t iova, int access,
                        struct uroce_mr **out)
{
	struct mr_int *m;
	char what[256];
	void *addr, *map;
	size_t map_len;
	int rc;

	if (!pd || !out || !length)
		return uroce_fail(-EINVAL, "uroce_mr_reg_dmabuf: pd, out and a non-zero length are required");
	if (offset + length < offset)
		return uroce_fail(-EINVAL, "uroce_mr_reg_dmabuf: offset + length wraps around");
	rc = dmabuf_check(fd, what, sizeof(what));
	if (rc)
		return uroce_fail(rc, "uroce_mr_reg_dmabuf: fd %d is not a dmabuf (it is %s); accepted: a dmabuf fd, "
		                      "e.g. from /dev/udmabuf (UDMABUF_CREATE), a DRM PRIME export or a CUDA buffer's "
		                      "cuMemGetHandleForAddressRange", fd, what);
	if (pd->ctx->nic)
		return pd->ctx->nic->mr_reg_dmabuf(pd, fd, offset, length, iova, access, out);
	if (iova)
		return uroce_fail(-EINVAL, "uroce_mr_reg_dmabuf: iova 0x%llx; on an afxdp or dpdk port the region is "
		                           "the dmabuf mapped into this process and the peer names its mapped address "
		                           "(mr->addr): accepted iova 0", (unsigned long long)iova);
	rc = dmabuf_map(fd, offset, length, &addr, &map, &map_len);
	if (rc)
		return uroce_fail(rc, "uroce_mr_reg_dmabuf: cannot map %zu bytes of dmabuf fd %d at offset %llu: %s "
		                      "(GPU memory is usually not mappable: on an afxdp or dpdk port move it through "
		                      "gpu/'s pinned staging buffers)", length, fd, (unsigned long long)offset,
		                  strerror(-rc));
	rc = uroce_mr_reg(pd, addr, length, access, out);
	if (rc) {
		dmabuf_unmap(map, map_len);
		return rc;
	}
	/* the region's slot is the app's until dereg: set before anyone
	 * else can see the MR */
	m = (struct mr_int *)*out;
	m->map = map;
	m->map_len = map_len;
	m->pub.flags = UROCE_MR_DMABUF_MAPPED;
	return 0;
}
