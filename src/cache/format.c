/* SPDX-License-Identifier: MIT */
/*
 * format.c - encoders and validating decoders of tiercache's on-disk structures.
 *
 * Three structures live on the devices: the cache superblock (8 KiB, two copies at the
 * start of the cache device), the backing superblock (4 KiB, two copies at the start of
 * each backing device) and the metadata block (4 KiB, 253 cache line entries, shadow
 * pairs after the cache superblocks).  format.h has the byte layouts, docs/format.md the
 * layouts, the valid ranges and the update protocol that uses them.
 *
 * Encoding goes through a local copy of the on-disk struct and explicit htole*() so the
 * bytes are the same on every host; the buffer passed in may have any alignment.
 *
 * Decoding distrusts everything, in the order OCF's superblock loader uses: magic (is
 * this the structure at all?), version (can we read it?), checksum (is it intact?), then
 * the range of every field (is it consistent?).  Each refusal has its own status and a
 * message naming the structure, the field and the value, because "metadata damaged"
 * alone leaves a user with a cache full of dirty data and nothing to act on.  On a
 * refusal the contents of the output structure are unspecified.
 *
 * Fields that carry no constraint (generations, sequence numbers) and reserved bytes
 * (written as zero, ignored on read so a later minor addition can use them) are covered
 * by the checksum only.  An unused volume record (id 0) and the metadata entries beyond
 * nentries must be all zero: the encoder always writes them so, and anything else there
 * means the structure is not what it claims to be.
 *
 * All functions are reentrant and keep no state.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <xxhash.h>

#include "format.h"

#define KIB 1024u
#define MD_PAIR_BYTES (2u * TC_MD_BLOCK_SIZE) /* both shadow copies of one block */

/* Upper bounds of the settings enums, as stored (tiercache.h). */
#define WP_MAX TC_WP_INSTWB
#define FLUSH_RATE_MAX TC_FLUSH_HIGH
#define ADMISSION_MAX TC_ADMIT_NHIT
#define FILL_MAX TC_FILL_LINE
#define NHIT_MAX 255u
#define REPL_MAX TC_REPL_WTINYLFU_HC
#define COMMIT_INTERVAL_MAX 3600000u /* one hour, in ms */

/* ---- helpers ------------------------------------------------------------------- */

/* refuse - write the message into @why (if any) and return @st, so a check reads
 * "return refuse(TC_FMT_BAD_FIELD, why, whylen, ...)". */
__attribute__((format(printf, 4, 5)))
static enum tc_fmt_status refuse(enum tc_fmt_status st, char *why, size_t whylen,
				 const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return st;
}

/* Checksum of an encoded structure of @size bytes: XXH64, seed 0, over every byte
 * before the checksum, which is the structure's last 8 bytes. */
