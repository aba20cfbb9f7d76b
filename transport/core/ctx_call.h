/* SPDX-License-Identifier: MIT */
/* Forwarding an API call of three arguments to the engine thread in
 * dedicated mode (ctx_call). */
#ifndef UROCE_TRANSPORT_CORE_CTX_CALL_H
#define UROCE_TRANSPORT_CORE_CTX_CALL_H

/* struct name##_args holds fn's arguments in order (fill it positionally)
 * and name##_call(void *) calls fn with them on the engine. */
#define CTX_CALL3(name, fn, T1, T2, T3)			\
	struct name##_args {				\
		T1 a1;					\
		T2 a2;					\
		T3 a3;					\
	};						\
	static int name##_call(void *arg)		\
	{						\
		struct name##_args *a = arg;		\
							\
		return fn(a->a1, a->a2, a->a3);		\
	}

#endif
