/* SPDX-License-Identifier: MIT */
/* Intrusive singly linked FIFOs kept as a head and a tail pointer. */
#ifndef UROCE_TRANSPORT_CORE_FIFO_H
#define UROCE_TRANSPORT_CORE_FIFO_H

/* Append e (whose link field is already NULL) behind tail. */
#define FIFO_APPEND(head, tail, e, link)	\
	do {					\
		if (tail)			\
			(tail)->link = (e);	\
		else				\
			(head) = (e);		\
		(tail) = (e);			\
	} while (0)

#endif