static uint64_t fmt_checksum(const void *buf, size_t size)
{
	return XXH64(buf, size - sizeof(uint64_t), 0);
}

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static bool line_size_ok(uint64_t v)
{
	return is_pow2(v) && v >= 4 * KIB && v <= 64 * KIB;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t md_blocks_for(uint64_t nslots)
{
	return (nslots + TC_MD_ENTRIES_PER_BLOCK - 1) / TC_MD_ENTRIES_PER_BLOCK;
}

/*
 * check_name - a stored name: NUL-terminated within TC_NAME_MAX bytes, 1..31 bytes of
 * [A-Za-z0-9._-], zero after the terminator (the encoder pads with zeros).  Returns
 * true, or false with the problem described in @msg.
 */
static bool check_name(const char *raw, char *msg, size_t msglen)
{
	size_t len = strnlen(raw, TC_NAME_MAX);

	if (len == TC_NAME_MAX) {
		snprintf(msg, msglen, "is not NUL-terminated within %d bytes", TC_NAME_MAX);
		return false;
	}
	if (len == 0) {
		snprintf(msg, msglen, "is empty");
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)raw[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
			continue;
		snprintf(msg, msglen, "has byte 0x%02x at position %zu, outside [A-Za-z0-9._-]",
			 c, i);
		return false;
	}
	if (!is_zero(raw + len, TC_NAME_MAX - len)) {
		snprintf(msg, msglen, "\"%s\" has non-zero bytes after its terminator", raw);
		return false;
	}
	return true;
}

/* Copy a host name into its on-disk field: up to the NUL, zero padded, at most 31
 * bytes so the terminator always fits. */
static void put_name(char dst[TC_NAME_MAX], const char *src)
{
	size_t len = strnlen(src, TC_NAME_MAX - 1);

	memset(dst, 0, TC_NAME_MAX);
	memcpy(dst, src, len);
}

/*
 * check_settings - the ranges of one settings record, given as raw stored values so a
 * read_cache byte of 2 is seen as 2 and not folded into "true".  @who prefixes the
 * message ("cache superblock: volume record 3 settings").
 */
static enum tc_fmt_status check_settings(const char *who, unsigned read_cache,
					 unsigned write_policy, unsigned flush_rate,
					 unsigned admission, unsigned fill, uint32_t nhit,
					 char *why, size_t whylen)
{
	if (read_cache > 1)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: read_cache %u is not 0 or 1", who, read_cache);
	if (write_policy > WP_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: write_policy %u is not between 0 and %u", who,
			      write_policy, WP_MAX);
	if (flush_rate > FLUSH_RATE_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: flush_rate %u is not between 0 and %u", who, flush_rate,
			      FLUSH_RATE_MAX);
	if (admission > ADMISSION_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: admission %u is not between 0 and %u", who, admission,
			      ADMISSION_MAX);
	if (fill > FILL_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: fill %u is not between 0 and %u", who, fill, FILL_MAX);
	if (nhit < 1 || nhit > NHIT_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: nhit %u is not between 1 and %u", who, nhit, NHIT_MAX);
	return TC_FMT_OK;
}

static enum tc_fmt_status check_settings_disk(const char *who,
					      const struct tc_settings_disk *d, char *why,
					      size_t whylen)
{
	return check_settings(who, d->read_cache, d->write_policy, d->flush_rate,
			      d->admission, d->fill, le32toh(d->nhit), why, whylen);
}

static void settings_encode(const struct tc_volume_settings *s, struct tc_settings_disk *d)
{
	memset(d, 0, sizeof(*d));
	d->read_cache = s->read_cache ? 1 : 0;
	d->write_policy = s->write_policy;
	d->flush_rate = s->flush_rate;
	d->admission = s->admission;
	d->fill = s->fill;
	d->nhit = htole32(s->nhit);
	d->seq_cutoff = htole64(s->seq_cutoff);
}

static void settings_decode(const struct tc_settings_disk *d, struct tc_volume_settings *s)
{
	s->read_cache = d->read_cache != 0;
	s->write_policy = d->write_policy;
	s->flush_rate = d->flush_rate;
	s->admission = d->admission;
	s->fill = d->fill;
	s->nhit = le32toh(d->nhit);
	s->seq_cutoff = le64toh(d->seq_cutoff);
	/* The partition shares and the priority live in the cache's volume record only
	 * (vol_rec_decode). */
	s->reserve = 0;
	s->cap = 0;
	s->priority = TC_PRIO_NORMAL;
}

/* The three checks every structure starts with.  @what names the structure. */
static enum tc_fmt_status check_header(const char *what, uint32_t magic, uint32_t expect_magic,
				       uint32_t version, uint64_t stored_csum,
				       uint64_t computed_csum, char *why, size_t whylen)
{
	if (magic != expect_magic)
		return refuse(TC_FMT_BAD_MAGIC, why, whylen,
			      "%s: magic 0x%08x is not 0x%08x", what, magic, expect_magic);
	if (version != TC_FORMAT_VERSION)
		return refuse(TC_FMT_BAD_VERSION, why, whylen,
			      "%s: version %u is not the supported version %u", what, version,
			      TC_FORMAT_VERSION);
	if (stored_csum != computed_csum)
		return refuse(TC_FMT_BAD_CHECKSUM, why, whylen,
			      "%s: checksum 0x%016llx does not match the contents (0x%016llx)",
			      what, (unsigned long long)stored_csum,
			      (unsigned long long)computed_csum);
	return TC_FMT_OK;
}

/* ---- cache superblock ------------------------------------------------------------ */

/* A share (tc_volume_settings.reserve/cap) on disk: see tc_vol_rec_disk.  The values
 * were checked (tc_fmt_settings_check): they fit. */
#define SHARE_DISK_PCT 0x80000000u
static uint32_t share_encode(uint64_t s)
{
	if (s & TC_SHARE_PCT)
		return SHARE_DISK_PCT | (uint32_t)(s & 0xff);
	return (uint32_t)(s / TC_UNIT_SIZE);
}

static uint64_t share_decode(uint32_t d)
{
	if (d & SHARE_DISK_PCT)
		return TC_SHARE_PCT | (d & ~SHARE_DISK_PCT);
	return (uint64_t)d * TC_UNIT_SIZE;
}

/* A share on disk: a percentage above 100 is damage. */
static enum tc_fmt_status check_share_disk(const char *who, const char *what, uint32_t d,
					   char *why, size_t whylen)
{
	if ((d & SHARE_DISK_PCT) && (d & ~SHARE_DISK_PCT) > 100)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: %s %u is a percentage above "
			      "100 (%u%%)", who, what, d, d & ~SHARE_DISK_PCT);
	return TC_FMT_OK;
}

static void vol_rec_encode(const struct tc_vol_rec *in, struct tc_vol_rec_disk *d)
{
	memset(d, 0, sizeof(*d));
	if (in->id == 0)
		return; /* unused: all zeros, whatever the host record holds */
	d->id = in->id;
	d->priority = in->settings.priority;
	memcpy(d->backing_uuid, in->backing_uuid, sizeof(d->backing_uuid));
	put_name(d->name, in->name);
	d->size = htole64(in->size);
	d->backing_gen = htole64(in->backing_gen);
	settings_encode(&in->settings, &d->settings);
	d->share_reserve = htole32(share_encode(in->settings.reserve));
	d->share_cap = htole32(share_encode(in->settings.cap));
}

void tc_fmt_cache_sb_encode(const struct tc_cache_sb *in, void *buf)
{
	struct tc_cache_sb_disk d;

	memset(&d, 0, sizeof(d));
	d.magic = htole32(TC_CACHE_MAGIC);
	d.version = htole32(TC_FORMAT_VERSION);
	d.generation = htole64(in->generation);
	memcpy(d.uuid, in->uuid, sizeof(d.uuid));
	d.line_size = htole32(in->line_size);
	d.nslots = htole32(in->nslots);
	d.md_offset = htole64(in->md_offset);
	d.md_blocks = htole64(in->md_blocks);
	d.data_offset = htole64(in->data_offset);
	d.dev_size = htole64(in->dev_size);
	d.commit_interval_ms = htole32(in->commit_interval_ms);
	d.replacement = in->replacement;
	d.dirty_low_pct = in->dirty_low_pct;
	d.dirty_high_pct = in->dirty_high_pct;
	d.clean_shutdown = in->clean_shutdown;
	d.commit_seq = htole64(in->commit_seq);
	d.csum_off = in->csum_off;
	d.wb_guard = in->wb_guard;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++)
		vol_rec_encode(&in->vols[i], &d.vols[i]);
	/* No ranges: the table stays all zeros, as in caches formatted before it. */
	if (in->nregions) {
		d.regions.magic = htole32(TC_REGION_MAGIC);
		d.regions.version = htole16(TC_REGION_VERSION);
		d.regions.count = htole16((uint16_t)in->nregions);
		for (unsigned i = 0; i < in->nregions && i < TC_REGIONS_MAX; i++) {
			struct tc_region_disk *e = &d.regions.e[i];
			e->vol = in->regions[i].vol;
			e->kind = in->regions[i].r.kind;
			e->write_policy = in->regions[i].r.write_policy;
			e->offset = htole64(in->regions[i].r.offset);
			e->length = htole64(in->regions[i].r.length);
		}
	}
	d.checksum = htole64(fmt_checksum(&d, sizeof(d)));
	memcpy(buf, &d, sizeof(d));
}

/* One volume record of a cache superblock whose line_size is already validated. */
static enum tc_fmt_status check_vol_rec(const struct tc_vol_rec_disk *r, unsigned idx,
					uint32_t line_size, char *why, size_t whylen)
{
	char who[96], msg[96];
	uint64_t size = le64toh(r->size);

	snprintf(who, sizeof(who), "cache superblock: volume record %u", idx);
	if (r->id == 0) {
		if (!is_zero(r, sizeof(*r)))
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: id 0 (unused) but the record is not all zeros", who);
		return TC_FMT_OK;
	}
	if (r->id != idx + 1)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: id %u is neither %u (its index + 1) nor 0", who, r->id,
			      idx + 1);
	if (is_zero(r->backing_uuid, sizeof(r->backing_uuid)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: backing_uuid is all zeros",
			      who);
	if (!check_name(r->name, msg, sizeof(msg)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: name %s", who, msg);
	if (size % TC_UNIT_SIZE)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s (\"%s\"): size %llu is not a multiple of %u", who, r->name,
			      (unsigned long long)size, TC_UNIT_SIZE);
	/* Line numbers are 32 bits in memory: a bigger volume cannot be addressed. */
	if (size > (uint64_t)line_size << 32)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s (\"%s\"): size %llu exceeds 2^32 lines of %u bytes", who,
			      r->name, (unsigned long long)size, line_size);
	snprintf(who, sizeof(who), "cache superblock: volume record %u (\"%s\") settings",
		 idx, r->name);
	enum tc_fmt_status st = check_settings_disk(who, &r->settings, why, whylen);
	if (st == TC_FMT_OK)
		st = check_share_disk(who, "share_reserve", le32toh(r->share_reserve), why, whylen);
	if (st == TC_FMT_OK)
		st = check_share_disk(who, "share_cap", le32toh(r->share_cap), why, whylen);
	if (st == TC_FMT_OK && r->priority >= TC_PRIO_COUNT)
		st = refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: priority %u is not 0 (normal), "
			    "1 (high) or 2 (low)", who, r->priority);
	return st;
}

/*
 * The range table (volume records already checked): all zeros, or magic, version 1,
 * count <= TC_REGIONS_MAX, unused entries zero (reserved and pad bytes are ignored),
 * each entry: a volume whose record is
 * in use, a known kind, a write policy wt/wb/wa/pt for TC_REGION_POLICY (0 otherwise),
 * a non-empty range of whole 4 KiB units inside the volume.  A newer version is
 * refused: its ranges (pins) cannot be honoured by this code.
 */
static enum tc_fmt_status check_regions(const struct tc_cache_sb_disk *d, char *why,
					size_t whylen)
{
	static const char *const what = "cache superblock: range table";
	const struct tc_region_tab_disk *t = &d->regions;
	if (is_zero(t, sizeof(*t)))
		return TC_FMT_OK;
	if (le32toh(t->magic) != TC_REGION_MAGIC)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: magic 0x%08x is not 0x%08x",
			      what, le32toh(t->magic), TC_REGION_MAGIC);
	if (le16toh(t->version) != TC_REGION_VERSION)
		return refuse(TC_FMT_BAD_VERSION, why, whylen,
			      "%s: version %u is not %u (written by a newer tiercache)", what,
			      le16toh(t->version), TC_REGION_VERSION);
	unsigned n = le16toh(t->count);
	if (n > TC_REGIONS_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: count %u is above %u", what,
			      n, TC_REGIONS_MAX);
	for (unsigned i = n; i < TC_REGIONS_MAX; i++)
		if (!is_zero(&t->e[i], sizeof(t->e[i])))
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: entry %u (beyond count %u) is not all zeros", what, i, n);
	for (unsigned i = 0; i < n; i++) {
		const struct tc_region_disk *e = &t->e[i];
		uint64_t off = le64toh(e->offset), len = le64toh(e->length);
		if (!e->vol || e->vol > TC_MAX_VOLUMES || !d->vols[e->vol - 1].id)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: entry %u: vol %u has no volume record", what, i, e->vol);
		if (e->kind < TC_REGION_PINNED || e->kind > TC_REGION_POLICY)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: entry %u: kind %u is not 1, 2 or 3", what, i, e->kind);
		if (e->kind == TC_REGION_POLICY ? e->write_policy > TC_WP_PT : e->write_policy != 0)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: entry %u: write_policy %u out of range for kind %u",
				      what, i, e->write_policy, e->kind);
		uint64_t size = le64toh(d->vols[e->vol - 1].size);
		if (!len || off % TC_UNIT_SIZE || len % TC_UNIT_SIZE || off > size ||
		    len > size - off)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "%s: entry %u: offset %llu length %llu: empty, unaligned or "
				      "past the end of volume %u (%llu bytes)", what, i,
				      (unsigned long long)off, (unsigned long long)len, e->vol,
				      (unsigned long long)size);
	}
	return TC_FMT_OK;
}

