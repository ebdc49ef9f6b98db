/* SPDX-License-Identifier: MIT */
/*
 * raid0.c - RAID 0: chunks striped over the members in member order (chunk c on
 * member c mod n, at row c / n), no redundancy: md's raid0 with members of one size.
 * Any member that fails fails the array.  A read error is returned as it is (there is
 * no other copy to repair from) and leaves the member active.  Runs on array.c's
 * mapped engine.
 */
#include "raid.h"

static unsigned raid0_data_members(const struct tc_array *a)
{
	return a->n;
}

static void raid0_map(const struct tc_array *a, uint64_t off, uint64_t len,
		      struct raid_extent *ext)
{
	array_near_map(a, 1, off, len, ext);
}

static int raid0_redundancy(const struct tc_array *a, uint32_t faulty)
{
	return faulty ? -1 : 0;
}

const struct tc_raid_level raid0_level = {
	.name = "raid0",
	.id = TC_RAID0,
	.min_members = 2,
	.parity = 0,
	.data_members = raid0_data_members,
	.map = raid0_map,
	.submit = array_submit_mapped,
	.redundancy = raid0_redundancy,
};
