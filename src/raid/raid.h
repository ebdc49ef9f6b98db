/* SPDX-License-Identifier: MIT */
/*
 * raid.h - the array layer's inside: the array device (array.c) and the ops table of
 * each RAID level (md's personalities: raid0.c, raid1.c, raid10.c, raid56.c).
 *
 * array.c owns what every level shares: the member table and member states, child
 * requests to members and their completion, member failure (a failed write makes a
 * member faulty; a failed read is for the level to repair), FLUSH, health events,
 * limits and status.  A level maps array offsets to members and runs READ, WRITE,
 * WRITE_ZEROES and DISCARD.
 *
 * Two engines run the levels: the mapped engine of array.c for the levels that place
 * copies of data and no parity (RAID 0, 1, 10: a level's map() names the members and
 * offsets of every copy of a run of bytes), and the stripe engine of raid56.c.
 */
#ifndef TC_RAID_H
#define TC_RAID_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <endian.h>
#include "dev.h"

struct tc_array;
struct array_sync_win;
struct array_sync;

/* A device the array holds (a member, the old member of a replace, a spare, a member
 * retired): its own count of child requests in flight, so that it is closed only once
 * none is (tc_array_remove). */
struct array_disk {
	struct tc_dev *dev;
	atomic_uint inflight;
	int state;                      /* out of the slots: enum tc_member_state */
	uint8_t uuid[16];               /* member uuid in the superblocks (sb.c); all zero
	                                 * until an array with superblocks persists it */
};

/* One copy of a run of array bytes on one member. */
struct raid_copy {
	unsigned member;
	uint64_t offset;        /* on the member, bytes */
};

/* Where a run of array bytes starting at some offset lives. */
struct raid_extent {
	uint64_t len;           /* bytes from the offset that map contiguously */
	unsigned ncopies;
	struct raid_copy copy[TC_ARRAY_MAX_MEMBERS];
};

struct tc_raid_level {
	const char *name;               /* "raid0", ... */
	enum tc_raid_level_id id;
	unsigned min_members;           /* with the default copies */
	unsigned parity;                /* parity chunks per stripe */
	/* The array's data members (members' worth of data per stripe). */
	unsigned (*data_members)(const struct tc_array *a);
	int (*init)(struct tc_array *a);        /* optional: level state in a->level_priv */
	void (*fini)(struct tc_array *a);       /* optional */
	/* Mapped levels: the copies of array bytes from @off (at most @len of them). */
	void (*map)(const struct tc_array *a, uint64_t off, uint64_t len,
		    struct raid_extent *ext);
	/* READ, WRITE, WRITE_ZEROES, DISCARD of @io, already checked by dev.c and with
	 * the array not failed.  Completes through array_complete(). */
	void (*submit)(struct tc_array *a, struct tc_io *io);
	/* Member failures survivable with the faulty members of @faulty (bit per member);
	 * negative when the array has failed. */
	int (*redundancy)(const struct tc_array *a, uint32_t faulty);
	/* Redundant levels: run the sync window @w (rebuild.c): rebuild, check or repair
	 * one row of chunks, under the level's lock; completes through
	 * array_sync_window_done(). */
	void (*sync)(struct tc_array *a, struct array_sync_win *w);
	/* Windows of a check pass (rows of chunks for RAID 5/6, array chunks for the
	 * mapped levels). */
	uint64_t (*check_windows)(const struct tc_array *a);
};

extern const struct tc_raid_level raid0_level, raid1_level, raid10_level, raid5_level,
	raid6_level;

struct array_member {
	/* disk->dev; NULL once a faulty member is removed.  Atomic: a spare's takeover
	 * and a replace change it while requests run. */
	struct tc_dev *_Atomic dev;
	struct array_disk *_Atomic disk;
	_Atomic int state;              /* enum tc_member_state */
	/* REBUILDING: taken over during a rebuild pass already under way; written, never
	 * read, until the next pass (rebuild.c). */
	atomic_bool pending;
	/* replace (REBUILDING with @old): the member being replaced, which serves the
	 * member offsets at or above rebuild_pos; @old_failed once it failed. */
	struct array_disk *_Atomic old;
	atomic_bool old_failed;
	/* REBUILDING by tc_array_re_add(): the member held the slot before and missed
	 * only the writes of the regions the write-intent map has set; the rebuild
	 * visits those alone (raid_map_intent_next). */
	atomic_bool readd;
	atomic_uint inflight;           /* child requests in flight (RAID 1 read choice) */
	_Atomic uint64_t read_errors, corrected;
};

/* How a RAID 5/6 write stripe operation made its parity (tc_array.wplan). */
enum raid_wplan { WPLAN_FULL, WPLAN_RCW, WPLAN_RMW, WPLAN_DEGRADED };

struct tc_array {
	struct tc_dev dev;              /* first: tc_dev * and tc_array * convert */
	const struct tc_raid_level *level;
	unsigned n;                     /* members */
	unsigned copies;                /* RAID 1: n, RAID 10: opts, else 1 */
	uint64_t chunk;                 /* bytes */
	unsigned chunk_shift;
	uint64_t member_size;           /* bytes used on every member, whole chunks */
	struct array_member m[TC_ARRAY_MAX_MEMBERS];
	void *level_priv;
	atomic_uint rr;                 /* rotating start for read balancing */
	/* RAID 5/6 write stripe operations by how the parity was made (raid56.c,
	 * r56_write_plan): enum raid_wplan. */
	_Atomic uint64_t wplan[4];