static enum tc_fmt_status check_cache_sb(const struct tc_cache_sb_disk *d, char *why,
					 size_t whylen)
{
	static const char *const what = "cache superblock";
	uint32_t line_size = le32toh(d->line_size);
	uint32_t nslots = le32toh(d->nslots);
	uint64_t md_offset = le64toh(d->md_offset);
	uint64_t md_blocks = le64toh(d->md_blocks);
	uint64_t data_offset = le64toh(d->data_offset);
	uint64_t dev_size = le64toh(d->dev_size);
	uint32_t interval = le32toh(d->commit_interval_ms);
	uint64_t data_bytes, md_end;
	enum tc_fmt_status st;

	if (is_zero(d->uuid, sizeof(d->uuid)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: uuid is all zeros", what);
	if (!line_size_ok(line_size))
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: line_size %u is not a power of two between %u and %u", what,
			      line_size, 4 * KIB, 64 * KIB);
	if (nslots < TC_MIN_LINES)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: nslots %u is below the minimum of %u", what, nslots,
			      TC_MIN_LINES);
	if (md_offset != TC_MD_OFFSET)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: md_offset %llu is not %u",
			      what, (unsigned long long)md_offset, TC_MD_OFFSET);
	if (md_blocks != md_blocks_for(nslots))
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: md_blocks %llu is not ceil(nslots %u / %u) = %llu", what,
			      (unsigned long long)md_blocks, nslots, TC_MD_ENTRIES_PER_BLOCK,
			      (unsigned long long)md_blocks_for(nslots));
	/* md_blocks <= 2^32 / 253 here, so the end of the metadata cannot overflow. */
	md_end = md_offset + md_blocks * MD_PAIR_BYTES;
	if (data_offset % line_size)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: data_offset %llu is not aligned to line_size %u", what,
			      (unsigned long long)data_offset, line_size);
	if (data_offset < md_end)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: data_offset %llu overlaps the metadata ending at %llu", what,
			      (unsigned long long)data_offset, (unsigned long long)md_end);
	data_bytes = (uint64_t)nslots * line_size;
	if (dev_size < data_offset || dev_size - data_offset < data_bytes)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: dev_size %llu is smaller than data_offset %llu + nslots %u * "
			      "line_size %u", what, (unsigned long long)dev_size,
			      (unsigned long long)data_offset, nslots, line_size);
	if (interval < 1 || interval > COMMIT_INTERVAL_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: commit_interval_ms %u is not between 1 and %u", what,
			      interval, COMMIT_INTERVAL_MAX);
	if (d->replacement > REPL_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: replacement %u is not between 0 and %u", what,
			      d->replacement, REPL_MAX);
	if (d->dirty_high_pct > 100)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: dirty_high_pct %u is above 100", what, d->dirty_high_pct);
	if (d->dirty_low_pct >= d->dirty_high_pct)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: dirty_low_pct %u is not below dirty_high_pct %u", what,
			      d->dirty_low_pct, d->dirty_high_pct);
	if (d->clean_shutdown > 1)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: clean_shutdown %u is not 0 or 1", what, d->clean_shutdown);
	if (d->csum_off > 1)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: csum_off %u is not 0 or 1", what, d->csum_off);
	if (d->wb_guard > TC_WB_GUARD_OVERRIDE)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: wb_guard %u is not 0, 1 or 2", what, d->wb_guard);
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		st = check_vol_rec(&d->vols[i], i, line_size, why, whylen);
		if (st != TC_FMT_OK)
			return st;
	}
	return check_regions(d, why, whylen);
}

