/* SPDX-License-Identifier: MIT */
/*
 * sb.c - array member superblocks, creating arrays and assembling them from their
 * members (docs/raid.md: the format, the assembly rules).
 *
 * Every member (and every hot spare) starts with two copies of a 4 KiB superblock
 * naming the array (uuid, name), its geometry (level, chunk, copies, members, data
 * offset, member size), the member's role (a slot, or spare), an event counter, the
 * clean/dirty flag, the rebuild checkpoint and every slot's state.  The scheme is
 * Linux md's v1.x metadata (drivers/md/md.c, super_1_load / super_1_sync): the event
 * counter grows at every update, so a member that missed updates (it failed, or was
 * away) has an older count and is stale; the array is marked dirty while writes may
 * be in flight, and md's rule refuses a parity array that is both dirty and degraded,
 * since the parity of a stripe being written at the crash may not match its data and
 * rebuilding a lost chunk from it would corrupt data nobody was writing.
 *
 * Updates: a->persist (sb_persist) rewrites every active member's superblock (and the
 * spares') with the event counter one higher, copy 0 then copy 1, each FUA.  It is
 * called at assembly (the array becomes dirty when opened for writing), by the persist
 * thread after a member state change (array_sb_changed, from the I/O path, never
 * blocks), by the rebuild code, and at close (clean).  An array assembled read-only
 * writes nothing, ever.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <xxhash.h>

#include "raid.h"

/* ---- the codec ---------------------------------------------------------------------
 * Layout of one copy (little-endian; docs/raid.md has the same table):
 *   0 magic u32, 4 version u32, 8 level u32, 12 chunk u32, 16 copies u32,
 *   20 members u32, 24 role u32, 28 flags u32, 32 uuid[16], 48 member_uuid[16],
 *   64 name[32], 96 data_offset u64, 104 member_size u64, 112 events u64,
 *   120 rebuild_pos u64, 128 ctime u64, 136 utime u64, 144 rebuild_min u64,
 *   152 rebuild_max u64, 160 rebuild_priority u32, 164 rebuild_depth u32,
 *   168..255 reserved (zero),
 *   256 slot table: 32 x { uuid[16], state u32, reserved[12] },
 *   1280 replace table: 32 x old_uuid[16] (the member a slot's replace copies from),
 *   1792..4087 reserved, 4088 checksum u64 (XXH64, seed 0, of bytes 0..4087).
 */
#define OFF_SLOTS 256u
#define SLOT_SIZE 32u
#define OFF_RESERVED1 176u
#define OFF_OLD (OFF_SLOTS + TC_ARRAY_MAX_MEMBERS * SLOT_SIZE)
#define OFF_RESERVED2 (OFF_OLD + TC_ARRAY_MAX_MEMBERS * 16u)
#define OFF_CSUM (RAID_SB_SIZE - 8u)

#define put32 raid_put32
#define put64 raid_put64
#define get32 raid_get32
#define get64 raid_get64

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

void raid_sb_encode(const struct raid_sb *sb, void *out)
{
	uint8_t *b = out;

	memset(b, 0, RAID_SB_SIZE);
	put32(b + 0, RAID_SB_MAGIC);
	put32(b + 4, RAID_SB_VERSION);
	put32(b + 8, sb->level);
	put32(b + 12, sb->chunk);
	put32(b + 16, sb->copies);
	put32(b + 20, sb->members);
	put32(b + 24, sb->role);
	put32(b + 28, sb->flags);
	memcpy(b + 32, sb->uuid, 16);
	memcpy(b + 48, sb->member_uuid, 16);
	memcpy(b + 64, sb->name, strnlen(sb->name, TC_NAME_MAX - 1));
	put64(b + 96, sb->data_offset);
	put64(b + 104, sb->member_size);
	put64(b + 112, sb->events);
	put64(b + 120, sb->rebuild_pos);
	put64(b + 128, sb->ctime);
	put64(b + 136, sb->utime);
	put64(b + 144, sb->rebuild_min);
	put64(b + 152, sb->rebuild_max);
	put32(b + 160, sb->rebuild_priority);
	put32(b + 164, sb->rebuild_depth);
	put64(b + 168, sb->keep_since);
	for (unsigned i = 0; i < sb->members && i < TC_ARRAY_MAX_MEMBERS; i++) {
		uint8_t *s = b + OFF_SLOTS + i * SLOT_SIZE;
		memcpy(s, sb->slot[i].uuid, 16);
		put32(s + 16, sb->slot[i].state);
		put32(s + 20, sb->slot[i].flags);
		memcpy(b + OFF_OLD + i * 16, sb->slot[i].old_uuid, 16);
	}
	put64(b + OFF_CSUM, XXH64(b, OFF_CSUM, 0));
}

enum raid_sb_status raid_refuse(enum raid_sb_status st, char *why, size_t whylen,
				const char *prefix, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		int n = snprintf(why, whylen, "%s", prefix);
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < whylen)
			vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return st;
}

#define refuse(st, why, whylen, ...) \
	raid_refuse(st, why, whylen, "array superblock: ", __VA_ARGS__)

enum raid_sb_status raid_check_header(const void *buf, size_t len, uint32_t size,
				      uint32_t magic, uint32_t version, const char *prefix,
				      char *why, size_t whylen)
{
	const uint8_t *b = buf;

	if (len < size)
		return raid_refuse(RAID_SB_SHORT, why, whylen, prefix, "%zu bytes, not %u", len,
				   size);
	uint32_t got_magic = get32(b), got_version = get32(b + 4);
	if (got_magic != magic)
		return raid_refuse(RAID_SB_BAD_MAGIC, why, whylen, prefix,
				   "magic 0x%08x is not 0x%08x", got_magic, magic);
	if (got_version != version)
		return raid_refuse(RAID_SB_BAD_VERSION, why, whylen, prefix,
				   "version %u is not the supported version %u", got_version,
				   version);
	uint64_t stored = get64(b + size - 8), computed = XXH64(b, size - 8, 0);
	if (stored != computed)
		return raid_refuse(RAID_SB_BAD_CHECKSUM, why, whylen, prefix,
				   "checksum 0x%016" PRIx64 " does not match the contents (0x%016"
				   PRIx64 ")", stored, computed);
	return RAID_SB_OK;
}

/* The fewest members a level takes with @copies copies (tc_dev_new_array's rule). */
static unsigned level_min_members(uint32_t level, uint32_t copies)
{
	switch (level) {
	case TC_RAID5: return 3;
	case TC_RAID6: return 4;
	case TC_RAID10: return copies > 2 ? copies : 2;
	default: return 2;
	}
}

enum raid_sb_status raid_sb_decode(const void *buf, size_t len, struct raid_sb *sb,
				   char *why, size_t whylen)
{
	const uint8_t *b = buf;

	enum raid_sb_status hs = raid_check_header(b, len, RAID_SB_SIZE, RAID_SB_MAGIC,
						   RAID_SB_VERSION, "array superblock: ", why,
						   whylen);
	if (hs != RAID_SB_OK)
		return hs;

	struct raid_sb s;
	memset(&s, 0, sizeof(s));
	s.level = get32(b + 8);
	s.chunk = get32(b + 12);
	s.copies = get32(b + 16);
	s.members = get32(b + 20);
	s.role = get32(b + 24);
	s.flags = get32(b + 28);
	memcpy(s.uuid, b + 32, 16);
	memcpy(s.member_uuid, b + 48, 16);
	memcpy(s.name, b + 64, TC_NAME_MAX);
	s.data_offset = get64(b + 96);
	s.member_size = get64(b + 104);
	s.events = get64(b + 112);
	s.rebuild_pos = get64(b + 120);
	s.ctime = get64(b + 128);
	s.utime = get64(b + 136);
	s.rebuild_min = get64(b + 144);
	s.rebuild_max = get64(b + 152);
	s.rebuild_priority = get32(b + 160);
	s.rebuild_depth = get32(b + 164);
	s.keep_since = get64(b + 168);

	if (!tc_raid_level_name(s.level))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "level %u is not raid0, raid1, raid5, raid6 or raid10", s.level);
	if (s.chunk < TC_ARRAY_CHUNK_MIN || s.chunk > TC_ARRAY_CHUNK_MAX ||
	    (s.level == TC_RAID0 ? s.chunk % TC_ARRAY_CHUNK_MIN : s.chunk & (s.chunk - 1)))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "chunk %u is not a %s from %u to %u", s.chunk,
			      s.level == TC_RAID0 ? "multiple of 4096" : "power of two",
			      TC_ARRAY_CHUNK_MIN, TC_ARRAY_CHUNK_MAX);
	if (s.members > TC_ARRAY_MAX_MEMBERS ||
	    s.members < level_min_members(s.level, s.copies))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "members %u: %s takes %u to %u", s.members,
			      tc_raid_level_name(s.level),
			      level_min_members(s.level, s.copies), TC_ARRAY_MAX_MEMBERS);
	uint32_t want = s.level == TC_RAID1 ? s.members : 1;
	if (s.level == TC_RAID10 ? s.copies < 2 || s.copies > s.members : s.copies != want)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "copies %u for %s of %u members (%s)", s.copies,
			      tc_raid_level_name(s.level), s.members,
			      s.level == TC_RAID10 ? "2 to members" :
			      s.level == TC_RAID1 ? "must equal members" : "must be 1");
	if (s.role >= s.members && s.role != RAID_SB_ROLE_SPARE)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "role %u is neither a slot below %u nor spare (0x%08x)", s.role,
			      s.members, RAID_SB_ROLE_SPARE);
	if (s.flags & ~RAID_SB_FLAGS)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "flags 0x%08x has unknown bits",
			      s.flags);
	if (is_zero(s.uuid, 16))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "uuid is all zeros");
	if (is_zero(s.member_uuid, 16))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "member_uuid is all zeros");
	size_t nlen = strnlen(s.name, TC_NAME_MAX);
	if (nlen == TC_NAME_MAX)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "name is not NUL-terminated within %d bytes", TC_NAME_MAX);
	if (!tc_volume_name_valid(s.name))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "name \"%.*s\" is not a valid "
			      "array name", (int)nlen, s.name);
	if (!is_zero(s.name + nlen, TC_NAME_MAX - nlen))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "name \"%s\" has non-zero bytes after its terminator", s.name);
	if (s.data_offset % 4096 || s.data_offset < 2 * RAID_SB_SIZE)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "data_offset %" PRIu64 " is not a multiple of 4096 of at least %u",
			      s.data_offset, 2 * RAID_SB_SIZE);
	if (!s.member_size || s.member_size % s.chunk)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "member_size %" PRIu64 " is not a positive multiple of the chunk "
			      "(%u)", s.member_size, s.chunk);
	if (s.events == 0)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "events is 0 (the first write is 1)");
	if (s.rebuild_pos > s.member_size || s.rebuild_pos % 4096)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "rebuild_pos %" PRIu64 " is not a multiple of 4096 up to "
			      "member_size %" PRIu64, s.rebuild_pos, s.member_size);
	if (s.utime < s.ctime)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "utime %" PRIu64 " is before ctime %" PRIu64, s.utime, s.ctime);
	if (s.rebuild_min && s.rebuild_max && s.rebuild_min > s.rebuild_max)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "rebuild_min %" PRIu64 " is above rebuild_max %" PRIu64,
			      s.rebuild_min, s.rebuild_max);
	if (s.rebuild_priority > 100)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "rebuild_priority %u is not 0 to 100", s.rebuild_priority);
	if (s.rebuild_depth > 64)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "rebuild_depth %u is not 0 (the default) to 64", s.rebuild_depth);
	if ((s.keep_since != 0) != ((s.flags & RAID_SB_KEEPBITS) != 0) ||
	    s.keep_since > s.events || ((s.flags & RAID_SB_KEEPBITS) &&
					 !(s.flags & RAID_SB_BITMAP)))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "keep_since %" PRIu64 " does not go with flags %#x and events %"
			      PRIu64, s.keep_since, s.flags, s.events);
	if (!is_zero(b + OFF_RESERVED1, OFF_SLOTS - OFF_RESERVED1))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "reserved bytes %u..%u are not zero", OFF_RESERVED1, OFF_SLOTS - 1);
	for (unsigned i = 0; i < TC_ARRAY_MAX_MEMBERS; i++) {
		const uint8_t *p = b + OFF_SLOTS + i * SLOT_SIZE, *o = b + OFF_OLD + i * 16;
		if (i >= s.members) {
			if (!is_zero(p, SLOT_SIZE) || !is_zero(o, 16))
				return refuse(RAID_SB_BAD_FIELD, why, whylen,
					      "slot %u beyond the %u members is not zero", i,
					      s.members);
			continue;
		}
		memcpy(s.slot[i].uuid, p, 16);
		s.slot[i].state = get32(p + 16);
		if (is_zero(p, 16))
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u uuid is all zeros", i);
		if (s.slot[i].state != TC_MEMBER_ACTIVE && s.slot[i].state != TC_MEMBER_FAULTY &&
		    s.slot[i].state != TC_MEMBER_REBUILDING)
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u state %u is not active (0), faulty (1) or "
				      "rebuilding (3)", i, s.slot[i].state);
		s.slot[i].flags = get32(p + 20);
		if (s.slot[i].flags & ~RAID_SB_SLOT_READD)
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u flags %#x: unknown bits", i, s.slot[i].flags);
		if (s.slot[i].flags && (s.slot[i].state != TC_MEMBER_REBUILDING ||
					!is_zero(b + OFF_OLD + i * 16, 16)))
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u is marked re-added but is not rebuilding, or is "
				      "being replaced", i);
		if (!is_zero(p + 24, SLOT_SIZE - 24))
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u reserved bytes are not zero", i);
		memcpy(s.slot[i].old_uuid, o, 16);
		if (!is_zero(o, 16) && (s.slot[i].state != TC_MEMBER_REBUILDING ||
					!memcmp(o, p, 16)))
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u names a member being replaced but is not being "
				      "rebuilt by another", i);
	}
	/* The member being replaced in a slot carries that slot as its role too. */
	if (s.role != RAID_SB_ROLE_SPARE && memcmp(s.slot[s.role].uuid, s.member_uuid, 16) &&
	    memcmp(s.slot[s.role].old_uuid, s.member_uuid, 16))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "slot %u (this member's role) names another member", s.role);
	if (!is_zero(b + OFF_RESERVED2, OFF_CSUM - OFF_RESERVED2))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "reserved bytes %u..%u are not zero", OFF_RESERVED2, OFF_CSUM - 1);
	if (sb)
		*sb = s;
	return RAID_SB_OK;
}

