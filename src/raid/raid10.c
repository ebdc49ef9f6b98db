/* SPDX-License-Identifier: MIT */
/*
 * raid10.c - RAID 10 in md's near layout (drivers/md/raid10.c, "near" copies): the c
 * copies of chunk L take the consecutive slots L*c .. L*c + c - 1, slot s being member
 * s mod n at row s / n.  With n a multiple of c this is mirrored pairs (c = 2) striped;
 * with other n the copy sets rotate over the members.  Default c = 2.  Survives, for
 * sure, one failure fewer than the fewest active copies of any chunk.  Runs on
 * array.c's mapped engine, reads balanced and repaired as RAID 1's.
 */
#include "raid.h"

/* Whole members' worth of data per stripe of n chunks, or 0 when copies do not divide
 * the members (no stripe size then). */
static unsigned raid10_data_members(const struct tc_array *a)
{
	return a->n % a->copies ? 0 : a->n / a->copies;
}

static void raid10_map(const struct tc_array *a, uint64_t off, uint64_t len,
		       struct raid_extent *ext)
{
	array_near_map(a, a->copies, off, len, ext);
}

static int raid10_redundancy(const struct tc_array *a, uint32_t faulty)
{
	return array_near_redundancy(a, a->copies, faulty);
}

const struct tc_raid_level raid10_level = {
	.name = "raid10",
	.id = TC_RAID10,
	.min_members = 2,
	.parity = 0,
	.data_members = raid10_data_members,
	.map = raid10_map,
	.submit = array_submit_mapped,
	.sync = array_sync_mapped,
	.check_windows = array_mapped_check_windows,
	.redundancy = raid10_redundancy,
};