enum tc_fmt_status tc_fmt_cache_sb_decode(const void *buf, struct tc_cache_sb *out,
					  char *why, size_t whylen)
{
	struct tc_cache_sb_disk d;
	enum tc_fmt_status st;

	memcpy(&d, buf, sizeof(d));
	st = check_header("cache superblock", le32toh(d.magic), TC_CACHE_MAGIC,
			  le32toh(d.version), le64toh(d.checksum), fmt_checksum(&d, sizeof(d)),
			  why, whylen);
	if (st != TC_FMT_OK)
		return st;
	st = check_cache_sb(&d, why, whylen);
	if (st != TC_FMT_OK)
		return st;

	memset(out, 0, sizeof(*out));
	out->generation = le64toh(d.generation);
	memcpy(out->uuid, d.uuid, sizeof(out->uuid));
	out->line_size = le32toh(d.line_size);
	out->nslots = le32toh(d.nslots);
	out->md_offset = le64toh(d.md_offset);
	out->md_blocks = le64toh(d.md_blocks);
	out->data_offset = le64toh(d.data_offset);
	out->dev_size = le64toh(d.dev_size);
	out->commit_interval_ms = le32toh(d.commit_interval_ms);
	out->replacement = d.replacement;
	out->dirty_low_pct = d.dirty_low_pct;
	out->dirty_high_pct = d.dirty_high_pct;
	out->clean_shutdown = d.clean_shutdown;
	out->commit_seq = le64toh(d.commit_seq);
	out->csum_off = d.csum_off;
	out->wb_guard = d.wb_guard;
	for (unsigned i = 0; i < TC_MAX_VOLUMES; i++) {
		const struct tc_vol_rec_disk *r = &d.vols[i];
		struct tc_vol_rec *v = &out->vols[i];

		if (r->id == 0)
			continue; /* left zeroed */
		v->id = r->id;
		memcpy(v->backing_uuid, r->backing_uuid, sizeof(v->backing_uuid));
		memcpy(v->name, r->name, sizeof(v->name));
		v->size = le64toh(r->size);
		v->backing_gen = le64toh(r->backing_gen);
		settings_decode(&r->settings, &v->settings);
		v->settings.reserve = share_decode(le32toh(r->share_reserve));
		v->settings.cap = share_decode(le32toh(r->share_cap));
		v->settings.priority = r->priority;
	}
	if (le32toh(d.regions.magic) == TC_REGION_MAGIC) {
		out->nregions = le16toh(d.regions.count);
		for (unsigned i = 0; i < out->nregions; i++) {
			const struct tc_region_disk *e = &d.regions.e[i];
			out->regions[i].vol = e->vol;
			out->regions[i].r.kind = e->kind;
			out->regions[i].r.write_policy = e->write_policy;
			out->regions[i].r.offset = le64toh(e->offset);
			out->regions[i].r.length = le64toh(e->length);
		}
	}
	return TC_FMT_OK;
}

