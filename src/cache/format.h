/* SPDX-License-Identifier: MIT */
/*
 * format.h - on-disk structures of tiercache and their encoders / validators.
 *
 * Every structure: fixed-width little-endian fields, explicit padding, a magic, a
 * version, and an XXH64 checksum (seed 0) over every byte before it, placed last.
 * Decoders check, in order: magic, version, checksum, then ranges of each field; each
 * refusal has its own code and a message naming the structure, the field and the value.
 * docs/format.md describes the layout and the update protocol.
 *
 * Cache device layout (offsets in bytes):
 *   0                      cache superblock, copy 0 (TC_CACHE_SB_SIZE)
 *   TC_CACHE_SB_SIZE       cache superblock, copy 1
 *   md_offset (64 KiB)     metadata blocks: block i, copy c at md_offset + (2*i + c) * 4096
 *   data_offset            cache line slots: slot k at data_offset + k * line_size
 * Backing device layout:
 *   0                      backing superblock, copy 0 (TC_BACKING_SB_SIZE)
 *   4096                   backing superblock, copy 1
 *   TC_BACKING_DATA_OFFSET volume data (volume offset 0)
 */
#ifndef TC_FORMAT_H
#define TC_FORMAT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include "tiercache.h"

#define TC_CACHE_MAGIC 0x41434354u   /* "TCCA" little-endian */
#define TC_BACKING_MAGIC 0x4b424354u /* "TCBK" */
#define TC_MD_MAGIC 0x444d4354u      /* "TCMD" */
#define TC_FORMAT_VERSION 1u

#define TC_CACHE_SB_SIZE 8192u
#define TC_BACKING_SB_SIZE 4096u
#define TC_MD_BLOCK_SIZE 4096u
#define TC_MD_OFFSET 65536u
#define TC_MD_ENTRIES_PER_BLOCK 253u
#define TC_MAX_VOLUMES 64u          /* volume ids 1..64; 0 marks a free slot */
#define TC_MIN_LINES 16u

/* ---- host-side (decoded) forms ------------------------------------------------ */

/* One volume of a cache, as recorded in the cache superblock. */
struct tc_vol_rec {
	uint8_t id;                  /* 1..TC_MAX_VOLUMES, 0 = unused record */
	uint8_t backing_uuid[16];
	char name[TC_NAME_MAX];      /* NUL-terminated */
	uint64_t size;               /* volume bytes */
	uint64_t backing_gen;        /* the backing's attach_gen when last attached */
	struct tc_volume_settings settings;
};

/*
 * Whether write-back (wb, instwb) needs a cache device with redundancy (architecture
 * invariant 4), as stored in the cache superblock.  Caches formatted before the field
 * existed read 0 and keep the write-back they had (an upgrade never turns a volume's
 * write-back off silently); status shows them as unprotected when their device has no
 * redundancy, as it does for an explicit override.
 */
enum tc_wb_guard {
	TC_WB_GUARD_LEGACY = 0,      /* formatted before the field: write-back allowed */
	TC_WB_GUARD_PROTECTED = 1,   /* write-back only while the device has redundancy >= 1 */
	TC_WB_GUARD_OVERRIDE = 2,    /* --unprotected-writeback: allowed without redundancy */
};

struct tc_cache_sb {
	uint64_t generation;         /* +1 at every superblock write; newest valid copy wins */
	uint8_t uuid[16];
	uint32_t line_size;          /* bytes, power of two, 4096..65536 */
	uint32_t nslots;             /* cache lines */
	uint64_t md_offset, md_blocks, data_offset, dev_size;  /* bytes / count */
	uint32_t commit_interval_ms;
	uint8_t replacement, dirty_low_pct, dirty_high_pct;
	uint8_t clean_shutdown;      /* 1: metadata on disk is complete, clean lines trusted */
	uint64_t commit_seq;         /* last metadata commit sequence at the time of writing */
	uint8_t csum_off;            /* 1: no checksums of cached data; 0: XXH3 per 4 KiB unit */
	uint8_t wb_guard;            /* enum tc_wb_guard: may write-back run without redundancy */
	struct tc_vol_rec vols[TC_MAX_VOLUMES];  /* indexed by id - 1 */
	/* Ranges with cache attributes (tc_volume_region_set), of every volume, in any
	 * order; entries [0, nregions) used. */
	uint32_t nregions;
	struct tc_region_rec {
		uint8_t vol;                 /* volume id (its record is in use) */
		struct tc_region r;          /* bytes; kind; write policy */
	} regions[TC_REGIONS_MAX];
};

struct tc_backing_sb {
	uint64_t generation;         /* +1 at every superblock write */
	uint8_t uuid[16];
	char name[TC_NAME_MAX];
	uint64_t dev_size, data_offset, size;  /* bytes */
	uint8_t cache_uuid[16];      /* all zero: no cache attached */
	uint64_t attach_gen;         /* +1 at every attach and every use without the cache */
	struct tc_volume_settings settings;
	uint32_t stripe_size;        /* bytes: full-stripe size of the array behind; 0 = none */
};