	pthread_mutex_t lock;           /* member state changes and events */
	_Atomic uint32_t faulty;        /* bit per member */
	_Atomic uint64_t fail_count;    /* members that became faulty since the open */
	/* fail_count, and the health events of member arrays (tc_dev_health_gen): only
	 * ever grows, read without walking the members. */
	_Atomic uint64_t health;
	atomic_bool failed;
	int redundancy;                 /* under lock: last reported */

	/* Bytes reserved at the start of every member for the array's own metadata
	 * (member superblocks, region map: sb.c); every child request is shifted by it.
	 * 0 for arrays without superblocks (tc_dev_new_array). */
	uint64_t data_offset;
	/* Members in state TC_MEMBER_REBUILDING hold valid data below this member offset
	 * (bytes, relative to data_offset) only: rebuild.c moves it forward. */
	_Atomic uint64_t rebuild_pos;
	/* A mirror (RAID 1, 10) assembled after an unclean stop: its copies may differ
	 * where writes were in flight, so reads take the first readable copy, the one
	 * the resync pass copies over the others (md's read_balance does the same
	 * beyond its resync point), until that pass ends.  A clean close meanwhile
	 * leaves the array dirty, so the next assembly resyncs again. */
	atomic_bool unsynced;
	/* Persist the member states and the rebuild checkpoint (the member superblocks,
	 * sb.c).  NULL for arrays without superblocks.  Returns 0 or a negative errno;
	 * called without a->lock held, from a thread that may block. */
	int (*persist)(struct tc_array *a);
	void *persist_priv;

	/* Spares, members retired (faulty and taken over, or replaced), and the sync
	 * driver (rebuild.c); under lock. */
	struct array_disk *spare[TC_ARRAY_MAX_EXTRA];
	unsigned nspares;
	struct array_disk *gone[TC_ARRAY_MAX_EXTRA];
	unsigned ngone;
	struct array_sync *sync;
	_Atomic uint64_t fg_requests;   /* requests submitted to the array */
	/* The mapped levels' chunk lock (array chunk numbers): writes and sync windows. */
	struct array_locks *locks;
	/* Consistency after a crash (arrays with superblocks only; NULL / false else):
	 * the write-intent map of wimap.c, and whether RAID 5/6 partial-stripe updates
	 * go through the partial-parity log (raid56.c, ppl.c).  Set before any I/O. */
	struct raid_map *map;
	bool ppl;
};

/* ---- A lock on keys (array chunks), with a FIFO of waiters; never blocks. ---- */
struct array_lock {
	uint64_t key;
	bool locked;
	void (*on_lock)(struct array_lock *l);  /* a waiter got the lock (its thread) */
	struct array_lock *hnext, *wait_head, *wait_tail, *wnext;
};

/* array_lock_take - take @l->key or queue @l (then @l->on_lock runs once it has it).
 * Returns true when taken now. */
bool array_lock_take(struct array_locks *t, struct array_lock *l);
void array_lock_release(struct array_locks *t, struct array_lock *l);

/* ---- Sync: rebuild, check, repair (rebuild.c) ---- */
enum array_sync_kind { SYNC_REBUILD = 1, SYNC_CHECK, SYNC_REPAIR };

struct array_sync_win {
	struct tc_array *a;
	enum array_sync_kind kind;
	uint64_t row;                   /* rebuild: row of chunks; check: window number */
	uint32_t targets;               /* rebuild: the members rebuilt in this window */
	bool ordered;                   /* rebuild of a replace: array_sync_advance() moves
	                                 * the position (one window at a time) */
	uint64_t bytes;                 /* member bytes the window covered (per member) */
	bool unwritten;                 /* rebuild: a row never written (zeros only) */
	uint64_t mismatches;            /* check: found in this window */
	int result;
};

/* array_sync_advance - rebuild: the window's rows are on its targets; moves
 * rebuild_pos past them.  Levels call it before releasing their lock. */
static inline void array_sync_advance(struct tc_array *a, struct array_sync_win *w)
{
	if (w->ordered)
		atomic_store(&a->rebuild_pos, (w->row + 1) << a->chunk_shift);
}
/* array_sync_window_done - the level finished @w (any thread). */
void array_sync_window_done(struct tc_array *a, struct array_sync_win *w);

/* Members readable at member offset @off (relative to data_offset), writable. */
static inline bool array_member_readable(const struct tc_array *a, unsigned i, uint64_t off)
{
	int st = atomic_load_explicit(&a->m[i].state, memory_order_acquire);

	if (st == TC_MEMBER_ACTIVE)
		return true;
	if (st != TC_MEMBER_REBUILDING || atomic_load(&a->m[i].pending))
		return false;
	if (off < atomic_load_explicit(&a->rebuild_pos, memory_order_acquire))
		return true;
	return atomic_load(&a->m[i].old) && !atomic_load(&a->m[i].old_failed);
}

static inline bool array_member_writable(const struct tc_array *a, unsigned i)
{
	int st = atomic_load_explicit(&a->m[i].state, memory_order_acquire);

	return st == TC_MEMBER_ACTIVE || st == TC_MEMBER_REBUILDING;
}