/* ---- backing superblock ---------------------------------------------------------- */

void tc_fmt_backing_sb_encode(const struct tc_backing_sb *in, void *buf)
{
	struct tc_backing_sb_disk d;

	memset(&d, 0, sizeof(d));
	d.magic = htole32(TC_BACKING_MAGIC);
	d.version = htole32(TC_FORMAT_VERSION);
	d.generation = htole64(in->generation);
	memcpy(d.uuid, in->uuid, sizeof(d.uuid));
	put_name(d.name, in->name);
	d.dev_size = htole64(in->dev_size);
	d.data_offset = htole64(in->data_offset);
	d.size = htole64(in->size);
	memcpy(d.cache_uuid, in->cache_uuid, sizeof(d.cache_uuid));
	d.attach_gen = htole64(in->attach_gen);
	settings_encode(&in->settings, &d.settings);
	d.stripe_size = htole32(in->stripe_size);
	d.checksum = htole64(fmt_checksum(&d, sizeof(d)));
	memcpy(buf, &d, sizeof(d));
}

static enum tc_fmt_status check_backing_sb(const struct tc_backing_sb_disk *d, char *why,
					   size_t whylen)
{
	static const char *const what = "backing superblock";
	uint64_t dev_size = le64toh(d->dev_size);
	uint64_t data_offset = le64toh(d->data_offset);
	uint64_t size = le64toh(d->size);
	char msg[96], who[96];

	if (is_zero(d->uuid, sizeof(d->uuid)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: uuid is all zeros", what);
	if (!check_name(d->name, msg, sizeof(msg)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: name %s", what, msg);
	/* data_offset before dev_size: the dev_size check needs a sane data_offset. */
	if (data_offset != TC_BACKING_DATA_OFFSET)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: data_offset %llu is not %u",
			      what, (unsigned long long)data_offset, TC_BACKING_DATA_OFFSET);
	if (dev_size < data_offset)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: dev_size %llu is smaller than data_offset %llu", what,
			      (unsigned long long)dev_size, (unsigned long long)data_offset);
	if (size > dev_size - data_offset)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: size %llu exceeds dev_size %llu - data_offset %llu", what,
			      (unsigned long long)size, (unsigned long long)dev_size,
			      (unsigned long long)data_offset);
	if (size % TC_UNIT_SIZE)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: size %llu is not a multiple of %u", what,
			      (unsigned long long)size, TC_UNIT_SIZE);
	uint32_t stripe = le32toh(d->stripe_size);
	if (stripe && (stripe & (stripe - 1) || stripe < TC_UNIT_SIZE || stripe > TC_STRIPE_MAX))
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: stripe_size %u is not 0 or a power of two from %u to %u",
			      what, stripe, TC_UNIT_SIZE, TC_STRIPE_MAX);
	snprintf(who, sizeof(who), "%s (\"%s\") settings", what, d->name);
	return check_settings_disk(who, &d->settings, why, whylen);
}

