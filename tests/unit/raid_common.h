/* SPDX-License-Identifier: MIT */
/*
 * raid_common.h - what the array tests (test_raid_*.c) share: GF(2^8) arithmetic
 * written out plainly (polynomial 0x11d), the placement of data and parity the
 * documented layouts give (an implementation of its own, to check the array's
 * against), arrays over memory members, and requests in flight together.
 */
#ifndef RAID_COMMON_H
#define RAID_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "tiercache.h"
#include "tiercache-test.h"

/* GF(2^8) multiplication, shift and add, reducing by x^8 + x^4 + x^3 + x^2 + 1. */
static inline uint8_t ref_gf_mul(uint8_t a, uint8_t b)
{
	uint8_t p = 0;

	while (b) {
		if (b & 1)
			p ^= a;
		a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
		b >>= 1;
	}
	return p;
}

static inline uint8_t ref_gf_pow2(unsigned j)
{
	uint8_t c = 1;

	while (j--)
		c = ref_gf_mul(c, 2);
	return c;
}

/* P and Q of @k data blocks of @len bytes. */
static inline void ref_pq(unsigned k, size_t len, uint8_t *const *data, uint8_t *p,
			  uint8_t *q)
{
	for (size_t x = 0; x < len; x++) {
		uint8_t pv = 0, qv = 0;
		for (unsigned j = 0; j < k; j++) {
			pv ^= data[j][x];
			qv ^= ref_gf_mul(ref_gf_pow2(j), data[j][x]);
		}
		if (p)
			p[x] = pv;
		if (q)
			q[x] = qv;
	}
}

/* The layouts, as docs/raid.md draws them.  Parity levels: the member of data chunk
 * @d (or of P with d = k, Q with d = k + 1) in stripe @s. */
static inline unsigned ref_r56_member(unsigned n, unsigned m, uint64_t s, unsigned d)
{
	unsigned pd = n - 1 - (unsigned)(s % n);

	if (d == n - m)
		return pd;
	if (d == n - m + 1)
		return (pd + 1) % n;
	return (pd + m + d) % n;
}

/* An array over memory members kept for inspection. */
struct raid_fx {
	tc_ctx *ctx;
	tc_dev *array;
	tc_dev *member[TC_ARRAY_MAX_MEMBERS];   /* owned by the array */
	tc_dev *fault[TC_ARRAY_MAX_MEMBERS];    /* the array's members: fault layers over
						 * member[i] (raid_fx_open_faults), or
						 * member[i] itself */
	unsigned n;
};

/* Open @fx; with @faults, every member under a fault layer (fx->fault[i] over
 * fx->member[i]). */
static inline int raid_fx_open_as(struct raid_fx *fx, enum tc_ctx_mode mode, uint64_t seed,
				  enum tc_raid_level_id level, unsigned n, uint32_t chunk,
				  uint64_t member_size, bool faults)
{
	struct tc_ctx_opts co = { .mode = mode, .seed = seed, .log_level = TC_LOG_ERROR };
	struct tc_array_opts ao = { .level = level, .chunk = chunk };

	memset(fx, 0, sizeof(*fx));
	if (tc_ctx_new(&co, &fx->ctx) < 0)
		return -1;
	fx->n = n;
	for (unsigned i = 0; i < n; i++) {
		if (tc_dev_new_memory(fx->ctx, member_size, &fx->member[i]) < 0)
			return -1;
		fx->fault[i] = fx->member[i];
		if (faults && tc_dev_new_fault(fx->ctx, fx->member[i], &fx->fault[i]) < 0)
			return -1;
	}
	return tc_dev_new_array(fx->ctx, &ao, fx->fault, n, &fx->array);
}

static inline int raid_fx_open(struct raid_fx *fx, enum tc_ctx_mode mode, uint64_t seed,
			       enum tc_raid_level_id level, unsigned n, uint32_t chunk,
			       uint64_t member_size)
{
	return raid_fx_open_as(fx, mode, seed, level, n, chunk, member_size, false);
}

static inline int raid_fx_open_faults(struct raid_fx *fx, enum tc_ctx_mode mode,
				      uint64_t seed, enum tc_raid_level_id level, unsigned n,
				      uint32_t chunk, uint64_t member_size)
{
	return raid_fx_open_as(fx, mode, seed, level, n, chunk, member_size, true);
}

static inline void raid_fx_close(struct raid_fx *fx)
{
	tc_dev_close(fx->array);
	tc_ctx_free(fx->ctx);
}

/* Requests in flight together. */
struct raid_pending {
	struct tc_io io;
	struct iovec iov;
	tc_ctx *ctx;
	bool done;
	int result;
};

static inline void raid_pending_done(struct tc_io *io, int result)
{
	struct raid_pending *p = io->private_data;
	tc_ctx *ctx = p->ctx;

	p->result = result;
	__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
	tc_ctx_wake(ctx);
}

static inline void raid_pending_submit(tc_ctx *ctx, tc_dev *dev, struct raid_pending *p,
				       unsigned op, void *buf, uint64_t len, uint64_t off)
{
	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->iov = (struct iovec){ .iov_base = buf, .iov_len = len };
	p->io = (struct tc_io){ .op = (uint8_t)op, .offset = off, .length = len,
				.iov = buf ? &p->iov : NULL, .iovcnt = buf ? 1 : 0,
				.done = raid_pending_done, .private_data = p };
	tc_dev_submit(dev, &p->io);
}

static inline int raid_pending_wait(struct raid_pending *p)
{
	int r = tc_ctx_wait_until(p->ctx, &p->done);

	return r < 0 ? r : p->result;
}

/* Deterministic random numbers of the tests (xorshift64*). */
static inline uint64_t raid_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static inline void raid_fill(uint8_t *p, size_t len, uint64_t *seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(raid_rand(seed) >> 56);
}

#endif /* RAID_COMMON_H */