bool array_is_array(const tc_dev *dev);
/* The watcher of every member and spare (tc_dev_watch). */
void array_member_event_fn(void *opaque, tc_dev *member, enum tc_dev_event ev);
/* The mapped levels' sync (rebuild.c). */
void array_sync_mapped(struct tc_array *a, struct array_sync_win *w);
uint64_t array_mapped_check_windows(const struct tc_array *a);
/* Recompute the redundancy with the current faulty set and report a change. */
void array_health_changed(struct tc_array *a);
int array_locks_new(struct array_locks **out);
void array_locks_free(struct array_locks *t);
/* The background pass's part of tc_array_status (spares, retired, sync). */
void array_sync_status(struct tc_array *a, struct tc_array_status *st);

/* array_sync_init / fini - the sync driver of @a (tc_dev_new_array, close); init also
 * makes the stripe-lock table a->locks, which array_close frees after everything. */
int array_sync_init(struct tc_array *a);
void array_sync_fini(struct tc_array *a);
/* array_rebuild_get - the rebuild rates in force, each 0 where it is the default (as
 * the superblocks record them). */
void array_rebuild_get(struct tc_array *a, struct tc_array_rebuild_opts *o);

/* array_sync_kick - start a rebuild pass when members are rebuilding and none runs. */
void array_sync_kick(struct tc_array *a);
/* array_spare_add - tc_array_add_spare() with the spare's member uuid @uuid (16 bytes,
 * from its superblock at assembly; NULL: none yet, sb.c gives it one when it next
 * persists); a faulty slot takes the spare at once only when @takeover (not in an
 * array assembled read-only for inspection); with @takeover the spare's
 * partial-parity log is cleared first (-EIO and the like when that write fails).
 * Takes ownership of @dev, also on failure. */
int array_spare_add(struct tc_array *a, tc_dev *dev, const uint8_t *uuid, bool takeover);
/* array_takeover - a spare takes the faulty slot @i, if there is one (under no lock). */
void array_takeover(struct tc_array *a, unsigned i);

/*
 * array_rebuild_resume - resume the rebuild of an assembled array: members in state
 * TC_MEMBER_REBUILDING hold valid data below a->rebuild_pos, which the superblocks
 * recorded; the rebuild goes on from there (all of them in one pass).  Call once the
 * array is set up (its members, states, rebuild_pos and persist hook), from any
 * thread.  Returns 0, or -EINVAL when no member is rebuilding or rebuild_pos is past
 * the members' size.
 */
int array_rebuild_resume(struct tc_array *a);

/* array_resync_start - after an unclean stop: a repair pass (parity recomputed from
 * the data, copies made equal) over the windows in the write-intent map's regions to
 * resync only (raid_map_needs_sync); at its end raid_map_resync_done().  Returns 0 or
 * -EBUSY (a pass runs, or the array is degraded). */
int array_resync_start(struct tc_array *a);

/* A request to one member on behalf of the array. */
struct array_child;
typedef void (*array_child_fn)(struct array_child *c, int result);

struct array_child {
	struct tc_io io;
	struct tc_array *a;
	unsigned member;
	array_child_fn done;
	void *owner;
	struct array_disk *disk;        /* the device the request went to */
	bool to_old;                    /* to the old member of a replace */
	struct iovec iov1;              /* a flat buffer */
	struct iovec *iovs;             /* malloc'ed slice of a parent's iovecs, or NULL */
	/* A write to both devices of a replace (route 3): the old member's request, and
	 * the parts still to complete; @done sees the slot device's result. */
	struct tc_io io_old;
	struct array_disk *disk_old;
	atomic_uint parts;
	int cur_result, old_result;
};

/* array_child_submit - submit @c to member @member: @op at @off for @len bytes, from or
 * into the flat buffer @buf, or (@buf NULL, op READ/WRITE) the slice [@skip, @skip +
 * @len) of the parent @parent's iovecs.  @done runs on completion with the result;
 * an allocation failure completes @c with -ENOMEM from a context work item. */
void array_child_submit(struct tc_array *a, struct array_child *c, unsigned member,
			unsigned op, unsigned flags, uint64_t off, uint64_t len, void *buf,
			const struct tc_io *parent, uint64_t skip, array_child_fn done,
			void *owner);
/* array_child_submit_to - the same with @route: 0 as array_child_submit() (a replace's
 * old member serves member offsets at or above rebuild_pos; below it, writes go to
 * both devices), 1 the slot's own device, 2 the old member of a replace (rebuild.c),
 * 3 both devices of a replace (the slot's alone when none runs).  A write to both
 * completes when both have; a failure of the old member's part gives that member up
 * (array_child_fail) and @done sees the slot device's result. */
void array_child_submit_to(struct tc_array *a, struct array_child *c, unsigned member,
			   int route, unsigned op, unsigned flags, uint64_t off, uint64_t len,
			   void *buf, const struct tc_io *parent, uint64_t skip,
			   array_child_fn done, void *owner);
/* array_flush_members - a FLUSH to every writable member and to the old member of a
 * replace (which takes writes too), through @child (2 * n entries: member i's at i,
 * its old member's at n + i), each completing with @done(@owner); *@pending is raised
 * by one before each request goes out.  The caller holds a count of its own on
 * *@pending across the call and drops it after, so @done cannot see zero early. */