enum tc_fmt_status tc_fmt_backing_sb_decode(const void *buf, struct tc_backing_sb *out,
					    char *why, size_t whylen)
{
	struct tc_backing_sb_disk d;
	enum tc_fmt_status st;

	memcpy(&d, buf, sizeof(d));
	st = check_header("backing superblock", le32toh(d.magic), TC_BACKING_MAGIC,
			  le32toh(d.version), le64toh(d.checksum), fmt_checksum(&d, sizeof(d)),
			  why, whylen);
	if (st != TC_FMT_OK)
		return st;
	st = check_backing_sb(&d, why, whylen);
	if (st != TC_FMT_OK)
		return st;

	memset(out, 0, sizeof(*out));
	out->generation = le64toh(d.generation);
	memcpy(out->uuid, d.uuid, sizeof(out->uuid));
	memcpy(out->name, d.name, sizeof(out->name));
	out->dev_size = le64toh(d.dev_size);
	out->data_offset = le64toh(d.data_offset);
	out->size = le64toh(d.size);
	memcpy(out->cache_uuid, d.cache_uuid, sizeof(out->cache_uuid));
	out->attach_gen = le64toh(d.attach_gen);
	settings_decode(&d.settings, &out->settings);
	out->stripe_size = le32toh(d.stripe_size);
	return TC_FMT_OK;
}

/* ---- metadata block -------------------------------------------------------------- */

void tc_fmt_md_block_encode(const struct tc_md_block *in, void *buf)
{
	struct tc_md_block_disk d;
	unsigned n = in->nentries < TC_MD_ENTRIES_PER_BLOCK ? in->nentries
							    : TC_MD_ENTRIES_PER_BLOCK;

	memset(&d, 0, sizeof(d));
	d.magic = htole32(TC_MD_MAGIC);
	d.version = htole16(TC_FORMAT_VERSION);
	d.nentries = htole16(in->nentries);
	d.index = htole32(in->index);
	d.seq = htole64(in->seq);
	memcpy(d.cache_uuid, in->cache_uuid, sizeof(d.cache_uuid));
	/* Entries past nentries stay zero: the decoder insists on it. */
	for (unsigned i = 0; i < n; i++) {
		d.e[i].line_no = htole64(in->e[i].line_no);
		d.e[i].vol = in->e[i].vol;
		d.e[i].valid = htole16(in->e[i].valid);
		d.e[i].dirty = htole16(in->e[i].dirty);
	}
	d.checksum = htole64(fmt_checksum(&d, sizeof(d)));
	memcpy(buf, &d, sizeof(d));
}

static enum tc_fmt_status check_md_entry(const struct tc_md_entry_disk *e, uint32_t block,
					 unsigned i, unsigned nentries, uint16_t unit_mask,
					 char *why, size_t whylen)
{
	uint64_t line_no = le64toh(e->line_no);
	unsigned valid = le16toh(e->valid), dirty = le16toh(e->dirty);

	if (i >= nentries && e->vol != 0)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "md block %u: entry %u beyond nentries %u has vol %u", block, i,
			      nentries, e->vol);
	if (e->vol > TC_MAX_VOLUMES)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "md block %u: entry %u: vol %u is above %u", block, i, e->vol,
			      TC_MAX_VOLUMES);
	if (e->vol == 0) {
		if (line_no != 0)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "md block %u: entry %u: free slot (vol 0) has line_no %llu",
				      block, i, (unsigned long long)line_no);
		if (valid != 0 || dirty != 0)
			return refuse(TC_FMT_BAD_FIELD, why, whylen,
				      "md block %u: entry %u: free slot (vol 0) has valid=0x%x "
				      "dirty=0x%x", block, i, valid, dirty);
		return TC_FMT_OK;
	}
	/* Line numbers are 32 bits in memory (line.h). */
	if (line_no > UINT32_MAX)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "md block %u: entry %u: line_no %llu does not fit in 32 bits",
			      block, i, (unsigned long long)line_no);
	if (valid & ~unit_mask)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "md block %u: entry %u: valid=0x%x has bits beyond the line's "
			      "units (mask 0x%x)", block, i, valid, unit_mask);
	if (dirty & ~valid)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "md block %u: entry %u: valid=0x%x dirty=0x%x: dirty bits outside "
			      "valid bits", block, i, valid, dirty);
	return TC_FMT_OK;
}

