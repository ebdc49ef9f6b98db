/* SPDX-License-Identifier: MIT */
/*
 * line.h - the in-memory cache line entry: one per cache slot, in one flat array.
 *
 *   struct tc_line (14 bytes, packed)
 *   +-----------+-----------+--------+--------+-----+-------+
 *   | line_no32 | hnext32   | valid16| dirty16| vol8| flags8|
 *   +-----------+-----------+--------+--------+-----+-------+
 *
 * With the hash bucket array (<= 2 bytes per line) and the replacement policy's links
 * (<= 8 bytes per line), the whole per-line cost stays at or under 24 bytes.
 *
 * Locking: line_no, vol, valid, dirty and hnext change only under the shard lock of
 * the line's hash bucket, but a free line's hnext (vol 0: in no hash chain), which
 * links the free list, under the cache's alloc_lock; flags bits are changed with atomic byte operations because
 * the replacement policy touches its bits on hits without any lock.
 */
#ifndef TC_LINE_H
#define TC_LINE_H

#include <stdint.h>

#define TC_SLOT_NONE UINT32_MAX

struct tc_line {
	uint32_t line_no;   /* backing offset / line_size */
	uint32_t hnext;     /* next slot in the hash chain, TC_SLOT_NONE ends it; free:
	                     * the next free slot */
	uint16_t valid;     /* bit u: 4 KiB unit u holds data of (vol, line_no) */
	uint16_t dirty;     /* bit u: unit u is newer than the backing; subset of valid */
	uint8_t vol;        /* volume id; 0 = slot free (not in the hash) */
	uint8_t flags;      /* TC_LINE_* (engine) and TC_LINE_POLICY_MASK (policy) */
} __attribute__((packed));

_Static_assert(sizeof(struct tc_line) == 14, "tc_line is 14 bytes");

/* Engine flag bits. */
#define TC_LINE_DISK_DIRTY 0x01u /* the durable (or committing) metadata says dirty */
#define TC_LINE_PINNED 0x02u     /* in a pinned range: kept out of the replacement
				  * policy, never a victim (region.c) */
#define TC_LINE_ENGINE_MASK 0x0fu
/* Bits the replacement policy owns (queue id, frequency, reference bit...). */
#define TC_LINE_POLICY_MASK 0xf0u

static inline uint8_t tc_line_flags_load(const struct tc_line *l)
{
	return __atomic_load_n(&l->flags, __ATOMIC_RELAXED);
}
static inline void tc_line_flags_set(struct tc_line *l, uint8_t bits)
{
	__atomic_fetch_or(&l->flags, bits, __ATOMIC_RELAXED);
}
static inline void tc_line_flags_clear(struct tc_line *l, uint8_t bits)
{
	__atomic_fetch_and(&l->flags, (uint8_t)~bits, __ATOMIC_RELAXED);
}

/*
 * tc_line_peek - a copy of a line entry read without its shard lock, for scans
 * (cleaner, eviction candidates, management passes) that only pick candidates and
 * check them again under the lock.  The copy may be torn; callers never act on it
 * alone.  Not instrumented by ThreadSanitizer for that reason.
 */
__attribute__((noinline, unused, no_sanitize("thread")))
static struct tc_line tc_line_peek(const struct tc_line *l)
{
	return *l;
}

#endif /* TC_LINE_H */