void array_flush_members(struct tc_array *a, struct array_child *child, atomic_uint *pending,
			 array_child_fn done, void *owner);
/* array_child_fail - the write (or flush) of @c failed: its member becomes faulty, or,
 * when @c went to the old member of a replace, that old member is given up (the
 * replace goes on by reconstruction). */
void array_child_fail(struct array_child *c, const char *why, int err);

/* array_complete - complete the array request @io: directly from a completion, from a
 * context work item when an array submit is running on this thread. */
void array_complete(struct tc_array *a, struct tc_io *io, int result);

/* array_io_error - whether a member request's result is the member's fault (an I/O
 * error), not the array's (-EINVAL, -ENOMEM). */
static inline bool array_io_error(int result)
{
	return result < 0 && result != -EINVAL && result != -ENOMEM;
}

struct array_locks;

static inline bool array_member_active(const struct tc_array *a, unsigned i)
{
	return atomic_load_explicit(&a->m[i].state, memory_order_acquire) == TC_MEMBER_ACTIVE;
}

static inline bool array_failed(const struct tc_array *a)
{
	return atomic_load_explicit(&a->failed, memory_order_acquire);
}

/* array_member_fail - member @i becomes faulty (@why: "write error", ...; @err the
 * errno or 0): logged, redundancy recomputed and reported (TC_DEV_DEGRADED,
 * TC_DEV_FAILED).  Returns false when it already was faulty. */
bool array_member_fail(struct tc_array *a, unsigned i, const char *why, int err);
/* array_member_absent - the same at assembly, for a member missing or recorded faulty
 * there: a state known already, logged as a warning, not as a new failure. */
bool array_member_absent(struct tc_array *a, unsigned i, const char *why);

/* The shared engine of the mapped levels (RAID 0, 1, 10). */
void array_submit_mapped(struct tc_array *a, struct tc_io *io);

/* Redundancy of md's near layout with @copies copies over the members (RAID 0, 1, 10):
 * the fewest active copies of any chunk, less one. */
int array_near_redundancy(const struct tc_array *a, unsigned copies, uint32_t faulty);
/* The same over @n members with the members in @faulty missing, when @only is below
 * @n the least over the copy sets holding member @only alone (assembly, before the
 * array exists).  The copy sets start at the multiples of gcd(@copies, @n). */
int raid_near_redundancy(unsigned n, unsigned copies, uint32_t faulty, unsigned only);
void array_near_map(const struct tc_array *a, unsigned copies, uint64_t off, uint64_t len,
		    struct raid_extent *ext);

/* ------------------------------------------------------------------------------------
 * Member superblocks (sb.c; docs/raid.md has the table of fields and offsets).
 *
 * Every member of an array with superblocks starts with two copies of a 4 KiB member
 * superblock (at 0 and RAID_SB_SIZE); the newest valid copy (highest event count)
 * wins.  The rest of the first data_offset bytes is reserved for the array's own
 * metadata (a write-intent region map and a partial-parity log); the array's data
 * starts at data_offset on every member.
 */
/* Little-endian fields of the on-disk formats (sb.c, wimap.c, ppl.c). */
static inline void raid_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void raid_put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t raid_get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t raid_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

#define RAID_SB_MAGIC 0x52414354u      /* "TCAR" little-endian */
#define RAID_SB_VERSION 1u
#define RAID_SB_SIZE 4096u             /* bytes, one copy */
#define RAID_SB_DATA_OFFSET TC_ARRAY_DATA_OFFSET /* bytes reserved at each member's start */
#define RAID_SB_ROLE_SPARE 0xffffffffu /* role of a hot spare: no slot */
#define RAID_SB_DIRTY 0x1u             /* flags: writes may have been in flight */
#define RAID_SB_PPL 0x4u               /* flags: consistency policy "ppl" (RAID 5/6) */
#define RAID_SB_BITMAP 0x8u            /* flags: consistency policy "bitmap" */
#define RAID_SB_WRITTEN 0x10u          /* flags: the map's second plane records the
                                        * regions ever written (wimap.c); without it
                                        * (arrays made before it) every region counts
                                        * as written */
/* flags: the write-intent map keeps its bits while any slot is not active, since
 * event keep_since: a member that left at or after it can be re-added
 * (tc_array_re_add).  Versions before it cleared them, and refuse the flag. */
#define RAID_SB_KEEPBITS 0x20u
#define RAID_SB_FLAGS (RAID_SB_DIRTY | RAID_SB_PPL | RAID_SB_BITMAP | RAID_SB_WRITTEN | \
		       RAID_SB_KEEPBITS)

struct raid_sb_slot {
	uint8_t uuid[16];               /* the member device holding the slot */
	uint32_t state;                 /* TC_MEMBER_ACTIVE, _FAULTY or _REBUILDING */
	uint32_t flags;                 /* RAID_SB_SLOT_READD (REBUILDING only) */
	/* REBUILDING by a replace: the member being replaced, which still holds the
	 * slot's data at and above rebuild_pos (md's replacement device); zero else. */
	uint8_t old_uuid[16];
};

/* A slot's flag: its member was re-added (tc_array_re_add), and the rebuild visits
 * only the regions the write-intent map has set. */
#define RAID_SB_SLOT_READD 0x1u