enum tc_fmt_status tc_fmt_md_block_decode(const void *buf, uint32_t expect_index,
					  unsigned units_per_line, struct tc_md_block *out,
					  char *why, size_t whylen)
{
	struct tc_md_block_disk d;
	enum tc_fmt_status st;
	char what[32];
	uint32_t index;
	unsigned nentries;
	uint16_t unit_mask;

	/* Messages name the block by the index the caller expects at this place. */
	snprintf(what, sizeof(what), "md block %u", expect_index);
	memcpy(&d, buf, sizeof(d));
	st = check_header(what, le32toh(d.magic), TC_MD_MAGIC, le16toh(d.version),
			  le64toh(d.checksum), fmt_checksum(&d, sizeof(d)), why, whylen);
	if (st != TC_FMT_OK)
		return st;

	index = le32toh(d.index);
	nentries = le16toh(d.nentries);
	if (index != expect_index)
		return refuse(TC_FMT_BAD_FIELD, why, whylen,
			      "%s: index %u is not the expected %u", what, index, expect_index);
	if (nentries > TC_MD_ENTRIES_PER_BLOCK)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: nentries %u is above %u",
			      what, nentries, TC_MD_ENTRIES_PER_BLOCK);
	/* Blocks of an earlier format of the device must not pass; an all-zero uuid is
	 * never generated, so it marks a block that was never properly written. */
	if (is_zero(d.cache_uuid, sizeof(d.cache_uuid)))
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "%s: cache_uuid is all zeros",
			      what);
	unit_mask = units_per_line >= 16 ? 0xffffu : (uint16_t)((1u << units_per_line) - 1);
	for (unsigned i = 0; i < TC_MD_ENTRIES_PER_BLOCK; i++) {
		st = check_md_entry(&d.e[i], expect_index, i, nentries, unit_mask, why, whylen);
		if (st != TC_FMT_OK)
			return st;
	}

	memset(out, 0, sizeof(*out));
	out->index = index;
	out->seq = le64toh(d.seq);
	memcpy(out->cache_uuid, d.cache_uuid, sizeof(out->cache_uuid));
	out->nentries = (uint16_t)nentries;
	for (unsigned i = 0; i < nentries; i++) {
		out->e[i].line_no = le64toh(d.e[i].line_no);
		out->e[i].vol = d.e[i].vol;
		out->e[i].valid = le16toh(d.e[i].valid);
		out->e[i].dirty = le16toh(d.e[i].dirty);
	}
	return TC_FMT_OK;
}

/* ---- settings, names, uuids ------------------------------------------------------ */

/* A share of tc_volume_settings: a percentage up to 100, or bytes in 4 KiB units that
 * fit the 31 bits of the volume record. */
static enum tc_fmt_status check_share(const char *what, uint64_t s, char *why,
				      size_t whylen)
{
	if (s & TC_SHARE_PCT) {
		if ((s & ~TC_SHARE_PCT) > 100)
			return refuse(TC_FMT_BAD_FIELD, why, whylen, "settings: %s %llu%% is above "
				      "100%%", what, (unsigned long long)(s & ~TC_SHARE_PCT));
		return TC_FMT_OK;
	}
	if (s % TC_UNIT_SIZE)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "settings: %s %llu bytes is not a "
			      "multiple of %u", what, (unsigned long long)s, TC_UNIT_SIZE);
	if (s / TC_UNIT_SIZE >= SHARE_DISK_PCT)
		return refuse(TC_FMT_BAD_FIELD, why, whylen, "settings: %s %llu bytes is not "
			      "below 8 TiB", what, (unsigned long long)s);
	return TC_FMT_OK;
}

enum tc_fmt_status tc_fmt_settings_check(const struct tc_volume_settings *s, char *why,
					 size_t whylen)
{
	enum tc_fmt_status st = check_settings("settings", s->read_cache ? 1 : 0,
					       s->write_policy, s->flush_rate, s->admission,
					       s->fill, s->nhit, why, whylen);
	if (st == TC_FMT_OK)
		st = check_share("reserve", s->reserve, why, whylen);
	if (st == TC_FMT_OK)
		st = check_share("cap", s->cap, why, whylen);
	if (st == TC_FMT_OK && s->priority >= TC_PRIO_COUNT)
		st = refuse(TC_FMT_BAD_FIELD, why, whylen, "settings: priority %u is not 0 "
			    "(normal), 1 (high) or 2 (low)", s->priority);
	return st;
}

