/* SPDX-License-Identifier: MIT */
/*
 * raid1.c - RAID 1: an n-way mirror.  Every member holds the whole array at the same
 * offsets; a write goes to every active member, a read to one (array.c's mapped engine
 * picks the active member with the fewest requests in flight, from a rotating start),
 * and a read error is repaired from another member (md's read-error correction).
 * Survives n - 1 member failures.
 */
#include "raid.h"

static unsigned raid1_data_members(const struct tc_array *a)
{
	return 1;
}

/* A run maps onto every member at the same offsets, cut at chunk boundaries: the
 * chunk is what a rebuild copies under the array chunk lock (rebuild.c), and what a
 * write locks. */
static void raid1_map(const struct tc_array *a, uint64_t off, uint64_t len,
		      struct raid_extent *ext)
{
	uint64_t in = off & (a->chunk - 1);

	ext->len = a->chunk - in < len ? a->chunk - in : len;
	ext->ncopies = a->n;
	for (unsigned i = 0; i < a->n; i++)
		ext->copy[i] = (struct raid_copy){ .member = i, .offset = off };
}

static int raid1_redundancy(const struct tc_array *a, uint32_t faulty)
{
	return (int)a->n - 1 - __builtin_popcount(faulty);
}

const struct tc_raid_level raid1_level = {
	.name = "raid1",
	.id = TC_RAID1,
	.min_members = 2,
	.parity = 0,
	.data_members = raid1_data_members,
	.map = raid1_map,
	.submit = array_submit_mapped,
	.sync = array_sync_mapped,
	.check_windows = array_mapped_check_windows,
	.redundancy = raid1_redundancy,
};