/* A member superblock, decoded (host order). */
struct raid_sb {
	uint32_t level;                 /* enum tc_raid_level_id */
	uint32_t chunk;                 /* bytes */
	uint32_t copies;                /* RAID 1: members, RAID 10: 2.., else 1 */
	uint32_t members;               /* slots */
	uint32_t role;                  /* this member's slot, or RAID_SB_ROLE_SPARE */
	uint32_t flags;                 /* RAID_SB_DIRTY */
	uint8_t uuid[16];               /* the array's */
	uint8_t member_uuid[16];        /* this member's */
	char name[TC_NAME_MAX];         /* the array's, NUL-terminated */
	uint64_t data_offset;           /* bytes */
	uint64_t member_size;           /* bytes of array data on every member */
	uint64_t events;                /* +1 at every superblock update */
	uint64_t rebuild_pos;           /* rebuild checkpoint, bytes from data_offset */
	uint64_t ctime, utime;          /* ns since the epoch: created, last written */
	/* The rebuild rates set (tc_array_set_rebuild), 0 for each default: bytes/s per
	 * member, 0..100, windows in flight (1..64) */
	uint64_t rebuild_min, rebuild_max;
	uint32_t rebuild_priority, rebuild_depth;
	uint64_t keep_since;            /* RAID_SB_KEEPBITS: the event it was set at */
	struct raid_sb_slot slot[TC_ARRAY_MAX_MEMBERS];
};

enum raid_sb_status {
	RAID_SB_OK = 0,
	RAID_SB_SHORT,                  /* fewer than RAID_SB_SIZE bytes */
	RAID_SB_BAD_MAGIC,
	RAID_SB_BAD_VERSION,
	RAID_SB_BAD_CHECKSUM,
	RAID_SB_BAD_FIELD,
};

/* raid_refuse - a codec's refusal: @prefix and the message of @fmt into @why (@whylen
 * bytes; may be NULL); returns @st.  sb.c, wimap.c and ppl.c share it. */
__attribute__((format(printf, 5, 6)))
enum raid_sb_status raid_refuse(enum raid_sb_status st, char *why, size_t whylen,
				const char *prefix, const char *fmt, ...);

/* raid_check_header - the checks every on-disk record of the array layer starts with
 * (superblock, write-intent map block, partial-parity log entry): at least @size bytes
 * at @buf, the 32-bit @magic at byte 0, @version at byte 4, and the XXH64 (seed 0) of
 * the first @size - 8 bytes in the last 8.  Returns RAID_SB_OK, or the refusal (@prefix
 * and the reason in @why, as raid_refuse()). */
enum raid_sb_status raid_check_header(const void *buf, size_t len, uint32_t size,
				      uint32_t magic, uint32_t version, const char *prefix,
				      char *why, size_t whylen);

/* raid_sb_encode - @sb into the RAID_SB_SIZE bytes at @buf: little-endian, reserved
 * bytes zero, XXH64 (seed 0) of the first RAID_SB_SIZE - 8 bytes in the last 8. */
void raid_sb_encode(const struct raid_sb *sb, void *buf);

/* raid_sb_decode - check and decode the @len bytes at @buf (only the first
 * RAID_SB_SIZE are read): magic, version, checksum, then every field's range, each
 * refusal with its own message in @why (@whylen bytes; may be NULL).  Pure, never
 * reads past @len: the fuzz target's entry point. */
enum raid_sb_status raid_sb_decode(const void *buf, size_t len, struct raid_sb *sb,
				   char *why, size_t whylen);

/* raid_sb_read - both copies on @dev, the newest valid one into *@sb.  Returns 1,
 * 0 when neither copy has the magic (no member superblock), -EUCLEAN when the magic
 * is there but no copy is valid (@why says why copy 0 is not), -EIO / -errno.
 * @ok receives the number of valid copies (may be NULL). */
int raid_sb_read(tc_dev *dev, struct raid_sb *sb, unsigned *ok, char *why, size_t whylen);

/* raid_sb_write - both copies of @sb on @dev, copy 0 then copy 1, each FUA (a torn
 * write leaves the other copy valid).  Returns 0 or a negative errno. */
int raid_sb_write(tc_dev *dev, const struct raid_sb *sb);

/* array_check - the checks of tc_dev_new_array on @o and @members (messages and
 * errors as documented there); the level, chunk and copies to use on success. */
int array_check(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members,
		unsigned n, const struct tc_raid_level **levelp, uint32_t *chunkp,
		unsigned *copiesp);

/* array_open - tc_dev_new_array with the device named @name (NULL: after the level
 * and members), the data starting @data_offset bytes into every member and
 * @member_size bytes of it used on each (0: the smallest member less @data_offset,
 * in whole chunks). */
int array_open(tc_ctx *ctx, const struct tc_array_opts *o, tc_dev **members, unsigned n,
	       const char *name, uint64_t data_offset, uint64_t member_size, tc_dev **out);

/* array_sb_changed - a member state changed: the superblocks are rewritten soon, off
 * the I/O path (sb.c's persist thread; in a deterministic context, a work item of the
 * context).  Never blocks.  Returns false when @a has neither (no superblocks,
 * read-only): then nothing was queued, and a->persist (if any) is for the caller to
 * run. */
bool array_sb_changed(struct tc_array *a);