const char *tc_fmt_status_name(enum tc_fmt_status st)
{
	switch (st) {
	case TC_FMT_OK:
		return "ok";
	case TC_FMT_BAD_MAGIC:
		return "bad magic";
	case TC_FMT_BAD_VERSION:
		return "bad version";
	case TC_FMT_BAD_CHECKSUM:
		return "bad checksum";
	case TC_FMT_BAD_FIELD:
		return "bad field";
	}
	return "unknown status";
}

/*
 * tc_fmt_uuid_generate - RFC 4122 version 4 (random) uuid.  getrandom() with no flags
 * cannot fail for 16 bytes on a kernel that has it; should it be missing (ENOSYS under
 * an old seccomp filter) the bytes come from hashing clocks and the pid, which is
 * enough to tell two formats apart, the only thing the uuid is used for.
 */
void tc_fmt_uuid_generate(uint8_t uuid[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t n = getrandom(uuid + got, 16 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < 16) {
		struct timespec rt, mt;
		uint64_t h[2], seed;

		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mt);
		seed = (uint64_t)getpid() ^ (uint64_t)(uintptr_t)uuid;
		h[0] = XXH64(&rt, sizeof(rt), seed);
		h[1] = XXH64(&mt, sizeof(mt), h[0]);
		memcpy(uuid, h, 16);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
}

void tc_fmt_uuid_str(const uint8_t uuid[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (unsigned i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[uuid[i] >> 4];
		out[o++] = hex[uuid[i] & 0xf];
	}
	out[o] = '\0';
}

bool tc_fmt_uuid_is_zero(const uint8_t uuid[16])
{
	return is_zero(uuid, 16);
}

/* ---- geometry -------------------------------------------------------------------- */

/* Start of the data area for @nslots lines: after both copies of every metadata block,
 * aligned to the line size and at least to 64 KiB so data I/O stays aligned for any
 * device's preferred I/O size. */
static uint64_t data_offset_for(uint64_t nslots, uint32_t line_size)
{
	uint64_t align = line_size > 64 * KIB ? line_size : 64 * KIB;

	return align_up(TC_MD_OFFSET + md_blocks_for(nslots) * MD_PAIR_BYTES, align);
}

/*
 * tc_fmt_cache_geometry - the largest nslots with data_offset(nslots) + nslots *
 * line_size <= dev_size.  The left side grows strictly with nslots, so a binary search
 * over [0, min(dev_size / line_size, 2^32 - 1)] finds it exactly.  Besides -ENOSPC,
 * returns -EINVAL for a line_size outside the allowed powers of two.
 */
int tc_fmt_cache_geometry(uint64_t dev_size, uint32_t line_size, struct tc_cache_sb *sb)
{
	uint64_t lo = 0, hi;

	if (!line_size_ok(line_size))
		return -EINVAL;
	hi = dev_size / line_size;
	if (hi > UINT32_MAX)
		hi = UINT32_MAX;
	/* Invariant: lo fits (or is 0), everything above hi does not. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		uint64_t off = data_offset_for(mid, line_size);

		if (off <= dev_size && dev_size - off >= mid * line_size)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo < TC_MIN_LINES)
		return -ENOSPC;
	sb->nslots = (uint32_t)lo;
	sb->md_offset = TC_MD_OFFSET;
	sb->md_blocks = md_blocks_for(lo);
	sb->data_offset = data_offset_for(lo, line_size);
	return 0;
}

int tc_cache_layout_for(uint64_t dev_size, uint32_t line_size, struct tc_cache_layout *out)
{
	struct tc_cache_sb sb;

	memset(&sb, 0, sizeof(sb));
	int r = tc_fmt_cache_geometry(dev_size, line_size, &sb);
	if (r)
		return r;
	out->lines = sb.nslots;
	out->data_offset = sb.data_offset;
	return 0;
}

/* The metadata area grows with the line count, so the smallest device is found by
 * stepping up from lines * line_size: each step adds the lines still missing, and the
 * data offset (aligned to 64 KiB or a line) settles within a few steps. */
int tc_cache_size_for(uint64_t lines, uint32_t line_size, uint64_t *dev_size)
{
	struct tc_cache_sb sb;

	if (!line_size_ok(line_size) || lines > UINT32_MAX)
		return -EINVAL;
	if (lines < TC_MIN_LINES)
		return -ENOSPC;
	uint64_t dev = lines * line_size;
	for (;;) {
		memset(&sb, 0, sizeof(sb));
		int r = tc_fmt_cache_geometry(dev, line_size, &sb);
		if (r == 0 && sb.nslots >= lines)
			break;
		dev += r == 0 && sb.nslots + 1 < lines ? (lines - sb.nslots) * line_size : line_size;
	}
	/* The step above may overshoot by the lines the metadata took: walk back while a
	 * line less still holds @lines. */
	while (dev > line_size) {
		memset(&sb, 0, sizeof(sb));
		if (tc_fmt_cache_geometry(dev - line_size, line_size, &sb) || sb.nslots < lines)
			break;
		dev -= line_size;
	}
	*dev_size = dev;
	return 0;
}
