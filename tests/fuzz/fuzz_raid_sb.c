/* SPDX-License-Identifier: MIT */
/*
 * fuzz_raid_sb.c - the array member superblock decoder (raid_sb_decode, src/raid/sb.c).
 * The input is the start of one superblock copy (zero-padded to RAID_SB_SIZE).  It is
 * decoded as it is, then once more with its checksum made right, so the fuzzer gets
 * past the checksum to every field check.  Properties: a refusal says why, and the
 * same with or without a message buffer; what is accepted encodes and decodes again
 * to the same superblock.
 */
#include <endian.h>
#include <string.h>
#include <xxhash.h>

#include "raid.h"
#include "fuzz.h"

static void decode_one(const uint8_t *buf, size_t len)
{
	static struct raid_sb a, b;
	static uint8_t again[RAID_SB_SIZE];
	char why[256];

	memset(&a, 0, sizeof(a));
	memset(why, 0, sizeof(why));
	enum raid_sb_status st = raid_sb_decode(buf, len, &a, why, sizeof(why));
	fuzz_require(raid_sb_decode(buf, len, NULL, NULL, 0) == st);
	if (st != RAID_SB_OK) {
		fuzz_require(why[0] && memchr(why, 0, sizeof(why)));
		return;
	}
	raid_sb_encode(&a, again);
	memset(&b, 0, sizeof(b));
	fuzz_require(raid_sb_decode(again, sizeof(again), &b, why, sizeof(why)) == RAID_SB_OK);
	fuzz_require(!memcmp(&a, &b, sizeof(a)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[RAID_SB_SIZE];

	/* As it comes, short inputs included (the decoder must refuse them). */
	decode_one(data, size);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	uint64_t sum = htole64(XXH64(buf, sizeof(buf) - 8, 0));
	memcpy(buf + sizeof(buf) - 8, &sum, 8);
	decode_one(buf, sizeof(buf));
	return 0;
}
