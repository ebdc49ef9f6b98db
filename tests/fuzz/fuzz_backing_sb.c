/* SPDX-License-Identifier: MIT */
/*
 * fuzz_backing_sb.c - the backing superblock decoder (tc_fmt_backing_sb_decode, format.c).
 * The input is the start of one superblock copy (zero-padded to TC_BACKING_SB_SIZE).  The
 * target is FUZZ_FMT_SB_TARGET (fuzz.h): decoded as it comes and with its checksum
 * made right; a refusal says why, what is accepted encodes and decodes again the same.
 */
#include <endian.h>
#include <string.h>
#include <xxhash.h>

#include "format.h"
#include "fuzz.h"

FUZZ_FMT_SB_TARGET(struct tc_backing_sb, TC_BACKING_SB_SIZE, tc_fmt_backing_sb_decode,
		   tc_fmt_backing_sb_encode)
