/* SPDX-License-Identifier: MIT */
/* dmabuf file descriptors: telling one from any other fd, and mapping one
 * into the process (a udmabuf, a DRM buffer; most GPU memory cannot be). */
#ifndef UROCE_TRANSPORT_CORE_DMABUF_H
#define UROCE_TRANSPORT_CORE_DMABUF_H

#include <stddef.h>
#include <stdint.h>

/* 0 when fd is a dmabuf; else -EINVAL/-EBADF with what it is in what. */
int dmabuf_check(int fd, char *what, size_t len);
/* Map [offset, offset + length) of dmabuf fd read-write: *addr is the
 * first byte, *map and *map_len what dmabuf_unmap takes. 0 or -errno. */
int dmabuf_map(int fd, uint64_t offset, size_t length, void **addr, void **map, size_t *map_len);
void dmabuf_unmap(void *map, size_t map_len);

#endif /* UROCE_TRANSPORT_CORE_DMABUF_H */