static void *sb_alloc(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

int raid_sb_read(tc_dev *dev, struct raid_sb *sb, unsigned *ok, char *why, size_t whylen)
{
	uint8_t *buf;
	int best = -1, magic = 0;
	char why1[160];

	if (ok)
		*ok = 0;
	if (why && whylen)
		why[0] = 0;
	if (dev->size < 2 * RAID_SB_SIZE)
		return 0;
	buf = sb_alloc(2 * RAID_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	int r = tc_dev_pread(dev, buf, 2 * RAID_SB_SIZE, 0);
	if (r) {
		free(buf);
		return r;
	}
	for (int i = 0; i < 2; i++) {
		struct raid_sb tmp;
		const uint8_t *p = buf + i * RAID_SB_SIZE;
		magic |= get32(p) == RAID_SB_MAGIC;
		if (raid_sb_decode(p, RAID_SB_SIZE, &tmp, i ? why1 : why, i ? sizeof(why1)
				   : whylen) != RAID_SB_OK)
			continue;
		if (ok)
			(*ok)++;
		if (best < 0 || tmp.events > sb->events) {
			*sb = tmp;
			best = i;
		}
	}
	free(buf);
	if (best >= 0)
		return 1;
	return magic ? -EUCLEAN : 0;
}

int raid_sb_write(tc_dev *dev, const struct raid_sb *sb)
{
	uint8_t *buf = sb_alloc(RAID_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	raid_sb_encode(sb, buf);
	/* What the record vouches for first (md_super_write's REQ_PREFLUSH): a rebuild
	 * checkpoint says the rows below it are on the member, so the rebuild's writes
	 * there must be durable before it is. */
	int r = tc_dev_flush(dev);
	if (!r)
		r = tc_dev_pwrite(dev, buf, RAID_SB_SIZE, 0, TC_IO_FUA);
	if (!r)
		r = tc_dev_pwrite(dev, buf, RAID_SB_SIZE, RAID_SB_SIZE, TC_IO_FUA);
	free(buf);
	return r;
}

/* Zeros over both copies of @dev's member superblock, copy 0 first, each FUA: cut
 * between them, copy 1 still names the device (the removal did not happen). */
static int raid_sb_erase(tc_dev *dev)
{
	uint8_t *buf = sb_alloc(RAID_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0, RAID_SB_SIZE);
	int r = tc_dev_pwrite(dev, buf, RAID_SB_SIZE, 0, TC_IO_FUA);
	if (!r)
		r = tc_dev_pwrite(dev, buf, RAID_SB_SIZE, RAID_SB_SIZE, TC_IO_FUA);
	free(buf);
	return r;
}

static void uuid_generate(uint8_t uuid[16])
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
	if (got < 16) {          /* no getrandom: clocks and the pid tell formats apart */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t h[2] = { XXH64(&ts, sizeof(ts), (uint64_t)getpid()),
				  XXH64(&ts, sizeof(ts), (uint64_t)clock()) };
		memcpy(uuid, h, 16);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

static void uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
		 "%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
		 u[11], u[12], u[13], u[14], u[15]);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the array's superblock state and its persist thread ------------------------- */

/* A device the assembly left out (stale, replaced, faulty): named in the status. */
struct sb_left {
	char *name;
	unsigned slot;
	uint64_t events;                /* its superblock's */
	const char *why;                /* static text */
	bool back;                      /* added again since (spare, replacement) */
};

struct sb_priv {
	struct raid_sb sb;              /* the array's: slot table, events, flags */
	bool readonly;
	unsigned nleft;                 /* devices left out at assembly (tc_array_identity) */
	struct sb_left left[TC_ARRAY_MAX_EXTRA];
	pthread_mutex_t lock;           /* one superblock update at a time */
	/* The persist thread (threaded contexts of arrays opened for writing). */
	pthread_t thread;
	bool have_thread;
	pthread_mutex_t tlock;
	pthread_cond_t cond;
	bool pending, stop;
	/* Completions held until a member state change is on the members: under tlock. */
	atomic_bool holding;            /* read without tlock on the fast path */
	unsigned nheld, held_cap;
	struct sb_held { struct tc_io *io; int result; } *held;
	/* Deterministic contexts (one thread runs everything): sb_persist is writing, and
	 * a persist nested in its synchronous writes asked for another record. */
	bool writing, again;
	/* Deterministic contexts, opened for writing: a member state change queues this
	 * work item on the context, which records the change and then completes what
	 * was held, as the persist thread does (under tlock: queued; idle for the close
	 * to wait on). */
	bool det;
	struct tc_work work;
	bool queued;
	volatile bool idle;
	struct tc_array *a;
};

static bool uuid_zero(const uint8_t u[16])
{
	for (unsigned i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

/* The rebuild rates go into p->sb when they are set (the caller's thread, which
 * owns a->sync), never from the persist thread: the close frees a->sync while that
 * thread may still be writing (ThreadSanitizer saw it read a->sync there). */
void array_sb_keep_rates(struct tc_array *a)
{
	struct sb_priv *p = a->persist_priv;

	if (!p || !a->sync)
		return;
	struct tc_array_rebuild_opts ro;
	array_rebuild_get(a, &ro);
	pthread_mutex_lock(&p->lock);
	p->sb.rebuild_min = ro.min_rate;
	p->sb.rebuild_max = ro.max_rate;
	p->sb.rebuild_priority = ro.priority;
	p->sb.rebuild_depth = ro.depth;
	pthread_mutex_unlock(&p->lock);
}

/* Write every active and rebuilding member's superblock, and the spares', with the
 * event counter one higher.  Caller holds p->lock. */
static int sb_write_all(struct tc_array *a, struct sb_priv *p)
{
	int first = 0;
	unsigned written = 0;

	p->sb.events++;
	p->sb.utime = now_ns();
	if (p->sb.utime < p->sb.ctime)
		p->sb.utime = p->sb.ctime;
	p->sb.rebuild_pos = atomic_load(&a->rebuild_pos) / 4096 * 4096;
	if (p->sb.rebuild_pos > p->sb.member_size)
		p->sb.rebuild_pos = p->sb.member_size;
	/* The slots and the hot spares as rebuild.c holds them now (a spare that took a
	 * slot brings its member uuid along; a device new to the array gets one). */
	/* The hot spares, then the pending members (written as spares, see below). */
	tc_dev *spare[TC_ARRAY_MAX_EXTRA + TC_ARRAY_MAX_MEMBERS];
	uint8_t spare_uuid[TC_ARRAY_MAX_EXTRA + TC_ARRAY_MAX_MEMBERS][16];
	unsigned nspares;
	tc_dev *slot_dev[TC_ARRAY_MAX_MEMBERS], *old_dev[TC_ARRAY_MAX_MEMBERS];
	tc_dev *pend_dev[TC_ARRAY_MAX_MEMBERS];
	uint8_t pend_uuid[TC_ARRAY_MAX_MEMBERS][16];
	pthread_mutex_lock(&a->lock);
	for (unsigned i = 0; i < a->n; i++) {
		int st = atomic_load(&a->m[i].state);
		struct array_disk *d = atomic_load(&a->m[i].disk);
		/* One checkpoint describes every member recorded rebuilding: a pending one
		 * (taken over during a pass, rebuilt in the next) holds no valid row below
		 * it, so it is recorded as what it is to a restart, a hot spare, and its
		 * slot faulty: the assembly gives it the slot back and it waits for the
		 * next pass again (seeds 17 and 40 of tc-stress --arrays: recorded
		 * rebuilding, its rows below the checkpoint read as zeros after a restart;
		 * a checkpoint of 0 instead would undo a replace's copy, seed 192). */
		pend_dev[i] = NULL;
		if (st == TC_MEMBER_REBUILDING && atomic_load(&a->m[i].pending) && d) {
			if (uuid_zero(d->uuid))
				uuid_generate(d->uuid);
			pend_dev[i] = d->dev;
			memcpy(pend_uuid[i], d->uuid, 16);
			st = TC_MEMBER_FAULTY;
		}
		p->sb.slot[i].state = st == TC_MEMBER_REBUILDING ? TC_MEMBER_REBUILDING
			: st == TC_MEMBER_ACTIVE ? TC_MEMBER_ACTIVE : TC_MEMBER_FAULTY;
		p->sb.slot[i].flags = st == TC_MEMBER_REBUILDING &&
				      atomic_load(&a->m[i].readd) ? RAID_SB_SLOT_READD : 0;
		slot_dev[i] = d ? d->dev : NULL;
		if (d && p->sb.slot[i].state != TC_MEMBER_FAULTY) {
			if (uuid_zero(d->uuid))
				uuid_generate(d->uuid);
			memcpy(p->sb.slot[i].uuid, d->uuid, 16);
		}
		/* A replace under way: the old member keeps its superblock, with the slot
		 * as its role, so that an assembly keeps it serving the rows the successor
		 * does not hold yet (md's replacement; seed 8 of tc-stress --arrays). */
		struct array_disk *od = atomic_load(&a->m[i].old);
		old_dev[i] = NULL;
		memset(p->sb.slot[i].old_uuid, 0, 16);
		if (od && st == TC_MEMBER_REBUILDING && !atomic_load(&a->m[i].old_failed) &&
		    !uuid_zero(od->uuid)) {
			old_dev[i] = od->dev;
			memcpy(p->sb.slot[i].old_uuid, od->uuid, 16);
		}
	}
	nspares = a->nspares;
	for (unsigned k = 0; k < nspares; k++) {
		if (uuid_zero(a->spare[k]->uuid))
			uuid_generate(a->spare[k]->uuid);
		spare[k] = a->spare[k]->dev;
		memcpy(spare_uuid[k], a->spare[k]->uuid, 16);
	}
	for (unsigned i = 0; i < a->n; i++)
		if (pend_dev[i]) {
			spare[nspares] = pend_dev[i];
			memcpy(spare_uuid[nspares++], pend_uuid[i], 16);
		}
	pthread_mutex_unlock(&a->lock);
	/* The rows a rebuild or a replace copied sit in the members' write caches until
	 * a FLUSH: the record that says they are there (the checkpoint, a member now
	 * active) goes only to members whose writes are durable first (test_array_cut:
	 * spare takeover cut after 24 requests, the rebuilt rows below the checkpoint
	 * lost).  A member whose flush fails is not written: its record stays behind. */
	bool flushed[TC_ARRAY_MAX_MEMBERS];
	for (unsigned i = 0; i < a->n; i++) {
		flushed[i] = false;
		if (p->sb.slot[i].state == TC_MEMBER_FAULTY || !slot_dev[i])
			continue;
		int r = tc_dev_flush(slot_dev[i]);
		if (r)
			tc_err(a->dev.ctx, "array %s: member %u (%s): flush before the superblock "
			       "update failed: %s", a->dev.name, i, slot_dev[i]->name,
			       strerror(-r));
		else
			flushed[i] = true;
		if (r && !first)
			first = r;
	}
	/* The slots a device took in this record (rebuilding: a spare that took over, a
	 * replace's successor) first: a member holding the newer record then implies the
	 * new device holds it too, so an assembly of a cut update finds the successor
	 * named in the slot table (test_array_cut: replace cut after 2 requests, the
	 * record on member 0 only, the successor blank and the slot left empty). */
	for (unsigned pass = 0; pass < 2; pass++)
	for (unsigned i = 0; i < a->n; i++) {
		if (p->sb.slot[i].state == TC_MEMBER_FAULTY || !flushed[i])
			continue;
		if ((p->sb.slot[i].state == TC_MEMBER_REBUILDING) != (pass == 0))
			continue;
		struct raid_sb s = p->sb;
		s.role = i;
		memcpy(s.member_uuid, s.slot[i].uuid, 16);
		if (!slot_dev[i])
			continue;
		int r = raid_sb_write(slot_dev[i], &s);
		if (r) {
			tc_err(a->dev.ctx, "array %s: member %u (%s): superblock write failed: %s",
			       a->dev.name, i, slot_dev[i]->name, strerror(-r));
			if (!first)
				first = r;
		} else {
			written++;
		}
		if (old_dev[i]) {
			memcpy(s.member_uuid, s.slot[i].old_uuid, 16);
			r = raid_sb_write(old_dev[i], &s);
			if (r)
				tc_err(a->dev.ctx, "array %s: member %u being replaced (%s): "
				       "superblock write failed: %s", a->dev.name, i,
				       old_dev[i]->name, strerror(-r));
		}
	}
	for (unsigned i = 0; i < nspares; i++) {
		struct raid_sb s = p->sb;
		s.role = RAID_SB_ROLE_SPARE;
		memcpy(s.member_uuid, spare_uuid[i], 16);
		int r = raid_sb_write(spare[i], &s);
		if (r && !first)
			first = r;
	}
	return written ? 0 : first ? first : -EIO;
}

static int sb_persist(struct tc_array *a)
{
	struct sb_priv *p = a->persist_priv;

	if (p->readonly)
		return -EROFS;
	if (tc_ctx_deterministic(a->dev.ctx)) {
		/* The context runs timers while a synchronous write waits, the rebuild's
		 * checkpoint among them: a persist nested in this one's writes would take
		 * p->lock twice on one thread.  It leaves the record to the running one,
		 * which writes again with the newer state. */
		if (p->writing) {
			p->again = true;
			return 0;
		}
		int r;
		p->writing = true;
		do {
			p->again = false;
			pthread_mutex_lock(&p->lock);
			r = sb_write_all(a, p);
			pthread_mutex_unlock(&p->lock);
		} while (p->again && r == 0);
		p->writing = false;
		return r;
	}
	pthread_mutex_lock(&p->lock);
	int r = sb_write_all(a, p);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* Complete what was held (caller holds tlock, which is dropped meanwhile). */
static void sb_release(struct tc_array *a, struct sb_priv *p)
{
	struct sb_held *h = p->held;
	unsigned n = p->nheld;

	p->held = NULL;
	p->nheld = p->held_cap = 0;
	atomic_store(&p->holding, false);
	pthread_mutex_unlock(&p->tlock);
	for (unsigned i = 0; i < n; i++)
		tc_dev_complete(&a->dev, h[i].io, h[i].result);
	free(h);
	pthread_mutex_lock(&p->tlock);
}

/* One record of the pending change (caller holds tlock, dropped meanwhile), then
 * the completions held for it; after another change meanwhile, what is held waits
 * for that record too. */
static void sb_record(struct tc_array *a, struct sb_priv *p)
{
	p->pending = false;
	pthread_mutex_unlock(&p->tlock);
	(void)sb_persist(a);
	pthread_mutex_lock(&p->tlock);
	if (!p->pending)
		sb_release(a, p);
}

static void *sb_thread(void *arg)
{
	struct tc_array *a = arg;
	struct sb_priv *p = a->persist_priv;

	pthread_mutex_lock(&p->tlock);
	for (;;) {
		while (!p->pending && !p->stop)
			pthread_cond_wait(&p->cond, &p->tlock);
		if (!p->pending && p->stop)
			break;
		sb_record(a, p);
	}
	sb_release(a, p);
	pthread_mutex_unlock(&p->tlock);
	return NULL;
}

/* The deterministic contexts' persist thread: record, then complete what was held;
 * again while changes came meanwhile. */
static void sb_work(struct tc_work *w)
{
	struct sb_priv *p = (struct sb_priv *)((char *)w - offsetof(struct sb_priv, work));
	struct tc_array *a = p->a;

	pthread_mutex_lock(&p->tlock);
	while (p->pending)
		sb_record(a, p);
	p->queued = false;
	__atomic_store_n(&p->idle, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->tlock);
	tc_ctx_wake(a->dev.ctx);
}

int array_sb_forget(struct tc_array *a, tc_dev *dev)
{
	struct sb_priv *p = a->persist_priv;

	if (!p || p->readonly)
		return 0;
	/* A superblock update under way took the spares before the removal and may still
	 * write this one's: wait for it (threaded contexts; a deterministic one runs
	 * updates only inside its own polls, which are not running now). */
	bool det = tc_ctx_deterministic(a->dev.ctx);
	if (!det)
		pthread_mutex_lock(&p->lock);
	int r = raid_sb_erase(dev);
	if (!det)
		pthread_mutex_unlock(&p->lock);
	return r;
}

void array_sb_left_back(struct tc_array *a, const tc_dev *dev)
{
	struct sb_priv *p = a->persist_priv;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < p->nleft; i++)
		if (!strcmp(p->left[i].name, dev->name))
			p->left[i].back = true;
	pthread_mutex_unlock(&p->lock);
}

bool array_sb_hold(struct tc_array *a, struct tc_io *io, int result)
{
	struct sb_priv *p = a->persist_priv;
	bool held = false;

	if (!p || !(p->have_thread || p->det) || !atomic_load(&p->holding))
		return false;
	pthread_mutex_lock(&p->tlock);
	if (atomic_load(&p->holding)) {
		if (p->nheld == p->held_cap) {
			unsigned cap = p->held_cap ? 2 * p->held_cap : 64;
			struct sb_held *n = realloc(p->held, cap * sizeof(*n));
			if (n) {
				p->held = n;
				p->held_cap = cap;
			}
		}
		if (p->nheld < p->held_cap) {
			p->held[p->nheld++] = (struct sb_held){ io, result };
			held = true;
		}
	}
	pthread_mutex_unlock(&p->tlock);
	return held;
}

bool array_sb_changed(struct tc_array *a)
{
	struct sb_priv *p = a->persist_priv;

	if (!p || !(p->have_thread || p->det))
		return false;   /* read-only */
	pthread_mutex_lock(&p->tlock);
	p->pending = true;
	atomic_store(&p->holding, true);
	if (p->have_thread) {
		pthread_cond_signal(&p->cond);
	} else if (!p->queued) {
		p->queued = true;
		__atomic_store_n(&p->idle, false, __ATOMIC_RELEASE);
		tc_ctx_defer(a->dev.ctx, &p->work);
	}
	pthread_mutex_unlock(&p->tlock);
	return true;
}

void array_sb_close(struct tc_array *a)
{
	struct sb_priv *p = a->persist_priv;

	if (!p)
		return;
	bool map_clean = false;
	if (p->have_thread) {
		pthread_mutex_lock(&p->tlock);
		p->stop = true;
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->tlock);
		pthread_join(p->thread, NULL);
	}
	if (p->det) {
		/* A change still to record: its work item runs (and ends) first. */
		pthread_mutex_lock(&p->tlock);
		bool queued = p->queued;
		pthread_mutex_unlock(&p->tlock);
		if (queued)
			(void)tc_ctx_wait_until(a->dev.ctx, &p->idle);
		p->det = false;
	}
	if (!p->readonly && !array_failed(a)) {
		/* Clean close (md's clean shutdown): what was written is durable, then the
		 * flag goes. */
		bool flushed = true;
		for (unsigned i = 0; i < a->n; i++)
			if (array_member_active(a, i) && tc_dev_flush(a->m[i].dev))
				flushed = false;
		/* A resync that has not ended (a mirror's copies, the map's regions)
		 * leaves the array dirty and the map as it is, so that the next assembly
		 * resyncs again.  Clearing the map here let that assembly resync nothing
		 * and then read a stale copy (tc-stress --arrays --write-hole seed 154: a
		 * RAID 10 whose resync waited for a rebuild that could not run). */
		bool pending = atomic_load(&a->unsynced) || raid_map_resync_pending(a);
		/* Else the write-intent map all clear, before the superblocks say clean. */
		raid_map_close(a, flushed && !pending);
		map_clean = true;
		pthread_mutex_lock(&p->lock);
		if (flushed && !pending)
			p->sb.flags &= ~RAID_SB_DIRTY;
		(void)sb_write_all(a, p);
		pthread_mutex_unlock(&p->lock);
	}
	if (!map_clean)
		raid_map_close(a, false);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->tlock);
	pthread_cond_destroy(&p->cond);
	a->persist = NULL;
	a->persist_priv = NULL;
	for (unsigned i = 0; i < p->nleft; i++)
		free(p->left[i].name);
	free(p);
}

/* The region map (write-intent and written planes) and the partial-parity log of @a,
 * after @sb's flags; @live: the members to read the map from (NULL at create), its
 * write-intent plane too when @dirty (stopped uncleanly).  *@resync: regions to
 * resync. */
static int array_consistency_attach(struct tc_array *a, const struct raid_sb *sb,
				    tc_dev *const *live, bool dirty, bool readonly,
				    uint64_t *resync)
{
	unsigned planes = (sb->flags & RAID_SB_BITMAP ? RAID_MAP_INTENT : 0) |
			  (sb->flags & RAID_SB_WRITTEN ? RAID_MAP_WRITTEN : 0);
	int r = 0;

	if (resync)
		*resync = 0;
	if (planes) {
		r = raid_map_attach(a, sb->uuid, planes, live, dirty, readonly, resync);
		/* Read-only (an inspection, maybe of an array a server has open): nothing
		 * is resynced, so nothing to say. */
		if (!r && resync && *resync && !readonly)
			tc_warn(a->dev.ctx, "array %s: not shut down cleanly: %" PRIu64 " regions "
				"of the write-intent map to resync", a->dev.name, *resync);
	}
	if (!r && (sb->flags & RAID_SB_PPL)) {
		r = array_ppl_enable(a, sb->uuid);
		if (r)
			raid_map_close(a, false);
	}
	return r;
}

/* ---- placeholders for missing members ------------------------------------------- */

static void missing_submit(struct tc_dev *dev, struct tc_io *io)
{
	tc_dev_complete_later(dev, io, -ENXIO);
}

static void missing_close(struct tc_dev *dev)
{
	tc_dev_fini(dev);
	free(dev);
}

static const struct tc_dev_ops missing_ops = {
	.name = "missing",
	.submit = missing_submit,
	.close = missing_close,
};

static int missing_new(tc_ctx *ctx, unsigned slot, uint64_t size, uint32_t lbs,
		       tc_dev **out)
{
	struct tc_dev *d = calloc(1, sizeof(*d));
	char name[32];

	if (!d)
		return -ENOMEM;
	snprintf(name, sizeof(name), "missing:slot%u", slot);
	int r = tc_dev_init(d, &missing_ops, ctx, name, size, lbs);
	if (r) {
		free(d);
		return r;
	}
	*out = d;
	return 0;
}

/* ---- create ----------------------------------------------------------------------- */

static void close_all(tc_dev **devs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (devs[i])
			tc_dev_close(devs[i]);
}

/* The same device twice: by name, or by the file behind it. */
static bool same_dev(tc_dev *x, tc_dev *y)
{
	if (!strcmp(x->name, y->name))
		return true;
	const char *px = tc_dev_spec_path(x->name), *py = tc_dev_spec_path(y->name);
	struct stat sx, sy;
	return px && py && stat(px, &sx) == 0 && stat(py, &sy) == 0 &&
	       sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
}

/* Refuse @d (role @what) unless it holds nothing or @force. */
static int create_check_dev(tc_ctx *ctx, tc_dev *d, const char *what, bool force)
{
	struct raid_sb sb;
	char why[160], u[37];
	int r = raid_sb_read(d, &sb, NULL, why, sizeof(why));

	if (r < 0 && r != -EUCLEAN) {
		tc_err(ctx, "array: %s %s: cannot be read: %s", what, d->name, strerror(-r));
		return r;
	}
	if (r == 1 && !force) {
		uuid_str(sb.uuid, u);
		tc_err(ctx, "array: %s %s belongs to array \"%s\" (uuid %s); give --force to "
		       "reuse it", what, d->name, sb.name, u);
		return -EBUSY;
	}
	if (r == -EUCLEAN && !force) {
		tc_err(ctx, "array: %s %s holds a damaged array superblock (%s); give --force "
		       "to reuse it", what, d->name, why);
		return -EBUSY;
	}
	if (r != 0)
		return 0;
	struct tc_probe p;
	r = tc_dev_probe(ctx, d, &p);
	if (r)
		return r;
	if (p.kind == TC_PROBE_EMPTY || force)
		return 0;
	if (p.kind == TC_PROBE_UNKNOWN && !strstr(p.what, "damaged"))
		return 0;       /* data, but no signature of anything: as mdadm, allowed */
	if (p.kind == TC_PROBE_BACKING)
		tc_err(ctx, "array: %s %s holds the tiercache backing of volume \"%s\"; give "
		       "--force to reuse it", what, d->name, p.name);
	else if (p.kind == TC_PROBE_CACHE)
		tc_err(ctx, "array: %s %s holds tiercache cache %s; give --force to reuse it",
		       what, d->name, p.uuid);
	else
		tc_err(ctx, "array: %s %s holds %s; give --force to reuse it", what, d->name,
		       p.what);
	return -EBUSY;
}

static int sb_attach(struct tc_array *a, const struct raid_sb *sb, bool readonly)
{
	struct sb_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sb = *sb;
	p->readonly = readonly;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->tlock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (unsigned i = 0; i < a->n; i++) {
		struct array_disk *d = atomic_load(&a->m[i].disk);
		if (d)
			memcpy(d->uuid, sb->slot[i].uuid, 16);
	}
	p->a = a;
	p->work.fn = sb_work;
	__atomic_store_n(&p->idle, true, __ATOMIC_RELEASE);
	a->persist_priv = p;
	a->persist = sb_persist;
	if (!readonly && tc_ctx_deterministic(a->dev.ctx))
		p->det = true;
	else if (!readonly && pthread_create(&p->thread, NULL, sb_thread, a) == 0)
		p->have_thread = true;
	return 0;
}

int tc_array_create(tc_ctx *ctx, const char *name, const struct tc_array_opts *o,
		    tc_dev **members, unsigned n, tc_dev **spares, unsigned nspares,
		    unsigned flags, tc_dev **out)
{
	const struct tc_raid_level *l;
	uint32_t chunk;
	unsigned copies;
	bool force = flags & TC_ARRAY_FORCE;
	int r;

	*out = NULL;
	if (!name || !tc_volume_name_valid(name)) {
		tc_err(ctx, "array: name \"%s\" is not valid (1-%d characters of "
		       "[A-Za-z0-9._-], not \".\", \"..\" or starting with '-')",
		       name ? name : "", TC_NAME_MAX - 1);
		r = -EINVAL;
		goto fail;
	}
	if (n > TC_ARRAY_MAX_MEMBERS || nspares > TC_ARRAY_MAX_MEMBERS - n) {
		tc_err(ctx, "array %s: %u members and %u spares: at most %u devices", name, n,
		       nspares, TC_ARRAY_MAX_MEMBERS);
		r = -EINVAL;
		goto fail;
	}
	r = array_check(ctx, o, members, n, &l, &chunk, &copies);
	if (r)
		goto fail;
	tc_dev *all[2 * TC_ARRAY_MAX_MEMBERS];
	unsigned nall = 0;
	for (unsigned i = 0; i < n; i++)
		all[nall++] = members[i];
	for (unsigned i = 0; i < nspares; i++) {
		if (!spares[i]) {
			tc_err(ctx, "array %s: spare %u is missing (NULL)", name, i);
			r = -EINVAL;
			goto fail;
		}
		if (spares[i]->lbs != members[0]->lbs) {
			tc_err(ctx, "array %s: spare %s has block size %" PRIu32 ", the members "
			       "%" PRIu32, name, spares[i]->name, spares[i]->lbs, members[0]->lbs);
			r = -EINVAL;
			goto fail;
		}
		all[nall++] = spares[i];
	}
	for (unsigned i = 0; i < nall; i++)
		for (unsigned j = i + 1; j < nall; j++)
			if (same_dev(all[i], all[j])) {
				tc_err(ctx, "array %s: device %s is given twice%s%s", name,
				       all[j]->name, strcmp(all[i]->name, all[j]->name) ?
				       " (also as " : "", strcmp(all[i]->name, all[j]->name) ?
				       all[i]->name : "");
				if (strcmp(all[i]->name, all[j]->name))
					tc_err(ctx, "array %s: (the same file as %s)", name,
					       all[i]->name);
				r = -EINVAL;
				goto fail;
			}
	/* Over parity arrays (RAID 50 / 60), the data starts on the legs' stripe grid, so
	 * that every outer chunk is whole leg stripes (array.c: the array's limits). */
	uint64_t doff = RAID_SB_DATA_OFFSET;
	struct tc_dev_limits ml;
	tc_dev_limits(members[0], &ml);
	if (l->id == TC_RAID0 && ml.partial_stripe_expensive && ml.io_opt)
		doff = (doff + ml.io_opt - 1) / ml.io_opt * ml.io_opt;
	uint64_t smallest = UINT64_MAX, largest = 0, need = doff + chunk;
	for (unsigned i = 0; i < n; i++) {
		if (members[i]->size < need) {
			tc_err(ctx, "array %s: member %s of %" PRIu64 " bytes is too small: "
			       "it needs %" PRIu64 " (%" PRIu64 " bytes before the data and one "
			       "chunk)", name, members[i]->name, members[i]->size, need, doff);
			r = -EINVAL;
			goto fail;
		}
		if (members[i]->size < smallest)
			smallest = members[i]->size;
		if (members[i]->size > largest)
			largest = members[i]->size;
	}
	uint64_t member_size = (smallest - doff) / chunk * chunk;
	for (unsigned i = 0; i < nspares; i++)
		if (spares[i]->size < doff + member_size) {
			tc_err(ctx, "array %s: spare %s of %" PRIu64 " bytes is smaller than a "
			       "member (%" PRIu64 " bytes needed)", name, spares[i]->name,
			       spares[i]->size, doff + member_size);
			r = -EINVAL;
			goto fail;
		}
	for (unsigned i = 0; i < nall; i++) {
		r = create_check_dev(ctx, all[i], i < n ? "member" : "spare", force);
		if (r)
			goto fail;
	}
	if (largest != smallest)
		tc_warn(ctx, "array %s: members of different sizes (%" PRIu64 " to %" PRIu64
			" bytes): %" PRIu64 " bytes of each are used, as on the smallest", name,
			smallest, largest, member_size);

	/* Nothing refused: from here on the devices are written. */
	struct raid_sb sb;
	memset(&sb, 0, sizeof(sb));
	sb.level = l->id;
	sb.chunk = chunk;
	sb.copies = copies;
	sb.members = n;
	uuid_generate(sb.uuid);
	snprintf(sb.name, sizeof(sb.name), "%s", name);
	sb.data_offset = doff;
	sb.member_size = member_size;
	sb.ctime = sb.utime = now_ns();
	if (l->parity) {
		/* The consistency policy (docs/raid.md, "The write hole"). */
		bool fits = raid_ppl_slots(chunk, l->parity) > 0;
		if (o->consistency == TC_CONSISTENCY_PPL && !fits) {
			tc_err(ctx, "array %s: chunk %u is too large for the partial-parity log "
			       "(%u MiB per member holds not one entry); use "
			       "--consistency-policy=bitmap", name, chunk, RAID_PPL_AREA >> 20);
			r = -EINVAL;
			goto fail;
		}
		sb.flags |= o->consistency == TC_CONSISTENCY_BITMAP || !fits ? RAID_SB_BITMAP
			: RAID_SB_PPL;
	} else if (copies > 1) {
		/* A mirror: the write-intent map (md's internal bitmap), so that a resync
		 * after a crash copies the regions written lately, not the whole array. */
		if (o->consistency == TC_CONSISTENCY_PPL) {
			tc_err(ctx, "array %s: the partial-parity log is for RAID 5 and 6; a %s "
			       "keeps its copies consistent with the write-intent map "
			       "(--consistency-policy=bitmap, the default)", name, l->name);
			r = -EINVAL;
			goto fail;
		}
		sb.flags |= RAID_SB_BITMAP;
	} else if (o->consistency != TC_CONSISTENCY_DEFAULT) {
		tc_err(ctx, "array %s: %s has no redundancy to keep consistent; "
		       "--consistency-policy does not apply", name, l->name);
		r = -EINVAL;
		goto fail;
	}
	/* The write-intent map keeps its bits while degraded, from the start. */
	if (sb.flags & RAID_SB_BITMAP) {
		sb.flags |= RAID_SB_KEEPBITS;
		sb.keep_since = 1;
	}
	/* The regions ever written (wimap.c): a rebuild writes zeros to the others. */
	if (copies * (l->parity + 1) > 1 && !(flags & TC_ARRAY_ALL_WRITTEN))
		sb.flags |= RAID_SB_WRITTEN;
	for (unsigned i = 0; i < n; i++)
		uuid_generate(sb.slot[i].uuid);
	uint8_t spare_uuid[TC_ARRAY_MAX_MEMBERS][16];
	for (unsigned i = 0; i < nspares; i++)
		uuid_generate(spare_uuid[i]);
	/* The data areas start as zeros, so parity and copies agree from the first
	 * write (md resyncs instead; WRITE_ZEROES is a hole punch on sparse files). */
	if (!(flags & TC_ARRAY_ASSUME_CLEAN) && copies * (l->parity + 1) > 1)
		for (unsigned i = 0; i < n && !r; i++) {
			r = tc_dev_io(members[i], TC_OP_WRITE_ZEROES, 0, NULL, member_size,
				      doff);
			if (r)
				tc_err(ctx, "array %s: member %s: zeroing the data area failed: %s",
				       name, members[i]->name, strerror(-r));
		}
	/* The metadata area below the data (an old cache's superblock copy at 8 KiB
	 * would outlive ours), and our own older superblocks at the start of the data
	 * area (a backing's, a cache's), which would otherwise show through on the new
	 * array; not with TC_ARRAY_ASSUME_CLEAN, which may re-create an array over its
	 * own members (mdadm's --assume-clean): their data, a backing's superblock
	 * first, is what the new array is to hold. */
	for (unsigned i = 0; i < nall && !r; i++) {
		uint64_t len = member_size < 65536 ? member_size : 65536;
		r = tc_dev_io(all[i], TC_OP_WRITE_ZEROES, 0, NULL,
			      RAID_SB_DATA_OFFSET - 2 * RAID_SB_SIZE, 2 * RAID_SB_SIZE);
		if (!r && i < n && !(flags & TC_ARRAY_ASSUME_CLEAN))
			r = tc_dev_io(all[i], TC_OP_WRITE_ZEROES, 0, NULL, len, doff);
		if (r)
			tc_err(ctx, "array %s: %s: zeroing the metadata area failed: %s", name,
			       all[i]->name, strerror(-r));
	}
	for (unsigned i = 0; i < nall && !r; i++) {
		struct raid_sb s = sb;
		s.events = 1;
		s.role = i < n ? i : RAID_SB_ROLE_SPARE;
		memcpy(s.member_uuid, i < n ? sb.slot[i].uuid : spare_uuid[i - n], 16);
		r = raid_sb_write(all[i], &s);
		if (r)
			tc_err(ctx, "array %s: %s: superblock write failed: %s", name, all[i]->name,
			       strerror(-r));
	}
	if (r)
		goto fail;
	sb.events = 1;
	char u[37];
	uuid_str(sb.uuid, u);
	tc_info(ctx, "array %s: created, %s of %u members (%u spares), chunk %u, uuid %s",
		name, l->name, n, nspares, chunk, u);
	tc_dev *dev;
	r = array_open(ctx, o, members, n, name, doff, member_size, &dev);
	members = NULL;         /* array_open owns them now */
	if (r)
		goto fail;
	r = sb_attach((struct tc_array *)dev, &sb, false);
	if (!r)
		r = array_consistency_attach((struct tc_array *)dev, &sb, NULL, false, false,
					     NULL);
	if (r) {
		tc_dev_close(dev);
		goto fail;
	}
	/* The spares join rebuild.c's list, each with its member uuid. */
	for (unsigned i = 0; i < nspares; i++) {
		tc_dev *sp = spares[i];
		spares[i] = NULL;
		r = array_spare_add((struct tc_array *)dev, sp, spare_uuid[i], true);
		if (r) {
			tc_dev_close(dev);
			for (unsigned j = i + 1; j < nspares; j++)
				tc_dev_close(spares[j]);
			return r;
		}
	}
	/* In use from now on: dirty until closed. */
	struct sb_priv *sp = ((struct tc_array *)dev)->persist_priv;
	pthread_mutex_lock(&sp->lock);     /* the persist thread may be writing already */
	sp->sb.flags |= RAID_SB_DIRTY;
	pthread_mutex_unlock(&sp->lock);
	r = sb_persist((struct tc_array *)dev);
	if (r) {
		tc_dev_close(dev);
		return r;
	}
	*out = dev;
	return 0;
fail:
	if (members)
		close_all(members, n);
	if (spares)
		close_all(spares, nspares);
	return r;
}

/* ---- assemble --------------------------------------------------------------------- */

/* Record device @name (slot @slot, its superblock's @events) as left out for @why;
 * past TC_ARRAY_MAX_EXTRA (or out of memory) it is only in the log. */
static void sb_left_add(struct sb_left *left, unsigned *nleft, const char *name,
			unsigned slot, uint64_t events, const char *why)
{
	if (*nleft == TC_ARRAY_MAX_EXTRA)
		return;
	char *copy = strdup(name);
	if (!copy)
		return;
	left[(*nleft)++] = (struct sb_left){ copy, slot, events, why, false };
}

/* Levels whose forced assembly takes stale members back (md's --force): the
 * redundant ones, RAID 1, 10, 5 and 6. */
static bool stale_takeback_level(const struct raid_sb *R)
{
	return R->level != TC_RAID0;
}

/* Whether the array of *@R can start with the members @slot_dev (NULL: missing;
 * recorded faulty counts as missing): RAID 1, 5 and 6 by how many are missing;
 * RAID 10 (md's near layout, raid10.c) as long as every copy set keeps a member
 * (array_near_redundancy's rule, on the slot table before the array exists);
 * RAID 0 with all.  Also how many are missing and which, into @missing and
 * @list (may be NULL). */
/* Whether member slot @s of a RAID 10 lies in a copy set none of whose members is
 * present (in @gone: missing or faulty), i.e. taking it back helps the array start. */
static bool near_slot_needed(const struct raid_sb *R, uint32_t gone, unsigned s)
{
	return raid_near_redundancy(R->members, R->copies, gone, s) < 0;
}

static bool enough_members(const struct raid_sb *R, tc_dev *const *slot_dev,
			   unsigned *missing, char *list, size_t listlen)
{
	unsigned n = R->members, k = 0;
	uint32_t gone = 0;
	if (list && listlen)
		list[0] = '\0';
	for (unsigned s = 0; s < n; s++)
		if (!slot_dev[s] || R->slot[s].state == TC_MEMBER_FAULTY) {
			gone |= 1u << s;
			if (list) {
				size_t used = strlen(list);
				snprintf(list + used, listlen - used, "%s%u", k ? ", " : "", s);
			}
			k++;
		}
	if (missing)
		*missing = k;
	switch (R->level) {
	case TC_RAID1: return k < n;
	case TC_RAID5: return k <= 1;
	case TC_RAID6: return k <= 2;
	case TC_RAID10:
		return raid_near_redundancy(n, R->copies, gone, n) >= 0;
	default: return k == 0;
	}
}

/* Leave the stale member *@dev (slot @slot, event count @events) out after all, as
 * an unforced assembly does; closes it. */
static void stale_leave(tc_ctx *ctx, const struct raid_sb *R, struct sb_left *left,
			unsigned *nleft, tc_dev **dev, unsigned slot, uint64_t events)
{
	const char *why = events + 1 < R->events ? "stale" : "marked faulty by the array";
	tc_warn(ctx, "array %s: member %s (slot %u) is %s: its event count %" PRIu64 " is "
		"%s the array's %" PRIu64 "; it is left out and the array runs without it",
		R->name, (*dev)->name, slot, why, events,
		events < R->events ? "older than" : "equal to", R->events);
	sb_left_add(left, nleft, (*dev)->name, slot, events, why);
	tc_dev_close(*dev);
	*dev = NULL;
}

/*
 * A forced assembly of an array that cannot start with its current members: take
 * back stale ones (an older event count, or recorded faulty: the last to fail is
 * usually both), the freshest first (the highest event count: it missed the fewest
 * updates), until no more slots are missing than the level survives, as mdadm
 * --assemble --force does (Assemble.c: "forcing event count" on the most recent
 * devices).  Such a member lacks every write made after it left: the data of the
 * stripes (or chunks) written since is wrong on it, and parity computed without it no
 * longer matches; the warning says so.  Taken back, the slot is recorded active in
 * *@R (the superblocks written at assembly carry it).  The stale members not needed
 * are left out and closed.  @taken[slot]: set for each taken back.
 */
static void stale_takeback(tc_ctx *ctx, struct raid_sb *R, tc_dev **slot_dev,
			   tc_dev **stale_dev, const uint64_t *stale_ev,
			   struct sb_left *left, unsigned *nleft, bool *taken)
{
	for (;;) {
		unsigned missing;
		int best = -1;
		bool enough = enough_members(R, slot_dev, &missing, NULL, 0);
		uint32_t gone = 0;
		for (unsigned s = 0; s < R->members; s++)
			if (!slot_dev[s] || R->slot[s].state == TC_MEMBER_FAULTY)
				gone |= 1u << s;
		/* RAID 10: only a member of a copy set left without any helps. */
		for (unsigned s = 0; s < R->members; s++) {
			if (stale_dev[s] && !slot_dev[s] &&
			    (R->level != TC_RAID10 || near_slot_needed(R, gone, s)) &&
			    (best < 0 || stale_ev[s] > stale_ev[best]))
				best = (int)s;
		}
		if (enough || best < 0)
			break;
		unsigned s = (unsigned)best;
		bool par = R->level == TC_RAID5 || R->level == TC_RAID6;
		tc_warn(ctx, "array %s: forced: member %s (slot %u, event count %" PRIu64
			", the array's %" PRIu64 ") taken back, as %u of %u slots are missing: "
			"it lacks every write made after it left, so data written since may be "
			"wrong where it holds it%s; check the file system or data on the array",
			R->name, stale_dev[s]->name, s, stale_ev[s], R->events, missing,
			R->members, par ? " or where parity is rebuilt from it" : "");
		slot_dev[s] = stale_dev[s];
		stale_dev[s] = NULL;
		R->slot[s].state = TC_MEMBER_ACTIVE;
		R->slot[s].flags = 0;
		taken[s] = true;
	}
	for (unsigned s = 0; s < R->members; s++)
		if (stale_dev[s])
			stale_leave(ctx, R, left, nleft, &stale_dev[s], s, stale_ev[s]);
}

int tc_array_assemble(tc_ctx *ctx, tc_dev **devs, unsigned n, unsigned flags,
		      tc_dev **out)
{
	struct raid_sb *sb = calloc(n ? n : 1, sizeof(*sb));
	tc_dev *slot_dev[TC_ARRAY_MAX_MEMBERS] = { 0 };
	tc_dev *old_dev[TC_ARRAY_MAX_MEMBERS] = { 0 };  /* members being replaced */
	/* Forced: the freshest stale member of each slot, kept for stale_takeback(). */
	tc_dev *stale_dev[TC_ARRAY_MAX_MEMBERS] = { 0 };
	uint64_t stale_ev[TC_ARRAY_MAX_MEMBERS] = { 0 };
	tc_dev *spares[TC_ARRAY_MAX_MEMBERS];
	uint8_t spare_uuid[TC_ARRAY_MAX_MEMBERS][16];
	unsigned nspares = 0, ref = 0;
	bool readonly = flags & TC_ARRAY_READONLY;
	bool inspect = readonly && (flags & TC_ARRAY_INSPECT);
	char why[160], u[37], u2[37];
	struct sb_left left[TC_ARRAY_MAX_EXTRA];
	unsigned nleft = 0;
	int r = 0;

	*out = NULL;
	if (!sb) {
		close_all(devs, n);
		return -ENOMEM;
	}
	if (n == 0 || n > 2 * TC_ARRAY_MAX_MEMBERS) {
		tc_err(ctx, "array: %u devices to assemble (1 to %u)", n, 2 * TC_ARRAY_MAX_MEMBERS);
		r = -EINVAL;
		goto fail;
	}
	for (unsigned i = 0; i < n; i++) {
		r = raid_sb_read(devs[i], &sb[i], NULL, why, sizeof(why));
		if (r == 1) {
			r = 0;
			continue;
		}
		if (r == 0) {
			tc_err(ctx, "array: device %s holds no array member superblock", devs[i]->name);
			r = -EINVAL;
		} else if (r == -EUCLEAN) {
			tc_err(ctx, "array: device %s: damaged member superblock, no valid copy "
			       "(%s)", devs[i]->name, why);
		} else {
			tc_err(ctx, "array: device %s: cannot read its superblock: %s",
			       devs[i]->name, strerror(-r));
		}
		goto fail;
	}
	/* The reference: the member (not a spare) with the newest event count, of the
	 * array most of the devices belong to (so that a device of another array given
	 * by mistake is the one named, whatever its event count). */
	unsigned votes[TC_ARRAY_MAX_MEMBERS * 2] = { 0 }, best = 0;   /* n checked above */
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < n; j++)
			votes[i] += !memcmp(sb[i].uuid, sb[j].uuid, 16);
		best = votes[i] > best ? votes[i] : best;
	}
	for (unsigned i = 0; i < n; i++) {
		if (votes[i] < best)
			continue;
		if (votes[ref] < best || (sb[i].role != RAID_SB_ROLE_SPARE &&
		    (sb[ref].role == RAID_SB_ROLE_SPARE || sb[i].events > sb[ref].events)))
			ref = i;
	}
	struct raid_sb *R = &sb[ref];
	uuid_str(R->uuid, u);
	if (R->role == RAID_SB_ROLE_SPARE) {
		tc_err(ctx, "array \"%s\" (uuid %s): only spares given, no member", R->name, u);
		r = -EINVAL;
		goto fail;
	}
	for (unsigned i = 0; i < n; i++) {
		if (memcmp(sb[i].uuid, R->uuid, 16)) {
			uuid_str(sb[i].uuid, u2);
			tc_err(ctx, "array \"%s\" (uuid %s): device %s belongs to another array, "
			       "\"%s\" (uuid %s)", R->name, u, devs[i]->name, sb[i].name, u2);
			r = -EINVAL;
			goto fail;
		}
		if (sb[i].level != R->level || sb[i].chunk != R->chunk ||
		    sb[i].members != R->members || sb[i].data_offset != R->data_offset ||
		    sb[i].member_size != R->member_size || sb[i].copies != R->copies) {
			tc_err(ctx, "array \"%s\": device %s has the array's uuid but another "
			       "geometry (level, chunk, members or sizes differ)", R->name,
			       devs[i]->name);
			r = -EINVAL;
			goto fail;
		}
		if (devs[i]->size < R->data_offset + R->member_size) {
			tc_err(ctx, "array \"%s\": device %s of %" PRIu64 " bytes is smaller than "
			       "the array's members (%" PRIu64 " bytes)", R->name, devs[i]->name,
			       devs[i]->size, R->data_offset + R->member_size);
			r = -EINVAL;
			goto fail;
		}
	}
	/* Place every member in its slot; leave out the stale ones. */
	for (unsigned i = 0; i < n; i++) {
		const struct raid_sb *s = &sb[i];
		if (s->role == RAID_SB_ROLE_SPARE) {
			spares[nspares] = devs[i];
			memcpy(spare_uuid[nspares++], s->member_uuid, 16);
			devs[i] = NULL;
			tc_info(ctx, "array %s: hot spare %s (kept for a rebuild)", R->name,
				spares[nspares - 1]->name);
			continue;
		}
		unsigned slot = s->role;
		const char *whyout = NULL;
		/* The member a replace copies from (the slot's old_uuid). */
		bool is_old = !uuid_zero(R->slot[slot].old_uuid) &&
			      !memcmp(R->slot[slot].old_uuid, s->member_uuid, 16);
		if (memcmp(R->slot[slot].uuid, s->member_uuid, 16) && !is_old)
			whyout = "replaced in that slot";
		else if (s->events + 1 < R->events)
			/* One behind is a superblock update interrupted between members
			 * (mdadm's event_margin of 1, as the kernel allows): a member that
			 * failed or was away is recorded faulty in the slot table too. */
			whyout = "stale";
		else if (R->slot[slot].state == TC_MEMBER_FAULTY)
			whyout = "marked faulty by the array";
		if (!whyout && (is_old ? old_dev[slot] : slot_dev[slot])) {
			tc_err(ctx, "array %s: devices %s and %s both hold slot %u with the same "
			       "event count (copies of one device?)", R->name,
			       slot_dev[slot]->name, devs[i]->name, slot);
			r = -EINVAL;
			goto fail;
		}
		if (whyout && strcmp(whyout, "replaced in that slot") &&
		    (flags & TC_ARRAY_FORCE) && !readonly &&
		    stale_takeback_level(R) &&
		    (!stale_dev[slot] || s->events > stale_ev[slot])) {
			/* Maybe needed to start at all; left out below if not. */
			if (stale_dev[slot])
				stale_leave(ctx, R, left, &nleft, &stale_dev[slot], slot,
					    stale_ev[slot]);
			stale_dev[slot] = devs[i];
			stale_ev[slot] = s->events;
			devs[i] = NULL;
			continue;
		}
		if (whyout) {
			tc_warn(ctx, "array %s: member %s (slot %u) is %s: its event count %"
				PRIu64 " is %s the array's %" PRIu64 "; it is left out and the "
				"array runs without it", R->name, devs[i]->name, slot, whyout,
				s->events, s->events < R->events ? "older than" : "equal to",
				R->events);
			sb_left_add(left, &nleft, devs[i]->name, slot, s->events, whyout);
			tc_dev_close(devs[i]);
			devs[i] = NULL;
			continue;
		}
		if (is_old)
			old_dev[slot] = devs[i];
		else
			slot_dev[slot] = devs[i];
		devs[i] = NULL;
	}
	/* A replace goes on only with both devices: without its successor, the old
	 * member misses the writes below the checkpoint, which went to the successor
	 * alone, so it is left out as md retires it. */
	for (unsigned s = 0; s < R->members; s++)
		if (old_dev[s] && !slot_dev[s]) {
			tc_warn(ctx, "array %s: member %s (slot %u) was being replaced and its "
				"successor is missing: it lacks the writes the successor took; "
				"it is left out and the array runs without it", R->name,
				old_dev[s]->name, s);
			sb_left_add(left, &nleft, old_dev[s]->name, s, R->events,
				    "being replaced, its successor missing");
			tc_dev_close(old_dev[s]);
			old_dev[s] = NULL;
		}
	bool taken[TC_ARRAY_MAX_MEMBERS] = { false };
	stale_takeback(ctx, R, slot_dev, stale_dev, stale_ev, left, &nleft, taken);
	unsigned missing;
	char missing_list[128];
	bool enough = enough_members(R, slot_dev, &missing, missing_list,
				     sizeof(missing_list));
	/* Too few to start, said before anything else (a dirty parity array would be
	 * refused as dirty and degraded, which --force does not cure alone).  An
	 * inspection goes on: the status of a failed array shows its slots. */
	if (!enough && !inspect) {
		unsigned back = 0;   /* left out, and a forced assembly would take back */
		for (unsigned i = 0; i < nleft; i++)
			back += !strcmp(left[i].why, "stale") ||
				!strcmp(left[i].why, "marked faulty by the array");
		char hint[256] = "";
		if (back && !(flags & TC_ARRAY_FORCE) && stale_takeback_level(R))
			snprintf(hint, sizeof(hint), "; `tiercache array assemble --force` takes "
				 "back the freshest of the %u left out as stale or faulty (they "
				 "lack the writes made after they left)", back);
		char need[128];
		const char *lname = tc_raid_level_name((enum tc_raid_level_id)R->level);
		if (R->level == TC_RAID10)
			snprintf(need, sizeof(need), "raid10 needs a member of every copy set "
				 "(%u copies of each chunk)", R->copies);
		else if (R->level == TC_RAID0)
			snprintf(need, sizeof(need), "raid0 needs every member");
		else
			snprintf(need, sizeof(need), "%s survives %u missing", lname,
				 R->level == TC_RAID1 ? R->members - 1
				 : R->level == TC_RAID6 ? 2 : 1);
		tc_err(ctx, "array %s: too few members: %u of %u present (slot %s missing), "
		       "%s%s", R->name, R->members - missing, R->members, missing_list, need,
		       hint);
		r = -ENODEV;
		goto fail;
	}
	/* Redundancy: the level's rule with the missing slots as faulty. */
	struct tc_array_opts o = { .level = (enum tc_raid_level_id)R->level, .chunk = R->chunk,
				   .copies = R->level == TC_RAID10 ? R->copies : 0 };
	bool parity = R->level == TC_RAID5 || R->level == TC_RAID6;
	if (missing && parity && (R->flags & RAID_SB_DIRTY) && readonly) {
		if (enough)   /* else failed: said below */
			tc_warn(ctx, "array %s: dirty and degraded (slot %s missing), read-only: "
				"data rebuilt from parity in stripes written at the crash may "
				"be wrong", R->name, missing_list);
	} else if (missing && parity && (R->flags & RAID_SB_DIRTY)) {
		if (!(flags & TC_ARRAY_FORCE)) {
			tc_err(ctx, "array %s: dirty and degraded (slot %s missing): writes may have "
			       "been in flight when it stopped, so the parity of those stripes may "
			       "not match their data, and rebuilding the missing member from it "
			       "could corrupt data unrelated to those writes; refusing to start "
			       "it (`tiercache array assemble --force` starts it anyway)", R->name,
			       missing_list);
			r = -EUCLEAN;
			goto fail;
		}
		tc_warn(ctx, "array %s: starting dirty and degraded (slot %s missing) because "
			"forced: data in stripes written at the crash, also data unrelated to "
			"those writes, may be corrupt; check what it holds", R->name, missing_list);
	}
	/* The members that hold valid data: present, and recorded active. */
	tc_dev *live[TC_ARRAY_MAX_MEMBERS] = { 0 };
	for (unsigned s = 0; s < R->members; s++)
		if (slot_dev[s] && R->slot[s].state == TC_MEMBER_ACTIVE)
			live[s] = slot_dev[s];
	if ((R->flags & RAID_SB_PPL) && !readonly) {
		/* md's PPL recovery at the start of a dirty array, then an empty log.  A
		 * member being rebuilt takes part below its checkpoint (it holds the data
		 * there, and its log took entries as any member's), and its log is wiped
		 * with the others (seed 44 of tc-stress --arrays --write-hole: left out,
		 * its rows written at the crash kept a torn parity). */
		tc_dev *logs[TC_ARRAY_MAX_MEMBERS] = { 0 }, *olds[TC_ARRAY_MAX_MEMBERS] = { 0 };
		uint64_t valid[TC_ARRAY_MAX_MEMBERS];
		/* A member taken back stale holds log entries of updates from before it
		 * left, older than anything the others logged: wiped, never applied. */
		tc_dev *stale_logs[TC_ARRAY_MAX_MEMBERS] = { 0 };
		for (unsigned s = 0; s < R->members; s++)
			if (taken[s])
				stale_logs[s] = live[s];
		r = raid_ppl_wipe(ctx, R->name, stale_logs, R->members);
		if (r < 0)
			goto fail;
		for (unsigned s = 0; s < R->members; s++) {
			valid[s] = UINT64_MAX;
			logs[s] = taken[s] ? NULL : live[s];
			if (slot_dev[s] && R->slot[s].state == TC_MEMBER_REBUILDING) {
				logs[s] = slot_dev[s];
				valid[s] = R->rebuild_pos;
				olds[s] = old_dev[s];   /* a replace goes on */
			}
		}
		if (R->flags & RAID_SB_DIRTY) {
			r = raid_ppl_recover(ctx, R->name, logs, olds, valid, R->members,
					     R->level == TC_RAID6 ? 2 : 1, R->chunk,
					     R->data_offset, R->uuid);
			if (r < 0)
				goto fail;
		}
		r = raid_ppl_wipe(ctx, R->name, logs, R->members);
		if (r == 0)
			r = raid_ppl_wipe(ctx, R->name, olds, R->members);
		if (r < 0)
			goto fail;
		r = 0;
	}
	tc_dev *mdev[TC_ARRAY_MAX_MEMBERS];
	for (unsigned s = 0; s < R->members; s++) {
		uint32_t lbs = 512;
		for (unsigned t = 0; t < R->members; t++)
			if (slot_dev[t]) {
				lbs = slot_dev[t]->lbs;
				break;
			}
		if (slot_dev[s]) {
			mdev[s] = slot_dev[s];
			continue;
		}
		r = missing_new(ctx, s, R->data_offset + R->member_size, lbs, &mdev[s]);
		if (r) {
			for (unsigned t = 0; t < s; t++)
				tc_dev_close(mdev[t]);
			for (unsigned t = s; t < R->members; t++)
				if (slot_dev[t])
					tc_dev_close(slot_dev[t]);
			goto fail_spares;
		}
	}
	tc_dev *dev;
	r = array_open(ctx, &o, mdev, R->members, R->name, R->data_offset, R->member_size,
		       &dev);
	if (r)
		goto fail_spares;
	struct tc_array *a = (struct tc_array *)dev;
	for (unsigned s = 0; s < R->members; s++)
		if (!slot_dev[s] || R->slot[s].state == TC_MEMBER_FAULTY)
			array_member_absent(a, s, slot_dev[s] ? "recorded faulty in the superblocks"
					    : "missing at assembly");
	/* Rebuild checkpoint: a member recorded rebuilding keeps its state, and the array
	 * its position, before anything is submitted.  It counts against the redundancy
	 * until the rebuild ends, as after a takeover (its faulty bit is set). */
	bool rebuilding = false;
	for (unsigned s = 0; s < R->members; s++)
		if (slot_dev[s] && R->slot[s].state == TC_MEMBER_REBUILDING) {
			atomic_store(&a->m[s].state, TC_MEMBER_REBUILDING);
			rebuilding = true;
			if (!old_dev[s]) {
				atomic_fetch_or(&a->faulty, 1u << s);
				/* A re-add resumes as one (the map kept its bits). */
				atomic_store(&a->m[s].readd,
					     (R->slot[s].flags & RAID_SB_SLOT_READD) != 0);
				continue;
			}
			/* A replace: the old member serves the rows at and above the
			 * checkpoint, the slot keeps its redundancy (tc_array_replace). */
			struct array_disk *od = calloc(1, sizeof(*od));
			if (!od) {
				tc_dev_close(dev);
				r = -ENOMEM;
				goto fail_spares;
			}
			od->dev = old_dev[s];
			memcpy(od->uuid, R->slot[s].old_uuid, 16);
			old_dev[s] = NULL;
			atomic_store(&a->m[s].old_failed, false);
			atomic_store(&a->m[s].old, od);
			tc_dev_watch(od->dev, array_member_event_fn, a);
			tc_info(ctx, "array %s: member %u: the replace of %s by %s goes on",
				R->name, s, od->dev->name, slot_dev[s]->name);
		}
	if (rebuilding)
		array_health_changed(a);
	if (array_failed(a) && inspect) {
		tc_warn(ctx, "array %s: failed: %u of %u members present (slot %s missing); "
			"shown for inspection, every request fails", R->name,
			R->members - missing, R->members, missing_list);
	} else if (array_failed(a)) {
		tc_err(ctx, "array %s: too few members: %u of %u present (slot %s missing), "
		       "%s cannot start without them", R->name, R->members - missing,
		       R->members, missing_list, a->level->name);
		tc_dev_close(dev);
		r = -ENODEV;
		goto fail_spares;
	}
	/* A member the array last ran with, not among the devices given: starting
	 * without it makes it stale for good (a typo in a member list costs the array
	 * its redundancy), so a writable assembly refuses unless forced, as mdadm
	 * --assemble does without --run.  A forced one records it faulty, and later
	 * assemblies without it go on as for any failed member.  Nothing is written
	 * before this but a clean log's wipe (a dirty and degraded parity array was
	 * refused above). */
	if (!readonly && !(flags & TC_ARRAY_FORCE) && r == 0) {
		unsigned absent = 0;
		char absent_list[128] = "";
		for (unsigned s = 0; s < R->members; s++)
			if (!slot_dev[s] && R->slot[s].state != TC_MEMBER_FAULTY) {
				size_t used = strlen(absent_list);
				snprintf(absent_list + used, sizeof(absent_list) - used, "%s%u",
					 absent ? ", " : "", s);
				absent++;
			}
		if (absent) {
			tc_err(ctx, "array %s: slot %s, %s the array last ran with, %s not among "
			       "the devices given: starting without %s would leave %s stale for "
			       "good; give every member (a spare that took a slot is one: `serve "
			       "--spare DEVICE` gives it back), or start it degraded once with "
			       "`tiercache array assemble --force`", R->name, absent_list,
			       absent > 1 ? "members" : "a member", absent > 1 ? "are" : "is",
			       absent > 1 ? "them" : "it", absent > 1 ? "them" : "it");
			tc_dev_close(dev);
			r = -ENODEV;
			goto fail_spares;
		}
	}
	if (rebuilding) {
		atomic_store(&a->rebuild_pos, R->rebuild_pos);
		tc_info(ctx, "array %s: a rebuild was under way: checkpoint %" PRIu64 " bytes of "
			"%" PRIu64, R->name, R->rebuild_pos, R->member_size);
	}
	struct raid_sb cur = *R;
	if (flags & TC_ARRAY_FORCE)
		cur.flags &= ~RAID_SB_DIRTY;
	r = sb_attach(a, &cur, readonly);
	if (!r) {
		struct sb_priv *p = a->persist_priv;
		memcpy(p->left, left, nleft * sizeof(left[0]));
		p->nleft = nleft;
		nleft = 0;
	}
	uint64_t resync = 0;
	if (!r)
		r = array_consistency_attach(a, &cur, live, R->flags & RAID_SB_DIRTY, readonly,
					     &resync);
	if (r) {
		tc_dev_close(dev);
		goto fail_spares;
	}
	/* The spares join rebuild.c's list; a slot missing now takes one at once (not
	 * when assembled read-only, for inspection). */
	for (unsigned i = 0; i < nspares; i++) {
		tc_dev *sp = spares[i];
		spares[i] = NULL;
		r = array_spare_add(a, sp, spare_uuid[i], !readonly);
		if (r) {
			for (unsigned j = i + 1; j < nspares; j++)
				tc_dev_close(spares[j]);
			nspares = 0;
			tc_dev_close(dev);
			goto out;
		}
	}
	nspares = 0;
	if (!readonly) {
		/* Dirty while open for writing (md marks it before the first write; here at
		 * assembly, which covers it), with the member states as assembled. */
		struct sb_priv *p = a->persist_priv;
		pthread_mutex_lock(&p->lock);  /* the persist thread may be writing already */
		p->sb.flags |= RAID_SB_DIRTY;
		/* An array of a version that cleared its write-intent bits while degraded:
		 * kept from this write on (its event count), so that only members that
		 * leave from now on can be re-added. */
		bool upgrade = (p->sb.flags & RAID_SB_BITMAP) && !(p->sb.flags & RAID_SB_KEEPBITS);
		if (upgrade) {
			p->sb.flags |= RAID_SB_KEEPBITS;
			p->sb.keep_since = p->sb.events + 1;    /* sb_write_all's next */
		}
		pthread_mutex_unlock(&p->lock);
		if (upgrade)
			tc_warn(ctx, "array %s: its write-intent map keeps its bits while degraded "
				"from now on, so that members that leave from now on can be "
				"re-added; versions of tiercache before this one no longer "
				"assemble it", R->name);
		r = sb_persist(a);
		if (r) {
			tc_err(ctx, "array %s: cannot mark the array in use on its members: %s",
			       R->name, strerror(-r));
			p->readonly = true;     /* write nothing more */
			tc_dev_close(dev);
			goto out;
		}
	}
	/* A mirror not shut down cleanly: its copies may differ where writes were in
	 * flight.  md resyncs the whole of it (or its bitmap's regions); so does this,
	 * reading the first readable copy meanwhile.  Degraded or rebuilding, the pass
	 * waits for the rebuild's end (rebuild.c). */
	bool mirror_resync = (R->flags & RAID_SB_DIRTY) && !readonly && !a->level->parity &&
			     a->copies > 1;
	if (mirror_resync) {
		atomic_store(&a->unsynced, true);
		tc_warn(ctx, "array %s: not shut down cleanly: the copies are resynced (%s); "
			"reads take the first readable copy until then", R->name,
			rebuilding ? "after the rebuild" : "now");
	}
	/* A parity array started dirty and degraded (forced: refused above otherwise)
	 * cannot resync the regions its write-intent map names: with a member missing
	 * there is no parity to make agree, and the pending resync would keep it dirty
	 * at every close, so that nothing would start it unforced again.  The force
	 * took that risk (said above); as mdadm --assemble --force marks such an array
	 * clean, the map's resync is dropped.  A rebuild onto a spare then writes the
	 * missing member from the data and parity there are. */
	if (parity && missing && resync && (R->flags & RAID_SB_DIRTY) && !readonly) {
		tc_warn(ctx, "array %s: started degraded: the %" PRIu64 " regions of the "
			"write-intent map cannot be resynced without the missing member; "
			"dropped (forced)", R->name, resync);
		raid_map_resync_done(a);
		resync = 0;
	}
	/* A dirty array with the write-intent map: resync the regions it names (a
	 * mirror's degraded too, over the copies there are). */
	if (((resync && !missing) || mirror_resync) && !readonly && !rebuilding)
		array_resync_start(a);
	/* The rebuild rates the admin set, kept in the superblocks. */
	if (R->rebuild_min || R->rebuild_max || R->rebuild_priority || R->rebuild_depth) {
		struct tc_array_rebuild_opts ro = {
			.min_rate = R->rebuild_min, .max_rate = R->rebuild_max,
			.priority = R->rebuild_priority, .depth = R->rebuild_depth,
		};
		tc_array_set_rebuild(&a->dev, &ro);
	}
	/* The rebuild recorded in the superblocks goes on from its checkpoint. */
	if (rebuilding && !readonly) {
		r = array_rebuild_resume(a);
		if (r)
			tc_warn(ctx, "array %s: the rebuild does not resume (%s); the members "
				"being rebuilt stay as they are", R->name, strerror(-r));
	}
	/* Write-intent bits a clean stop left (kept while degraded): cleared once idle
	 * if the array is whole, kept for a re-add if not. */
	if (!readonly)
		raid_map_whole(a);
	tc_info(ctx, "array %s: assembled, %s of %u members%s%s, uuid %s%s", R->name,
		a->level->name, R->members, missing ? ", degraded" : "",
		rebuilding ? ", rebuilding" : "", u, readonly ? " (read-only)" : "");
	*out = dev;
	r = 0;
	goto out;
fail_spares:
	close_all(spares, nspares);
	nspares = 0;
	close_all(old_dev, TC_ARRAY_MAX_MEMBERS);
	goto out;
fail:
	close_all(devs, n);
	close_all(spares, nspares);
	close_all(old_dev, TC_ARRAY_MAX_MEMBERS);
	close_all(stale_dev, TC_ARRAY_MAX_MEMBERS);
	for (unsigned s = 0; s < TC_ARRAY_MAX_MEMBERS; s++)
		if (slot_dev[s])
			tc_dev_close(slot_dev[s]);
out:
	for (unsigned i = 0; i < nleft; i++)
		free(left[i].name);
	free(sb);
	return r;
}

int array_sb_member_slot(struct tc_array *a, tc_dev *dev, unsigned *slot, uint8_t *uuid)
{
	struct sb_priv *p = a->persist_priv;
	struct raid_sb sb;
	unsigned ok;
	char why[160] = "";

	if (!a->persist || !p) {
		tc_err(a->dev.ctx, "array %s: has no superblocks: nothing tells whether %s was "
		       "its member", a->dev.name, dev->name);
		return -EINVAL;
	}
	int r = raid_sb_read(dev, &sb, &ok, why, sizeof(why));
	if (r < 0 && r != -EUCLEAN) {
		tc_err(a->dev.ctx, "array %s: %s: cannot read its superblock: %s", a->dev.name,
		       dev->name, strerror(-r));
		return r;
	}
	if (r != 1) {
		tc_err(a->dev.ctx, "array %s: %s holds no valid member superblock%s%s: it was "
		       "no member of the array, or lost its record; " RAID_READD_INSTEAD,
		       a->dev.name, dev->name, *why ? ": " : "", why);
		return -EINVAL;
	}
	char u[37], mine[37];
	pthread_mutex_lock(&p->lock);
	bool same = !memcmp(sb.uuid, p->sb.uuid, 16);
	uuid_str(p->sb.uuid, mine);
	bool holder = sb.role != RAID_SB_ROLE_SPARE && sb.role < p->sb.members &&
		      !memcmp(p->sb.slot[sb.role].uuid, sb.member_uuid, 16);
	uint64_t events = p->sb.events;
	uint64_t keep = p->sb.flags & RAID_SB_KEEPBITS ? p->sb.keep_since : UINT64_MAX;
	pthread_mutex_unlock(&p->lock);
	uuid_str(sb.uuid, u);
	if (!same) {
		tc_err(a->dev.ctx, "array %s (uuid %s): %s is a member of array \"%s\" (uuid "
		       "%s), not of this one", a->dev.name, mine, dev->name, sb.name, u);
		return -EINVAL;
	}
	if (sb.role == RAID_SB_ROLE_SPARE) {
		tc_err(a->dev.ctx, "array %s: %s was a hot spare of the array, holding no data: "
		       RAID_READD_INSTEAD, a->dev.name, dev->name);
		return -EINVAL;
	}
	if (!holder) {
		tc_err(a->dev.ctx, "array %s: %s held slot %u, which another member has taken "
		       "since (a spare rebuilt it, or a replace): its data is of no use; "
		       RAID_READD_INSTEAD, a->dev.name, dev->name, sb.role);
		return -EINVAL;
	}
	/* What the member says of itself: it held the slot whole (active), or was being
	 * re-added.  A spare or a replacement that had not finished its rebuild lacks
	 * rows the map has no bit for. */
	uint32_t own = sb.slot[sb.role].state;
	if (own != TC_MEMBER_ACTIVE && !(own == TC_MEMBER_REBUILDING &&
					 (sb.slot[sb.role].flags & RAID_SB_SLOT_READD))) {
		tc_err(a->dev.ctx, "array %s: %s was still being rebuilt into slot %u when it "
		       "left (a spare or a replacement that had not finished): it lacks rows "
		       "the write-intent map does not name; " RAID_READD_INSTEAD, a->dev.name,
		       dev->name, sb.role);
		return -EINVAL;
	}
	/* Bits cleared while it was away, by a version that did not keep them. */
	if (sb.events < keep) {
		tc_err(a->dev.ctx, "array %s: %s left the array at event %" PRIu64 ", before its "
		       "write-intent map kept its bits while degraded (from event %" PRIu64
		       "): what it missed is not known; " RAID_READD_INSTEAD,
		       a->dev.name, dev->name, sb.events, keep == UINT64_MAX ? events : keep);
		return -EINVAL;
	}
	if (sb.events > events) {
		tc_err(a->dev.ctx, "array %s: %s records event %" PRIu64 ", newer than the "
		       "array's %" PRIu64 ": it did not leave this array as it is now (two "
		       "copies of the array?)", a->dev.name, dev->name, sb.events, events);
		return -EINVAL;
	}
	*slot = sb.role;
	memcpy(uuid, sb.member_uuid, 16);
	return 0;
}

/* ---- inspection ------------------------------------------------------------------- */

static void sb_to_info(const struct raid_sb *s, struct tc_array_member_info *out)
{
	uuid_str(s->uuid, out->uuid);
	uuid_str(s->member_uuid, out->member_uuid);
	snprintf(out->name, sizeof(out->name), "%s", s->name);
	out->level = (enum tc_raid_level_id)s->level;
	out->chunk = s->chunk;
	out->copies = s->copies;
	out->members = s->members;
	out->role = s->role == RAID_SB_ROLE_SPARE ? -1 : (int)s->role;
	out->dirty = s->flags & RAID_SB_DIRTY;
	out->events = s->events;
	out->data_offset = s->data_offset;
	out->member_size = s->member_size;
	out->rebuild_pos = s->rebuild_pos;
	out->ctime_ns = s->ctime;
	out->utime_ns = s->utime;
	for (unsigned i = 0; i < s->members; i++)
		out->slot_state[i] = (enum tc_member_state)s->slot[i].state;
}

int tc_array_examine(tc_ctx *ctx, tc_dev *dev, struct tc_array_member_info *out)
{
	struct raid_sb sb;
	memset(out, 0, sizeof(*out));
	int r = raid_sb_read(dev, &sb, &out->copies_ok, out->damage, sizeof(out->damage));
	if (r == 1)
		sb_to_info(&sb, out);
	if (r < 0 && r != -EUCLEAN)
		tc_err(ctx, "device %s: cannot read its first %u bytes: %s", dev->name,
		       2 * RAID_SB_SIZE, strerror(-r));
	return r;
}

int tc_array_identity(tc_dev *dev, struct tc_array_identity *id)
{
	memset(id, 0, sizeof(*id));
	if (strcmp(dev->ops->name, "array"))
		return -EINVAL;
	struct tc_array *a = (struct tc_array *)dev;
	struct sb_priv *p = a->persist_priv;
	if (!a->persist || !p)
		return -ENODATA;
	pthread_mutex_lock(&p->lock);
	uuid_str(p->sb.uuid, id->uuid);
	snprintf(id->name, sizeof(id->name), "%s", p->sb.name);
	id->events = p->sb.events;
	id->dirty = p->sb.flags & RAID_SB_DIRTY;
	id->readonly = p->readonly;
	id->data_offset = p->sb.data_offset;
	id->rebuild_pos = atomic_load(&a->rebuild_pos);
	/* Those added again since are in the slot table or the spares now.  (Their
	 * names stay allocated until the array closes: a caller may hold them.) */
	for (unsigned i = 0; i < p->nleft; i++)
		if (!p->left[i].back)
			id->left[id->nleft++] = (struct tc_array_left){
				p->left[i].name, p->left[i].slot, p->left[i].events,
				p->left[i].why };
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&a->lock);
	id->nspares = a->nspares;
	for (unsigned i = 0; i < a->nspares; i++)
		id->spare[i] = a->spare[i]->dev->name;
	pthread_mutex_unlock(&a->lock);
	return 0;
}
