/* SPDX-License-Identifier: MIT */
/*
 * fuzz_md_block.c - the metadata block decoder (tc_fmt_md_block_decode, format.c).
 * The input is the start of one block copy (zero-padded to TC_MD_BLOCK_SIZE), decoded
 * as it is, then with its checksum made right.  The block index expected is the one
 * the block names (so decoding gets past it), the units per line 1..16 from the index.
 * Properties: a refusal says why; an accepted block encodes and decodes again to the
 * same block, and is refused under any other index or when its entries use more units
 * than a line of fewer units has.
 */
#include <string.h>
#include <xxhash.h>

#include "format.h"
#include "fuzz.h"

static void decode_one(const uint8_t *buf)
{
	static struct tc_md_block a, b;
	static uint8_t again[TC_MD_BLOCK_SIZE];
	char why[256];
	uint32_t index;

	memcpy(&index, buf + 8, 4);
	index = le32toh(index);
	unsigned units = 1 + index % 16;
	memset(&a, 0, sizeof(a));
	memset(why, 0, sizeof(why));
	enum tc_fmt_status st = tc_fmt_md_block_decode(buf, index, units, &a, why, sizeof(why));
	fuzz_require(tc_fmt_md_block_decode(buf, index, units, &b, NULL, 0) == st);
	if (st != TC_FMT_OK) {
		fuzz_require(why[0] && memchr(why, 0, sizeof(why)));
		return;
	}
	fuzz_require(a.nentries <= TC_MD_ENTRIES_PER_BLOCK);
	fuzz_require(tc_fmt_md_block_decode(buf, index + 1, units, &b, why, sizeof(why)) !=
		     TC_FMT_OK);
	tc_fmt_md_block_encode(&a, again);
	memset(&b, 0, sizeof(b));
	fuzz_require(tc_fmt_md_block_decode(again, index, units, &b, why, sizeof(why)) ==
		     TC_FMT_OK);
	fuzz_require(!memcmp(&a, &b, sizeof(a)));
	/* The highest unit any entry uses: a line with fewer units refuses the block. */
	unsigned used = 0;
	for (unsigned i = 0; i < a.nentries; i++)
		for (unsigned u = 0; u < 16; u++)
			if ((a.e[i].valid >> u) & 1 && u + 1 > used)
				used = u + 1;
	if (used > 1)
		fuzz_require(tc_fmt_md_block_decode(buf, index, used - 1, &b, why,
						    sizeof(why)) != TC_FMT_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[TC_MD_BLOCK_SIZE];

	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
	decode_one(buf);
	uint64_t sum = htole64(XXH64(buf, sizeof(buf) - 8, 0));
	memcpy(buf + sizeof(buf) - 8, &sum, 8);
	decode_one(buf);
	return 0;
}