/* One cache line's persistent state (a metadata block holds 253 of them). */
struct tc_md_entry {
	uint64_t line_no;            /* backing line number; meaningful when vol != 0 */
	uint8_t vol;                 /* volume id, 0 = slot free */
	uint16_t valid, dirty;       /* per-4 KiB unit bits; dirty is a subset of valid */
};

struct tc_md_block {
	uint32_t index;              /* block number */
	uint64_t seq;                /* commit sequence that wrote it; newest valid copy wins */
	uint8_t cache_uuid[16];
	uint16_t nentries;           /* entries in use (the last block may hold fewer) */
	struct tc_md_entry e[TC_MD_ENTRIES_PER_BLOCK];
};

/* ---- on-disk forms (little-endian) ------------------------------------------- */

struct tc_settings_disk {
	uint8_t read_cache, write_policy, flush_rate, admission, fill, pad[3];
	uint32_t nhit;
	uint32_t pad2;
	uint64_t seq_cutoff;
} __attribute__((packed));
static_assert(sizeof(struct tc_settings_disk) == 24, "settings layout");

struct tc_vol_rec_disk {
	uint8_t id;
	uint8_t priority;            /* enum tc_prio (0 normal, 1 high, 2 low); 0 in older
				      * caches: normal */
	uint8_t pad[6];
	uint8_t backing_uuid[16];
	char name[TC_NAME_MAX];
	uint64_t size;
	uint64_t backing_gen;
	struct tc_settings_disk settings;
	/* Partition shares (tc_volume_settings.reserve, cap): bit 31 set, a percentage
	 * (0..100) in the low bits; clear, 4 KiB units.  0 = none; zeros in older caches. */
	uint32_t share_reserve, share_cap;
} __attribute__((packed));
static_assert(sizeof(struct tc_vol_rec_disk) == 104, "volume record layout");

/* The range table of the cache superblock (docs/format.md, "Range table"): a header,
 * then TC_REGIONS_MAX entries, the first @count used.  All zeros (magic 0): a cache
 * formatted before ranges existed, none. */
#define TC_REGION_MAGIC 0x47524354u   /* "TCRG" */
#define TC_REGION_VERSION 1u
struct tc_region_disk {
	uint8_t vol, kind, write_policy, pad[5];
	uint64_t offset, length;               /* bytes */
} __attribute__((packed));
static_assert(sizeof(struct tc_region_disk) == 24, "range entry layout");
struct tc_region_tab_disk {
	uint32_t magic;
	uint16_t version, count;
	uint8_t reserved[8];
	struct tc_region_disk e[TC_REGIONS_MAX];
} __attribute__((packed));
static_assert(sizeof(struct tc_region_tab_disk) == 1264, "range table layout");

struct tc_cache_sb_disk {
	uint32_t magic, version;
	uint64_t generation;
	uint8_t uuid[16];
	uint32_t line_size, nslots;
	uint64_t md_offset, md_blocks, data_offset, dev_size;
	uint32_t commit_interval_ms;
	uint8_t replacement, dirty_low_pct, dirty_high_pct, clean_shutdown;
	uint64_t commit_seq;
	uint8_t csum_off;                            /* 0 (also in older caches): checksums on */
	uint8_t wb_guard;                            /* 0 in older caches: see tc_wb_guard */
	uint8_t reserved[166];                       /* header is 256 bytes */
	struct tc_vol_rec_disk vols[TC_MAX_VOLUMES]; /* 6656 bytes */
	struct tc_region_tab_disk regions;           /* 1264 bytes at 6912; zeros in
						      * older caches: no ranges */
	uint8_t pad[TC_CACHE_SB_SIZE - 256 - 6656 - 1264 - 8];
	uint64_t checksum;
} __attribute__((packed));
static_assert(sizeof(struct tc_cache_sb_disk) == TC_CACHE_SB_SIZE, "cache sb layout");
static_assert(offsetof(struct tc_cache_sb_disk, regions) == 6912, "range table offset");
static_assert(offsetof(struct tc_cache_sb_disk, vols) == 256, "cache sb header");
static_assert(offsetof(struct tc_cache_sb_disk, clean_shutdown) == 79, "shutdown flag offset");

struct tc_backing_sb_disk {
	uint32_t magic, version;
	uint64_t generation;
	uint8_t uuid[16];
	char name[TC_NAME_MAX];
	uint64_t dev_size, data_offset, size;
	uint8_t cache_uuid[16];
	uint64_t attach_gen;
	struct tc_settings_disk settings;
	uint32_t stripe_size;
	uint8_t pad[TC_BACKING_SB_SIZE - 140 - 8];
	uint64_t checksum;
} __attribute__((packed));
static_assert(offsetof(struct tc_backing_sb_disk, pad) == 140, "backing sb header");
static_assert(sizeof(struct tc_backing_sb_disk) == TC_BACKING_SB_SIZE, "backing sb layout");