/* array_sb_hold - between a member state change and the superblocks recording it,
 * hold the completion of @io (a write, write-zeroes, discard or flush of the array)
 * with @result: the persist thread (or work item) completes it once the record is on
 * the members (md holds writes the same way while MD_SB_CHANGE_PENDING).  Returns true when held,
 * false when @io is to complete now.  Never blocks. */
bool array_sb_hold(struct tc_array *a, struct tc_io *io, int result);

/* array_sb_forget - a hot spare @dev has left @a (tc_array_remove): once no superblock
 * update still writes to it, erase its member superblock (both copies), so that an
 * assembly finds it blank instead of taking it back as a spare (the members' records
 * list slots, not spares).  Nothing for read-only arrays or arrays without
 * superblocks.  Blocks (the caller's thread; deterministic contexts: polls).  Returns
 * 0 or the write's negative errno. */
int array_sb_forget(struct tc_array *a, tc_dev *dev);

/* What a refused re-add says to do instead (the end of its message). */
#define RAID_READD_INSTEAD "bring it back as a spare instead, a whole rebuild: `tiercache " \
	"array remove` it if the array still lists it, then `tiercache array add-spare " \
	"--force`"

/* array_sb_member_slot - the slot @dev held as a member of @a, by its superblock:
 * the array's uuid, a member's role (not a spare's), the member uuid the slot table
 * still records for that slot (no other member took it since), its own record of the
 * slot active (or being re-added: not a rebuild it had not finished), an event count
 * not past the array's and not before the map kept its bits while degraded
 * (RAID_SB_KEEPBITS, keep_since).  Sets *@slot and @uuid (16 bytes).  Returns 0,
 * -EINVAL (the reason logged, naming the device), or the read's error.  Does not look
 * at the slot's state in the array. */
int array_sb_member_slot(struct tc_array *a, tc_dev *dev, unsigned *slot, uint8_t *uuid);
/* array_sb_left_back - @dev, added to @a live (a spare, a replacement), is no longer
 * "left out": tc_array_identity stops listing the entry of the assembly that left a
 * device of that name out.  Never blocks for I/O. */
void array_sb_left_back(struct tc_array *a, const tc_dev *dev);

/* array_sb_keep_rates - take the rebuild rates in force for the superblocks' next
 * write (tc_array_set_rebuild, on the caller's thread). */
void array_sb_keep_rates(struct tc_array *a);

/* array_sb_close - at close, before the members are: flush the members and write
 * clean superblocks (unless read-only), stop the persist thread, free a->persist_priv. */
void array_sb_close(struct tc_array *a);

/* ------------------------------------------------------------------------------------
 * Consistency after a crash (docs/raid.md, "The write hole").  The metadata area of
 * every member (the first data_offset bytes) holds, after the two superblock copies:
 *   1 MiB .. 4 MiB  the write-intent map (wimap.c): 4 KiB blocks of region bits
 *   4 MiB .. 8 MiB  the partial-parity log (ppl.c): fixed slots, RAID 5 and 6
 * Both follow Linux md (drivers/md/md-bitmap.c, drivers/md/raid5-ppl.c and
 * Documentation/driver-api/md/raid5-ppl.rst); the code is ours.
 */
#define RAID_MAP_OFFSET (1u << 20)     /* bytes into every member */
#define RAID_MAP_AREA (3u << 20)       /* bytes */
#define RAID_MAP_BLOCK 4096u           /* bytes: one block, written whole */
#define RAID_MAP_MAGIC 0x4d574354u     /* "TCWM" little-endian */
#define RAID_MAP_VERSION 1u
#define RAID_MAP_HDR 64u               /* header bytes of a block; bits follow */
#define RAID_MAP_BITS_PER_BLOCK ((RAID_MAP_BLOCK - RAID_MAP_HDR - 8u) * 8u)
#define RAID_MAP_MAX_REGION_SHIFT 26u  /* 64 MiB, md's usual bitmap chunk */
#define RAID_MAP_MIN_REGIONS 64u
#define RAID_MAP_DAEMON_NS (5ull * 1000000000ull) /* md's daemon_sleep default, 5 s */

/* The map's planes: blocks 0 .. nblocks - 1 hold the write-intent bits (arrays with
 * the consistency policy "bitmap": RAID_SB_BITMAP), blocks nblocks .. 2 nblocks - 1
 * the written bits (RAID_SB_WRITTEN: a region's bit is set, durably, before the
 * first write to it ever, and never cleared; a region whose bit is clear holds zeros
 * on every member, so a rebuild writes zeros there instead of reading the others).
 * md's llbitmap keeps the same "unwritten" state per region. */
#define RAID_MAP_INTENT 0x1u
#define RAID_MAP_WRITTEN 0x2u

/* One block of the map, decoded. */
struct raid_map_block {
	uint8_t uuid[16];               /* the array's */
	uint32_t plane;                 /* 0: write-intent bits, 1: written bits */
	uint32_t index;                 /* this block's number in its plane, from 0 */
	uint32_t nblocks;               /* blocks in the map */
	uint32_t region_shift;          /* region = 1 << region_shift member bytes */
	uint64_t nregions;              /* regions in the map (all blocks) */
	uint8_t bits[RAID_MAP_BLOCK - RAID_MAP_HDR - 8u]; /* bit r: region index *
	                                 * RAID_MAP_BITS_PER_BLOCK + r may be dirty */
};

