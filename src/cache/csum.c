/* SPDX-License-Identifier: MIT */
/*
 * csum.c - checksums of cached data: one 32-bit value per 4 KiB unit of every slot,
 * in RAM, so that a cache device that returns wrong data without an error (a failing
 * SSD, bad firmware, a misdirected write) is caught before the data reaches a client
 * or the backing.
 *
 * The value is XXH3-64 of the unit folded to 32 bits, with 0 reserved for "not known".
 * A unit's value is set whenever the engine writes the unit to its slot (fill, write
 * in any policy) and checked whenever the engine reads it back (hits, the valid units
 * of a partial miss, read-modify-write merges, the cleaner's writeback reads).  A unit
 * whose value is not known (the lines that came back from the devices at open, or a
 * cache formatted without checksums) learns it on its first read: from then on it is
 * checked.  Values are not stored on the devices.
 *
 * Locking: a unit's value changes only while its line is held exclusively (writes,
 * fills), or from 0 to the value of the data a shared holder has just read (first
 * read); relaxed atomics keep concurrent readers of one unit well defined.
 */
#include <string.h>
#include <xxhash.h>
#include "cache_priv.h"

static inline uint32_t fold(uint64_t h)
{
	uint32_t v = (uint32_t)(h ^ (h >> 32));
	return v ? v : 1u;
}

uint32_t tc_csum_unit(const void *p)
{
	return fold(XXH3_64bits(p, TC_UNIT_SIZE));
}

/* The checksum of the 4 KiB at byte @skip of the iovecs. */
static uint32_t csum_unit_iov(const struct iovec *iov, int cnt, size_t skip)
{
	int i = 0;
	while (i < cnt && skip >= iov[i].iov_len)
		skip -= iov[i++].iov_len;
	if (i < cnt && iov[i].iov_len - skip >= TC_UNIT_SIZE)
		return tc_csum_unit((const char *)iov[i].iov_base + skip);
	/* A unit split across iovecs (rare: clients send one buffer): hash a copy. */
	uint8_t unit[TC_UNIT_SIZE];
	size_t need = TC_UNIT_SIZE, at = 0;
	for (; i < cnt && need; i++, skip = 0) {
		size_t take = iov[i].iov_len - skip;
		if (take > need)
			take = need;
		memcpy(unit + at, (const char *)iov[i].iov_base + skip, take);
		at += take;
		need -= take;
	}
	return tc_csum_unit(unit);
}

static inline _Atomic uint32_t *csum_at(struct tc_cache *c, uint32_t slot, unsigned u)
{
	return &c->csum[(size_t)slot * c->units + u];
}

void tc_csum_compute(struct tc_cache *c, uint16_t mask, const uint8_t *line_buf,
		     uint32_t out[16])
{
	if (!c->csum)
		return;
	for (unsigned u = 0; u < c->units; u++)
		if (mask & (1u << u))
			out[u] = tc_csum_unit(line_buf + (size_t)u * TC_UNIT_SIZE);
}

void tc_csum_compute_iov(struct tc_cache *c, unsigned first_unit, unsigned nunits,
			 const struct iovec *iov, int cnt, uint32_t out[16])
{
	if (!c->csum)
		return;
	for (unsigned k = 0; k < nunits; k++)
		out[first_unit + k] = csum_unit_iov(iov, cnt, (size_t)k * TC_UNIT_SIZE);
}

void tc_csum_store(struct tc_cache *c, uint32_t slot, uint16_t mask, const uint32_t v[16])
{
	if (!c->csum)
		return;
	for (unsigned u = 0; u < c->units; u++)
		if (mask & (1u << u))
			atomic_store_explicit(csum_at(c, slot, u), v[u], memory_order_relaxed);
}

void tc_csum_forget(struct tc_cache *c, uint32_t slot, uint16_t mask)
{
	if (!c->csum)
		return;
	for (unsigned u = 0; u < c->units; u++)
		if (mask & (1u << u))
			atomic_store_explicit(csum_at(c, slot, u), 0, memory_order_relaxed);
}

/* Check unit @u against @v: true if it matches or was not known (then learnt). */
static bool check_one(struct tc_cache *c, uint32_t slot, unsigned u, uint32_t v)
{
	_Atomic uint32_t *p = csum_at(c, slot, u);
	uint32_t want = atomic_load_explicit(p, memory_order_relaxed);
	if (want == v)
		return true;
	if (want == 0) {
		atomic_compare_exchange_strong_explicit(p, &want, v, memory_order_relaxed,
							memory_order_relaxed);
		return true;
	}
	atomic_fetch_add_explicit(&c->csum_errors, 1, memory_order_relaxed);
	return false;
}

uint16_t tc_csum_verify(struct tc_cache *c, uint32_t slot, uint16_t mask,
			const uint8_t *line_buf)
{
	uint16_t bad = 0;
	if (!c->csum)
		return 0;
	for (unsigned u = 0; u < c->units; u++)
		if ((mask & (1u << u)) &&
		    !check_one(c, slot, u, tc_csum_unit(line_buf + (size_t)u * TC_UNIT_SIZE)))
			bad |= (uint16_t)(1u << u);
	return bad;
}

uint16_t tc_csum_verify_iov(struct tc_cache *c, uint32_t slot, unsigned first_unit,
			    unsigned nunits, const struct iovec *iov, int cnt)
{
	uint16_t bad = 0;
	if (!c->csum)
		return 0;
	for (unsigned k = 0; k < nunits; k++)
		if (!check_one(c, slot, first_unit + k,
			       csum_unit_iov(iov, cnt, (size_t)k * TC_UNIT_SIZE)))
			bad |= (uint16_t)(1u << (first_unit + k));
	return bad;
}