struct tc_md_entry_disk {
	uint64_t line_no;
	uint8_t vol, reserved;
	uint16_t valid, dirty;
	uint16_t reserved2;
} __attribute__((packed));
static_assert(sizeof(struct tc_md_entry_disk) == 16, "md entry layout");

struct tc_md_block_disk {
	uint32_t magic;
	uint16_t version, nentries;
	uint32_t index, reserved;
	uint64_t seq;
	uint8_t cache_uuid[16];
	struct tc_md_entry_disk e[TC_MD_ENTRIES_PER_BLOCK];
	uint64_t checksum;
} __attribute__((packed));
static_assert(offsetof(struct tc_md_block_disk, e) == 40, "md block header");
static_assert(sizeof(struct tc_md_block_disk) == TC_MD_BLOCK_SIZE, "md block layout");

/* ---- encoders and decoders ---------------------------------------------------- */

/* Why a structure was refused; each cause its own code. */
enum tc_fmt_status {
	TC_FMT_OK = 0,
	TC_FMT_BAD_MAGIC = 1,     /* not this structure at all (e.g. never written, zeros) */
	TC_FMT_BAD_VERSION = 2,
	TC_FMT_BAD_CHECKSUM = 3,  /* damaged */
	TC_FMT_BAD_FIELD = 4,     /* checksum fine but a field is out of range */
};

/*
 * Encoders write the full on-disk size (TC_CACHE_SB_SIZE, TC_BACKING_SB_SIZE,
 * TC_MD_BLOCK_SIZE bytes) into @buf, checksum included.  Inputs are trusted.
 *
 * Decoders validate @buf (the same sizes) and fill @out.  They return a tc_fmt_status;
 * on refusal @why (may be NULL) receives a message like
 * "md block 7: field valid=0x3 dirty=0x7: dirty bits outside valid bits".
 * Range checks: cache sb: line_size power of two 4096..65536, nslots >= TC_MIN_LINES,
 * md_offset == TC_MD_OFFSET, md_blocks == ceil(nslots / 253), data_offset aligned to
 * line_size and >= md_offset + md_blocks * 8192, data_offset + nslots * line_size <=
 * dev_size, replacement known, dirty_low_pct < dirty_high_pct <= 100, commit interval
 * 1..3600000, clean_shutdown 0/1, csum_off 0/1, wb_guard 0..2, each volume record: id equal to its index + 1 or 0,
 * NUL-terminated non-empty name, settings in range (write_policy <= 4, flush_rate <= 2,
 * admission <= 1, fill <= 1, read_cache 0/1, nhit 1..255).
 * Backing sb: name NUL-terminated non-empty, data_offset == TC_BACKING_DATA_OFFSET,
 * size <= dev_size - data_offset, size multiple of 4096, settings in range.
 * Md block: index == @expect_index, nentries <= 253, each entry: vol <= TC_MAX_VOLUMES,
 * dirty subset of valid, vol == 0 implies valid == dirty == 0 and line_no == 0,
 * valid bits only below @units_per_line.
 */
void tc_fmt_cache_sb_encode(const struct tc_cache_sb *in, void *buf);
enum tc_fmt_status tc_fmt_cache_sb_decode(const void *buf, struct tc_cache_sb *out,
					  char *why, size_t whylen);
void tc_fmt_backing_sb_encode(const struct tc_backing_sb *in, void *buf);
enum tc_fmt_status tc_fmt_backing_sb_decode(const void *buf, struct tc_backing_sb *out,
					    char *why, size_t whylen);
void tc_fmt_md_block_encode(const struct tc_md_block *in, void *buf);
enum tc_fmt_status tc_fmt_md_block_decode(const void *buf, uint32_t expect_index,
					  unsigned units_per_line, struct tc_md_block *out,
					  char *why, size_t whylen);

/* tc_fmt_settings_check - 0 or TC_FMT_BAD_FIELD with @why naming the field and value. */
enum tc_fmt_status tc_fmt_settings_check(const struct tc_volume_settings *s, char *why,
					 size_t whylen);

/* tc_fmt_status_name - "bad magic", "bad checksum", ... */
const char *tc_fmt_status_name(enum tc_fmt_status st);

/* tc_fmt_uuid_generate - 16 random bytes (getrandom), version 4 bits set. */
void tc_fmt_uuid_generate(uint8_t uuid[16]);
/* tc_fmt_uuid_str - "xxxxxxxx-xxxx-..." into @out (37 bytes). */
void tc_fmt_uuid_str(const uint8_t uuid[16], char out[37]);
bool tc_fmt_uuid_is_zero(const uint8_t uuid[16]);

/* Cache geometry for a device of @dev_size bytes and @line_size: fills nslots,
 * md_offset, md_blocks, data_offset.  Returns 0 or -ENOSPC (< TC_MIN_LINES lines). */
int tc_fmt_cache_geometry(uint64_t dev_size, uint32_t line_size, struct tc_cache_sb *sb);

#endif /* TC_FORMAT_H */