/* raid_map_region_shift - the region size (log2, bytes of every member) of an array
 * with @member_size bytes per member and chunk @chunk: the largest power of two
 * giving at least RAID_MAP_MIN_REGIONS regions, at most 64 MiB, at least one chunk. */
unsigned raid_map_region_shift(uint64_t member_size, uint32_t chunk);

/* raid_map_block_encode - @b into the RAID_MAP_BLOCK bytes at @buf: little-endian,
 * reserved bytes zero, XXH64 (seed 0) of the first RAID_MAP_BLOCK - 8 bytes last. */
void raid_map_block_encode(const struct raid_map_block *b, void *buf);

/* raid_map_block_decode - check the @len bytes at @buf as block @index of plane
 * @plane (0 write-intent, 1 written) of the map of the array @uuid whose map has
 * @nregions regions of 1 << @shift bytes: magic, version, checksum, then every field;
 * a refusal says why in @why ("write-intent map block 3: ...", "written map block 3:
 * ...").  Bits past nregions must be zero.  Pure. */
enum raid_sb_status raid_map_block_decode(const void *buf, size_t len, const uint8_t *uuid,
					  uint32_t plane, uint32_t index, uint64_t nregions,
					  unsigned shift, struct raid_map_block *b, char *why,
					  size_t whylen);

/* raid_map_attach - give @a (a redundant level, superblocks) its region map with the
 * planes @planes (RAID_MAP_INTENT, RAID_MAP_WRITTEN), all clear in memory, for the
 * array @uuid.  With @members (the slot devices, NULL where missing) the planes on
 * them are read first, the bits set in any valid copy of a block counting (a block
 * with no valid copy counts as all set): both planes (the write-intent bits of a
 * clean stop are those a degraded array kept for a re-add, cleared once it is whole
 * again); when @dirty (an unclean stop) the write-intent bits are also the regions
 * to resync, kept set until raid_map_resync_done(); *@dirty_regions gets their count.  Then the
 * map is written to every member (synchronously, FUA), unless @readonly.  Returns 0
 * or a negative errno (-ENOMEM, -EFBIG when the planes do not fit the map area, a
 * write's error). */
int raid_map_attach(struct tc_array *a, const uint8_t *uuid, unsigned planes,
		    tc_dev *const *members, bool dirty, bool readonly,
		    uint64_t *dirty_regions);

/* raid_map_start - a write of member bytes [@moff, @moff + @len) (relative to
 * data_offset) begins: its regions count it in flight.  Returns true when their bits
 * (write-intent and written, the planes the map has) are on the members already;
 * false when not: the bits are set, a map write goes out, and @w->fn(@w->arg) runs
 * once they are durable (any thread).  Never blocks. */
struct raid_map_wait {
	void (*fn)(void *arg);
	void *arg;
	uint64_t gen;                   /* map-private */
	struct raid_map_wait *next;
};
bool raid_map_start(struct tc_array *a, uint64_t moff, uint64_t len,
		    struct raid_map_wait *w);
/* raid_map_end - that write completed; its regions are idle once none is in flight
 * (cleared RAID_MAP_DAEMON_NS later, after a flush of the members). */
void raid_map_end(struct tc_array *a, uint64_t moff, uint64_t len);
/* raid_map_needs_sync - whether member offset @moff is in a region to resync (true
 * without a write-intent plane: everything is). */
bool raid_map_needs_sync(struct tc_array *a, uint64_t moff);
/* raid_map_resync_pending - whether regions named at assembly are still to resync
 * (raid_map_resync_done not called yet); false without a map. */
bool raid_map_resync_pending(struct tc_array *a);
/* raid_map_resync_done - the resync pass ended: the regions to resync become normal
 * dirty regions (cleared when idle). */
void raid_map_resync_done(struct tc_array *a);
/* raid_map_whole - every member of @a is active again (a rebuild ended): the
 * write-intent bits kept while it was degraded are cleared once idle. */
void raid_map_whole(struct tc_array *a);
/* raid_map_intent_next - the first member offset at or above @moff (relative to
 * data_offset) in a region whose write-intent bit is set, or is being cleared by a
 * map write not yet out: @moff itself when its region is, else a region's start
 * (possibly past the members' size when none is).  @moff without a write-intent
 * plane.  Any thread (takes the map's lock; a->lock may be held). */
uint64_t raid_map_intent_next(struct tc_array *a, uint64_t moff);
/* raid_map_counts - of the write-intent plane: regions, regions whose bit is set
 * now, region bytes (zeros without that plane). */
void raid_map_counts(struct tc_array *a, uint64_t *regions, uint64_t *dirty,
		     uint64_t *region_bytes);
/* raid_map_has_intent - whether @a keeps a write-intent plane (a resync after an
 * unclean stop visits only its regions). */
bool raid_map_has_intent(struct tc_array *a);
/* raid_map_written - whether the region of member offset @moff may hold data written
 * through the array: false only when the written plane says it never was (its
 * members hold zeros there).  Any thread. */
bool raid_map_written(struct tc_array *a, uint64_t moff);
/* raid_map_unwritten - whether every region overlapping member bytes [@lo, @hi) is
 * one the written plane says was never written (its members hold zeros); false
 * without that plane.  Any thread. */
bool raid_map_unwritten(struct tc_array *a, uint64_t lo, uint64_t hi);
/* raid_map_written_from - member bytes at and above member offset @moff (relative to
 * data_offset) that lie in regions ever written, into *@bytes (a rebuild's work
 * left); false (nothing set) without the written plane.  Any thread; not under
 * a->lock. */
bool raid_map_written_from(struct tc_array *a, uint64_t moff, uint64_t *bytes);
/* raid_map_written_counts - of the written plane: regions, regions written, region
 * bytes (zeros without that plane). */
void raid_map_written_counts(struct tc_array *a, uint64_t *regions, uint64_t *written,
			     uint64_t *region_bytes);
/* raid_map_rewrite - write every block of the map again, in the background (a member
 * that took a slot holds none of it yet). */
void raid_map_rewrite(struct tc_array *a);
/* raid_map_close - at close: wait for the map write in flight; when @clean (the
 * members were flushed), write the map all clear.  Frees it. */
void raid_map_close(struct tc_array *a, bool clean);

/* ---- the partial-parity log (ppl.c, raid56.c) ---- */
#define RAID_PPL_OFFSET (4u << 20)     /* bytes into every member */
#define RAID_PPL_AREA (4u << 20)       /* bytes */
#define RAID_PPL_MAGIC 0x4c504354u     /* "TCPL" little-endian */
#define RAID_PPL_VERSION 1u
#define RAID_PPL_HDR 4096u             /* header bytes; the partial parity follows */
#define RAID_PPL_MAX_SLOTS 64u

/* One log entry: a partial-stripe update of rows [lo, hi) of stripe @stripe. */
struct raid_ppl_entry {
	uint8_t uuid[16];               /* the array's */
	uint64_t seq;                   /* grows with every entry of the session */
	uint64_t stripe;
	uint32_t lo, hi;                /* rows of the chunk, bytes */
	uint32_t parity;                /* parity blocks logged: 1 (P) or 2 (P, Q) */
	uint32_t touched;               /* data slots being modified (bit per slot) */
	uint32_t ws[TC_ARRAY_MAX_MEMBERS], we[TC_ARRAY_MAX_MEMBERS]; /* their rows */
	uint64_t pp_csum;               /* XXH64 of the parity * (hi - lo) bytes after */
	uint32_t in_pp;                 /* of touched, the slots whose member was lost at
	                                 * the write: their new data is in the partial
	                                 * parity (it lives only in the parity) */
};

/* raid_ppl_slots - slots of the log for chunk @chunk and @m parity blocks: each holds
 * a header and up to m chunks of partial parity; 0 when not even one fits. */
unsigned raid_ppl_slots(uint32_t chunk, unsigned m);
uint64_t raid_ppl_slot_size(uint32_t chunk, unsigned m);

/* raid_ppl_encode / raid_ppl_decode - the RAID_PPL_HDR-byte header of an entry
 * (little-endian, XXH64 last, as the superblock).  decode checks magic, version,
 * checksum, the uuid (@uuid), then every field against @k data and @m parity slots
 * and chunk @chunk; each refusal says why in @why.  Pure. */
void raid_ppl_encode(const struct raid_ppl_entry *e, void *buf);
enum raid_sb_status raid_ppl_decode(const void *buf, size_t len, const uint8_t *uuid,
				    unsigned k, unsigned m, uint32_t chunk,
				    struct raid_ppl_entry *e, char *why, size_t whylen);

/* raid_ppl_recover - at assembly of a dirty RAID 5/6 array with the log (synchronous,
 * before array_open): for every stripe with an entry on its P (or Q) member, the
 * newest entry's partial parity plus the data of the chunks it was modifying, as they
 * are on the members now, becomes the parity again (md's ppl_recover_entry), so that
 * a chunk rebuilt from it later holds what it held.  Rows of a modified chunk whose
 * member is missing keep their parity.  @dev: the slot devices, NULL where missing;
 * @old (NULL: none): per slot, the old member of a replace in progress, NULL where
 * none (its log is read instead of the successor's, which lacks the entries from
 * before the replace; it serves the rows at and above the checkpoint and takes the
 * recomputed parity as the successor does); @valid (NULL: all whole): per slot,
 * the member offset (bytes from the data area) below which it holds valid data (a
 * member being rebuilt: its checkpoint; above it it counts as missing unless @old
 * names its old member, its log is read all the same).  Returns the stripes
 * recovered, or a negative errno (a read or write failed). */
int raid_ppl_recover(tc_ctx *ctx, const char *name, tc_dev *const *dev,
		     tc_dev *const *old, const uint64_t *valid, unsigned n, unsigned m,
		     uint32_t chunk, uint64_t data_offset, const uint8_t *uuid);

/* raid_ppl_wipe - zero the log of every device in @dev (NULL skipped), FUA: at
 * assembly after recovery, and on a spare or a replacement as it joins, so that no
 * entry of an earlier session is ever replayed.  0 or the first write's -errno. */
int raid_ppl_wipe(tc_ctx *ctx, const char *name, tc_dev *const *dev, unsigned n);

/* array_ppl_enable - RAID 5/6: partial-stripe updates go through the log from now on
 * (raid56.c); before any I/O.  Returns 0, -EINVAL (no slot fits the chunk), -ENOMEM. */
int array_ppl_enable(struct tc_array *a, const uint8_t *uuid);

#endif /* TC_RAID_H */
