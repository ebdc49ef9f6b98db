/* SPDX-License-Identifier: MIT */
/*
 * cache_priv.h - the cache engine's private structures.
 *
 * Map: a flat array of struct tc_line (one per cache slot) plus a chained hash index
 * (buckets[] of slot numbers, chains through tc_line.hnext).  A bucket belongs to a
 * lock shard; the shard mutex protects the bucket chains, the lines hashed there and the
 * in-flight records of those lines.  No cache-wide lock on the hit path.
 *
 * In-flight records (struct tc_inflight) exist only for lines with requests in
 * progress: they are the line lock (readers / one writer, FIFO waiters), coalesce
 * misses (the second miss waits for the first fill, then hits), and carry the line's
 * generation, bumped by every write, discard and invalidation, so the cleaner can tell
 * whether a line was rewritten while its writeback was in flight.
 *
 * Lock order: shard lock -> md block lock.  The allocator lock is taken with no
 * shard lock held; under it, victims' shards are only try-locked.
 */
#ifndef TC_CACHE_PRIV_H
#define TC_CACHE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include "ctx.h"
#include "dev.h"
#include "format.h"
#include "line.h"
#include "policy.h"

#define TC_COMMIT_ERR_LIMIT 3    /* cache-device errors before pass-through fallback */
#define TC_TICK_NS 10000000ull   /* cleaner / commit timer period: 10 ms */
#define TC_CLEAN_BATCH 64        /* lines per writeback batch, at least */
#define TC_CLEAN_BATCH_BYTES (4u << 20) /* and at least this many bytes of lines */

struct tc_cache;
struct tc_line_hold;

/*
 * A volume's dirty index (dirty.c): the dirty 4 KiB units of each group of
 * group_lines lines (its backing's full stripe, or TC_DIRTY_GROUP_LINES lines) that
 * has any (line l is in group (l + shift) / group_lines: shift aligns the groups with
 * the backing's stripes, tc_volume.stripe_skew), in an open-addressed table of cap entries (a power of 2), count of them in
 * use.  full counts the groups wholly dirty (group_units of them; 0 = groups are no
 * stripes, none counted).  lost: a count went wrong or the table could not grow; the
 * cleaner scans the lines instead until the index is rebuilt at the next attach.
 */
#define TC_DIRTY_GROUP_LINES 16u
struct tc_dirty_group {
	uint32_t group;                  /* line_no / group_lines */
	uint32_t units;                  /* dirty 4 KiB units in it; 0 = entry empty */
};
struct tc_dirty_index {
	pthread_mutex_t lock;
	uint32_t group_lines, group_units, shift;
	uint32_t cap, count, full;
	bool lost;
	bool ready;                      /* set by tc_dirty_init, before the index is
					  * shared; the rest under lock */
	struct tc_dirty_group *tab;
};

/* An empty index of groups of @group_lines lines, the first @shift lines short (line
 * l in group (l + @shift) / @group_lines), @group_units of them a full group (0: none
 * counted as full).  0, or -ENOMEM. */
int tc_dirty_init(struct tc_dirty_index *d, uint32_t group_lines, uint32_t group_units,
		  uint32_t shift);
void tc_dirty_fini(struct tc_dirty_index *d);
/* Empty the index (and trust it again): before a rebuild from the lines. */
void tc_dirty_reset(struct tc_dirty_index *d);
/* Line @line_no's dirty units changed by @units (negative: cleaned). */
void tc_dirty_add(struct tc_dirty_index *d, uint32_t line_no, int64_t units);
/* Whether any group holding a line of [@first_line, @last_line] has dirty units
 * (false when the index is lost). */
bool tc_dirty_any(struct tc_dirty_index *d, uint32_t first_line, uint32_t last_line);
/* The groups with dirty data, unordered, as (group << 32 | units) in *@out (malloc'd,
 * the caller frees it), *@nfull of them full; returns how many, -ENOENT when the index
 * is lost, -ENOMEM. */
int64_t tc_dirty_collect(struct tc_dirty_index *d, uint64_t **out, uint32_t *nfull);
/* Bytes the index's table takes. */
size_t tc_dirty_mem(struct tc_dirty_index *d);
/* Groups wholly dirty now. */
uint32_t tc_dirty_full(struct tc_dirty_index *d);
bool tc_dirty_lost(struct tc_dirty_index *d);

/* A line's in-flight record (lock.c): its lock and its generation. */
struct tc_inflight {
	uint64_t key;
	struct tc_inflight *next;
	uint32_t refs;          /* holders, waiters and cleaner references */
	uint32_t readers;
	bool writer;
	bool cleaning;          /* in a writeback batch (cleaner.c): no other batch takes it */
	uint32_t gen;
	struct tc_line_hold *wait_head, *wait_tail;
};

/*
 * One party's hold on a line lock, or its place in the line's queue (lock.c); a
 * sub-request embeds one.  The owner sets want_excl before acquiring and resume.fn
 * once: a waiter granted the line is resumed by queuing resume on the context, with
 * the lock held in the mode asked for.
 */
struct tc_line_hold {
	struct tc_inflight *inf;        /* the line's record while holding or queued */
	struct tc_line_hold *wnext;     /* next in the record's queue of waiters */
	bool want_excl;                 /* the mode to acquire in */
	bool excl;                      /* the mode held */
	bool holding;
	struct tc_work resume;
};

struct tc_lock_shard {
	pthread_mutex_t lock;
	struct tc_inflight *inflight;
	struct tc_inflight *spare;       /* one freed record kept for reuse */
} __attribute__((aligned(64)));

/* Group commit of metadata; metadata.c. */
struct tc_commit_waiter {
	void (*fn)(struct tc_commit_waiter *w, int result);
	uint64_t target;                 /* commit sequence that satisfies it */
	struct tc_commit_waiter *next;
};

struct tc_meta {
	pthread_mutex_t lock;
	uint32_t nblocks;
	_Atomic uint8_t *block_dirty;    /* 1 per block changed since its last snapshot */
	uint8_t *copy_latest;            /* per block: copy (0/1) holding the newest version */
	pthread_mutex_t *block_locks;    /* per block: entry consistency for snapshots */
	uint64_t seq;                    /* last commit started */
	uint64_t done_seq;               /* last commit finished (success or failure) */
	bool running, again;
	struct tc_commit_waiter *waiters;
	uint64_t last_commit_ns;
	/* Damage seen by the last load: single copies refused, blocks with both copies
	 * refused (only an inspection continues past one). */
	uint64_t copies_damaged, blocks_lost;
	bool inspecting;
	/* The commit in flight. */
	uint32_t *snap_blocks;           /* block numbers */
	uint32_t nsnap;
	uint8_t *snap_buf;               /* nsnap * 4096, aligned */
	struct tc_md_block *scratch;
	int step;                        /* enum commit_step_id (metadata.c) */
	int pending, err;
	struct tc_work work;
	struct tc_io *ios;               /* one per block + flushes */
	struct iovec *iovs;
	struct tc_cache *cache;
};

/* Where a volume stands in moving its backing's attach generation after a fallback. */
enum tc_release_state { TC_RELEASE_NONE, TC_RELEASE_WRITING, TC_RELEASE_DONE };

/* Indexes into tc_volume.st[] */
enum {
	ST_READ_HITS, ST_READ_PARTIAL, ST_READ_MISSES, ST_WRITE_HITS, ST_WRITE_PARTIAL,
	ST_WRITE_MISSES, ST_READS, ST_WRITES, ST_FLUSHES, ST_DISCARDS, ST_WRITE_ZEROES,
	ST_BYTES_READ, ST_BYTES_WRITTEN, ST_PROMOTIONS, ST_EVICTIONS, ST_BYPASS_SEQ,
	ST_BYPASS_ADMIT, ST_BYPASS_BYTES, ST_WB_BYTES, ST_WB_IOS, ST_ERRORS,
	ST_CACHE_ERRORS, ST_BACKING_ERRORS,
	/* The volume's traffic on the cache device (its wear): every slot read and write,
	 * and of those the fills of read misses and the cleaner's reads. */
	ST_CACHE_BYTES_READ, ST_CACHE_BYTES_WRITTEN, ST_CACHE_FILL_BYTES, ST_CACHE_WB_READ_BYTES,
	/* Instant write-back: bytes of full stripes made dirty at once; wb: bytes of
	 * whole-stripe writes sent to the backing in one request. */
	ST_INSTANT_BYTES, ST_FULL_STRIPE_BYTES,
	/* The cleaner on a backing with a full stripe (cleaner.c): whole stripes written
	 * back in one request, the stripes of those it completed with clean cached data,
	 * and the clean bytes it wrote to complete them. */
	ST_WB_FULL_STRIPES, ST_WB_STRIPES_COMPLETED, ST_WB_FILL_BYTES,
	/* ... and the stripes it completed with data read from the backing, and the
	 * bytes it read for them. */
	ST_WB_STRIPES_RECON, ST_WB_BACKING_READ_BYTES,
	/* Sequential writes kept in the cache: their stripe held dirty data (plan.c). */
	ST_SEQ_DIRTY_STRIPE,
	ST__COUNT
};

struct tc_volume {
	struct tc_cache *cache;
	tc_dev *backing;
	uint8_t id;
	char name[TC_NAME_MAX];
	uint64_t size;                   /* bytes */
	uint64_t stripe;                 /* bytes: the backing's full stripe, 0 = none (the
					  * stored stripe size, else the device's limits) */
	uint64_t stripe_skew;            /* bytes: TC_BACKING_DATA_OFFSET % stripe; volume
					  * offset x lies at x + stripe_skew on the backing's
					  * stripe grid (tc_stripe_pos) */
	struct tc_backing_sb bsb;
	int bsb_latest;                  /* copy holding the newest backing superblock */
	struct tc_volume_settings set;   /* the I/O path reads single fields with
					  * TC_SET(); tc_volume_set() publishes field by
					  * field (tc_settings_publish) */
	_Atomic int draining;            /* >0: writes go write-through, cleaner flat out */
	atomic_bool discarding;          /* detach dropping dirty data: no writeback at all */
	_Atomic int wb_inflight;         /* writes planned as write-back, not yet finished */
	/* The service-rate rule (plan.c, tc_plan_stream_path): EWMA of the rate at
	 * which whole-stripe writes of this volume completed, bytes/s: [0] made dirty at
	 * once in the cache (TC_SRATE_CACHE), [1] written whole to the backing
	 * (TC_SRATE_BACKING); 0 = not measured yet.  srate_n counts each path's
	 * completed requests, srate_kept those sampled (not the first after a switch of
	 * path), srate_tick the decisions; srate_last is the path of the latest,
	 * srate_fav the path the rates favoured at the latest decision past the
	 * warm-up; the next probe burst starts at decision srate_probe_at, srate_period
	 * decisions after the previous one (doubling while the choice holds). */
	_Atomic uint64_t srate[2];
	atomic_uint srate_n[2], srate_kept[2];
	_Atomic uint8_t srate_last, srate_fav;
	atomic_uint srate_tick, srate_probe_at, srate_period;
	_Atomic uint64_t dirty_units;    /* 4 KiB units dirty */
	struct tc_dirty_index dirty_ix;  /* where they are, by group (dirty.c) */
	_Atomic uint64_t valid_units;
	_Atomic uint64_t last_io_ns;
	_Atomic int inflight_reqs;
	struct tc_seq seq;
	/* Cleaner state. */
	uint64_t clean_cursor;           /* next line number in elevator order */
	/* The cache device's tc_dev_health_gen whose exposed lines the cleaner has
	 * written back first (cleaner.c, survivors first); cleaner context only. */
	uint64_t exposed_gen;
	uint64_t tokens;                 /* writeback budget, bytes */
	uint64_t tokens_ns;              /* when tokens were last refilled */
	_Atomic uint32_t clean_pending;  /* its lines in the cleaner's flush group */
	atomic_bool no_stripe_fill;      /* test hook: write back dirty units only */
	uint64_t rate_window_start, rate_window_bytes;
	_Atomic uint64_t rate_last;      /* bytes/s over the last full second */
	_Atomic uint64_t rate_stamp_ns;  /* when rate_last was last published */
	/* After the cache failed (pass-through fallback): once the volume has no dirty
	 * data left, a FLUSH or FUA write first moves the backing's attach generation on
	 * the backing (one superblock write), so that the failed cache, met again after a
	 * restart, is not trusted for data the backing has overwritten since
	 * (request.c, fallback_durable). */
	pthread_mutex_t release_lock;
	int release_state;               /* enum tc_release_state */
	struct tc_commit_waiter *release_waiters;
	uint8_t *release_buf;            /* the encoded superblock being written */
	int release_target;              /* its copy */
	uint64_t release_gen, release_attach_gen;
	struct tc_io release_io;
	struct iovec release_iov;
	atomic_bool undurable_warned;    /* the "dirty data cannot be made durable" message */
	/* Counters (atomic). */
	_Atomic uint64_t st[ST__COUNT];
	/* Latency histograms, one per enum tc_lat_class (stats.c); lat_off: recording
	 * stopped (tc_volume_set_latency_stats, for the hit-path benchmark). */
	struct tc_lat_hist *lat;
	atomic_bool lat_off;
	/* Range maintenance (range.c): range_busy, one range operation at a time; while
	 * range_flush, writes to lines [range_lo, range_hi) go write-through and the
	 * cleaner writes back only those lines, unlimited. */
	atomic_bool range_busy, range_flush;
	_Atomic uint64_t range_lo, range_hi;
	/* Partition (alloc.c): slots mapped to this volume, and its reserve and cap in
	 * lines (0 = none), resolved from the settings by tc_shares_update(). */
	_Atomic uint64_t lines;
	_Atomic uint64_t res_lines, cap_lines;
	atomic_bool cap_pressure;        /* at its cap with no own line evictable: the
					  * cleaner writes it back at full rate */
	/* Ranges with cache attributes (region.c): the lines form, read lock-free by the
	 * I/O path under the sequence lock region_seq (odd while a writer stores), and
	 * the byte form (region_tab, region_n) under region_lock, sorted by offset. */
	_Atomic uint32_t region_seq;
	_Atomic uint32_t nregions;
	struct {
		_Atomic uint64_t span;       /* first line << 32 | last line */
		_Atomic uint32_t attr;       /* kind | write policy << 8 */
	} regions[TC_VOL_REGIONS_MAX];
	pthread_mutex_t region_lock;
	struct tc_region region_tab[TC_VOL_REGIONS_MAX];
	unsigned region_n;
	_Atomic uint64_t pinned_lines;   /* resident slots carrying TC_LINE_PINNED */
};

/* ---- ranges with cache attributes (region.c) ---- */
/* The kind (enum tc_region_kind) of the range holding line @line_no of @v, 0 for none;
 * *@wp (may be NULL) its write policy.  Lock-free, any thread. */
unsigned tc_region_lookup(struct tc_volume *v, uint32_t line_no, uint8_t *wp);
static inline unsigned tc_region_of(struct tc_volume *v, uint32_t line_no, uint8_t *wp)
{
	if (!atomic_load_explicit(&v->nregions, memory_order_relaxed))
		return 0;
	return tc_region_lookup(v, line_no, wp);
}
/* Whether a range of @kind touches lines [@first, @last] of @v.  Lock-free. */
bool tc_region_any(struct tc_volume *v, uint32_t first, uint32_t last, unsigned kind);
/* The volume's ranges from the cache superblock into its tables (attach, sb_lock
 * held); the slots follow with tc_regions_reconcile() once it is online. */
void tc_regions_load(struct tc_volume *v);
/* Make the volume's resident slots agree with its pins (no lock held; O(slots)). */
void tc_regions_reconcile(struct tc_volume *v);
/* Remove volume @id's ranges from superblock @sb (its record goes). */
void tc_regions_drop_record(struct tc_cache_sb *sb, uint8_t id);
/* Lines pinned by volume @id's ranges in the cache superblock (sb_lock held). */
uint64_t tc_regions_pinned_lines(struct tc_cache *c, uint8_t id);

/* Whether line @line_no of @v is in a range flush's window (tc_volume_flush_range). */
static inline bool tc_range_flushing(struct tc_volume *v, uint64_t line_no)
{
	return atomic_load(&v->range_flush) && line_no >= atomic_load(&v->range_lo) &&
	       line_no < atomic_load(&v->range_hi);
}

/*
 * A histogram recorded lock-free by every thread completing requests: the buckets of
 * struct tc_hist (same geometry, tc_hist_bucket()), each an atomic counter, plus the
 * exact sum and extremes.  The count is the sum of the buckets; the minimum is kept
 * inverted (~min) so that zeroed memory means "empty" and both extremes grow by CAS.
 */
struct tc_lat_hist {
	_Atomic uint64_t sum;            /* ns */
	_Atomic uint64_t max;            /* ns */
	_Atomic uint64_t inv_min;        /* ~min ns; 0 while empty */
	_Atomic uint64_t b[TC_HIST_BUCKETS];
};


/*
 * One writeback batch (cleaner.c): up to tc_cleaner.batch_lines dirty lines of one
 * volume, read from the cache, written to the backing, the backing flushed, then
 * marked clean.  A slot with vol NULL is free.
 */
struct tc_clean_batch {
	struct tc_cache *c;
	struct tc_volume *vol;           /* NULL: free; set (under meta.lock) when claimed */
	uint32_t n;                      /* lines in the batch */
	struct tc_clean_line {
		uint32_t slot, line_no;
		uint16_t mask;               /* units written back */
		uint16_t fill;               /* clean valid units written too, to complete
		                              * the backing's stripe (not marked) */
		uint16_t bfill;              /* units read from the backing to complete the
		                              * stripe (neither dirty nor valid in the
		                              * cache); slot TC_SLOT_NONE: a line the cache
		                              * does not hold, locked meanwhile */
		uint32_t gen;
		struct tc_inflight *inf;
		uint8_t *buf;
	} *lines;                        /* batch_lines entries */
	uint8_t *bufs;                   /* batch_lines * line_size */
	int pending, err;
	int berr;                        /* a backing read of the stripes it completes */
	uint32_t lps;                    /* lines per stripe it was collected with (0:
	                                  * no stripes) */
	int step;                        /* enum batch_step_id (cleaner.c) */
	unsigned nwrites;                /* backing writes the batch submitted */
	struct tc_io *ios;               /* batch_lines * 9 + 1 */
	struct iovec *iovs;
	struct tc_work work;
};

#define TC_CLEAN_SLOTS 3          /* writeback batches in flight at once */

/* A line a batch wrote to the backing, waiting for the backing flush that lets it be
 * marked clean (cleaner.c, the flush group). */
struct tc_clean_done {
	struct tc_volume *vol;
	struct tc_clean_line ln;
};

struct tc_cleaner {
	unsigned active;                 /* batches claimed or in flight (meta.lock) */
	/* Batches writing the backings (meta.lock): how many have writes in flight, and
	 * those whose cache reads are done, waiting for their turn, FIFO (cleaner.c,
	 * write_turns). */
	unsigned nwriters;
	struct tc_clean_batch *write_wait[TC_CLEAN_SLOTS];
	unsigned nwrite_wait;
	uint32_t batch_lines;            /* lines per batch: TC_CLEAN_BATCH, or more
	                                  * so that a batch spans TC_CLEAN_BATCH_BYTES */
	struct tc_clean_batch b[TC_CLEAN_SLOTS];
	/* The candidates of the last scan (cleaner.c, scan_dirty): runs of lines with
	 * dirty data, first line << 32 | lines, in the order the batches that follow
	 * take them until used up; each line is checked again under its shard lock when
	 * taken.  Under mgmt_lock. */
	uint64_t *scan;
	uint32_t scan_cap, scan_cnt, scan_pos;
	struct tc_volume *scan_vol;      /* whose lines scan holds; NULL = none */
	uint32_t scan_sub;               /* lines of scan[scan_pos] already taken */
	bool scan_rf;                    /* taken for a range flush of [scan_lo, scan_hi) */
	bool scan_partial;               /* with partial stripes (partial_stripes_ok) */
	uint64_t scan_health;            /* the device's tc_dev_health_gen at that scan: a
	                                  * failure since rescans (survivors first) */
	uint64_t scan_lo, scan_hi;
	/* The flush group (meta.lock): lines whose backing writes completed, waiting for
	 * a flush submitted after that (pend), and those the flush in flight covers
	 * (flushing); each array holds done_cap entries, and a batch starts only while
	 * the lines of every batch in flight fit into pend. */
	struct tc_clean_done *pend, *flushing;
	uint32_t npend, nflushing, done_cap;
	bool flush_inflight;
	int flush_pending, flush_err;
	struct tc_io flush_ios[TC_MAX_VOLUMES];
};

#define TC_LIVE_SHARDS 16
struct tc_req;
struct tc_live {
	pthread_mutex_t lock;
	struct tc_req *head;
} __attribute__((aligned(64)));

struct tc_cache {
	tc_ctx *ctx;
	tc_dev *dev;
	struct tc_cache_sb sb;
	int sb_latest;
	pthread_mutex_t sb_lock;         /* management operations: superblock writes and the
					  * volume records; held across I/O, never taken by the
					  * I/O path, the cleaner or timers */
	pthread_mutex_t mgmt_lock;       /* vols[] (online volumes); short sections only */
	uint32_t line_size, units, unit_mask_all;
	unsigned line_shift;
	uint32_t nslots;
	struct tc_line *lines;
	uint32_t *buckets;
	uint32_t bucket_mask;
	struct tc_lock_shard *shards;
	uint32_t shard_mask;
	/* Allocator. */
	pthread_mutex_t alloc_lock;
	/* Free slots, last freed first: a stack chained through tc_line.hnext (a free
	 * line is in no hash chain), so that it costs no memory of its own. */
	uint32_t free_head;             /* TC_SLOT_NONE: none */
	uint32_t nfree;
	const struct tc_repl_ops *repl_ops;
	struct tc_repl *repl;
	struct tc_admit admit;
	struct tc_meta meta;
	struct tc_cleaner cleaner;
	struct tc_timer tick;
	_Atomic bool closing;
	bool readonly;                   /* opened for inspection: nothing is ever written
					  * (tc_cache_open_readonly) */
	struct tc_volume *vols[TC_MAX_VOLUMES + 1];   /* online volumes by id */
	_Atomic uint64_t dirty_lines, used_lines;
	_Atomic uint64_t cache_errors;
	_Atomic bool failed;             /* pass-through fallback for every volume */
	_Atomic uint8_t wb_hold;         /* enum tc_hold: write-back volumes go write-through
					  * (protect.c) */
	_Atomic uint8_t wb_guard;        /* sb.wb_guard, for readers without sb_lock */
	uint8_t hold_logged;             /* the hold the log last spoke of (protect work) */
	_Atomic bool protect_queued;     /* protect_work is queued or running */
	struct tc_work protect_work;     /* logs a hold change, kicks the cleaner */
	/* The error-rate rule (protect.c, tc_protect_tick): read errors of each member of
	 * an array cache device, sampled every second; err_snap holds the counts at the
	 * start of each of the last TC_ERR_BUCKETS buckets of TC_ERR_BUCKET_NS (a ring,
	 * err_pos the oldest).  Timer thread only, except err_hold (read anywhere). */
	bool err_array;                  /* the device is an array: the rule applies */
	uint64_t err_next_ns, err_bucket_ns;
	unsigned err_pos;
	uint64_t err_snap[6][TC_ARRAY_MAX_MEMBERS];
	_Atomic bool err_hold;           /* a member is over the error threshold */
	_Atomic unsigned err_member;     /* the worst member, and its errors in the window */
	_Atomic uint64_t err_count;
	_Atomic uint32_t *csum;          /* nslots * units checksums of cached data (csum.c),
					  * NULL when the cache has them off */
	_Atomic uint64_t csum_errors;    /* units read back that failed their checksum */
	_Atomic bool pressure;           /* dirty above high watermark until below low */
	_Atomic bool alloc_starved;      /* an allocation found nothing evictable */
	atomic_bool shares;              /* some online volume has a reserve or a cap */
	_Atomic unsigned kick_queued;    /* kicks since kick_work was queued; 0 = not
					  * queued (cleaner.c, kick_work_fn) */
	struct tc_work kick_work;        /* runs the cleaner now, off the I/O path */
	_Atomic uint64_t commits, commit_blocks;
	uint64_t recovered_dirty, recovered_dropped, recovery_ns;
	uint64_t recovered_orphans;      /* entries of no recorded volume dropped at load */
	_Atomic int inflight_reqs;
	struct tc_live live[TC_LIVE_SHARDS];  /* requests in flight (request.c) */
};

/* One settings field, read without a lock: a request sees each field either before or
 * after a change, and acts on what it saw. */
#define TC_SET(v, field) __atomic_load_n(&(v)->set.field, __ATOMIC_RELAXED)
void tc_settings_publish(struct tc_volume *v, const struct tc_volume_settings *s);

/* ---- protected write-back (protect.c) ---- */
/* Why write-back volumes run write-through (tc_cache.wb_hold). */
enum tc_hold {
	TC_HOLD_NONE = 0,
	TC_HOLD_DEGRADED = 1,     /* the device reported TC_DEV_DEGRADED */
	TC_HOLD_UNPROTECTED = 2,  /* no redundancy and no override in the superblock */
	TC_HOLD_ERRORS = 3,       /* a member's read errors over the threshold (below) */
};
/* The error-rate rule: a member of an array cache device with TC_ERR_HOLD read errors
 * (failed reads, corrected or not) in the last TC_ERR_WINDOW_NS holds write-back as a
 * degrade does; the hold ends once every member has at most TC_ERR_CLEAR in the
 * window.  Why these figures: protect.c. */
#define TC_ERR_HOLD 10u
#define TC_ERR_CLEAR 2u
#define TC_ERR_BUCKETS 6u
#define TC_ERR_BUCKET_NS 10000000000ull                     /* 10 s */
#define TC_ERR_WINDOW_NS (TC_ERR_BUCKETS * TC_ERR_BUCKET_NS)  /* 60 s */
/* The hold as the device is now, at open. */
void tc_protect_init(struct tc_cache *c);
/* The error-rate rule's sampling, from the cache's timer tick at @now (ns): at most
 * once a second it reads the members' read errors (tc_array_status) and starts or
 * ends the hold TC_HOLD_ERRORS.  Timer thread; does not block on I/O. */
void tc_protect_tick(struct tc_cache *c, uint64_t now);
/* A health event of the cache device (completion context: does not block). */
void tc_protect_event(struct tc_cache *c, enum tc_dev_event ev);
/* 0, or -EPERM with a message naming the volume, the cache, its redundancy and the
 * ways out, when write policy @wp needs a protection the cache lacks. */
int tc_protect_check(struct tc_cache *c, const char *vol, unsigned wp);
/* The write policy @v's writes follow now (enum tc_write_policy). */
unsigned tc_protect_effective(struct tc_volume *v);
/* Why it differs from the stored one: a static string, "" when it does not. */
const char *tc_protect_reason(struct tc_cache *c);
/* Write-back is allowed on a device without redundancy (status warns). */
bool tc_protect_unprotected(struct tc_cache *c);

/* Volume offset @off of @v on its backing's stripe grid: the backing's stripes start
 * where this is a multiple of v->stripe (the volume starts TC_BACKING_DATA_OFFSET into
 * the backing, which need not be a whole number of stripes: 768 KiB on a RAID 5 of
 * four with 256 KiB chunks). */
static inline uint64_t tc_stripe_pos(const struct tc_volume *v, uint64_t off)
{
	return off + v->stripe_skew;
}

/* ---- map (map.c) ---- */
static inline uint32_t tc_hash_key(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (uint32_t)key;
}
static inline struct tc_lock_shard *tc_shard_of(struct tc_cache *c, uint64_t key)
{
	return &c->shards[tc_hash_key(key) & c->bucket_mask & c->shard_mask];
}
/* Under the shard lock of @key. */
uint32_t tc_map_lookup(struct tc_cache *c, uint64_t key);
void tc_map_insert(struct tc_cache *c, uint32_t slot);
void tc_map_remove(struct tc_cache *c, uint32_t slot);

/* Line state changes under the shard lock: update valid/dirty with accounting and
 * mark the md block changed. */
void tc_line_set_bits(struct tc_cache *c, uint32_t slot, uint16_t valid, uint16_t dirty);
/* Unmap a slot entirely (shard lock held): drops valid/dirty with accounting. */
void tc_line_unmap(struct tc_cache *c, uint32_t slot);

/* ---- in-flight records and the line lock (lock.c) ----
 * Shard lock @s of @key held unless said otherwise. */
/* The record of @key with one more reference; with @create, a new one if none
 * exists (NULL when out of memory); NULL without @create when none exists. */
struct tc_inflight *tc_inflight_get(struct tc_cache *c, struct tc_lock_shard *s,
				    uint64_t key, bool create);
/* Drop a reference; the last one frees the record. */
void tc_inflight_put(struct tc_cache *c, struct tc_lock_shard *s, struct tc_inflight *inf);
/* Whether @key has a record: some request or the cleaner holds or waits for it. */
bool tc_inflight_exists(struct tc_lock_shard *s, uint64_t key);
/* Take the line in the mode @h->want_excl asks.  Returns true if taken; false if
 * queued (resumed later through @h->resume) or out of memory (@h->inf stays NULL). */
bool tc_line_acquire(struct tc_cache *c, struct tc_lock_shard *s, uint64_t key,
		     struct tc_line_hold *h);
/* Release @h's hold and its reference; returns the holds granted meanwhile, for
 * tc_line_resume() once the shard lock is dropped. */
struct tc_line_hold *tc_line_release_locked(struct tc_cache *c, struct tc_lock_shard *s,
					    struct tc_line_hold *h);
/* Resume granted holds (no shard lock held). */
void tc_line_resume(struct tc_cache *c, struct tc_line_hold *granted);
/* The cleaner: hold @key shared without queueing, if nobody holds it exclusively or
 * waits for it and no other writeback batch has it; marks the record cleaning (the
 * batch clears the mark when it drops its reference); returns the record (one
 * reference), or NULL. */
struct tc_inflight *tc_line_try_shared(struct tc_cache *c, struct tc_lock_shard *s,
				       uint64_t key);
/* Drop a shared hold taken by tc_line_try_shared() (shard lock NOT held), waking
 * waiters; the reference stays, for the generation check. */
void tc_line_release_shared(struct tc_cache *c, struct tc_lock_shard *s,
			    struct tc_inflight *inf);

/* ---- allocation (alloc.c) ---- */
/* A slot for @key, not yet in the hash, vol/line_no set and inserted in the policy.
 * No shard lock held.  Returns TC_SLOT_NONE if nothing is evictable. */
uint32_t tc_slot_alloc(struct tc_cache *c, uint8_t vol, uint32_t line_no);
/* Return a mapped-out slot to the free list (the policy forgets it). */
void tc_slot_free(struct tc_cache *c, uint32_t slot);

/* tc_slot_free_push - put @slot (mapped out: in no hash chain) on top of the free
 * list.  Under c->alloc_lock, or before the cache is shared (load). */
static inline void tc_slot_free_push(struct tc_cache *c, uint32_t slot)
{
	c->lines[slot].hnext = c->free_head;
	c->free_head = slot;
	c->nfree++;
}

/* ---- the cache object (cache.c) ---- */
/* A cache's in-memory structures from its newest valid superblock, nothing loaded or
 * written yet (shared by open and inspection).  Returns 0 and *@out, or -errno. */
int tc_cache_setup(tc_ctx *ctx, tc_dev *dev, struct tc_cache **out);
/* Free a cache and its online volumes' memory (no I/O). */
void tc_cache_free(struct tc_cache *c);

/* ---- backings (backing.c) ---- */
/* Read both superblock copies of @dev; the valid one with the highest generation in
 * *@b, its copy in *@latest.  Errors logged: -EINVAL (none, or the device shrank),
 * -EUCLEAN (both copies refused), or the read's error. */
int tc_backing_sb_read(tc_ctx *ctx, tc_dev *dev, struct tc_backing_sb *b, int *latest);
/* Write the encoded superblock @buf of @size bytes to both copies (offsets 0 and
 * @size) and flush: formatting a device.  0 or the first negative errno. */
int tc_sb_write_both(tc_dev *dev, const void *buf, uint32_t size);

/* ---- volumes (volume.c) ---- */
/* Free a volume's memory (no I/O; the cache no longer lists it). */
void tc_volume_free(struct tc_volume *v);

/* ---- management (mngt.c) ---- */
/* Let the engine run until volume @v (NULL: the whole cache) has no request in
 * flight; polls the context in deterministic mode, sleeps 1 ms slices otherwise. */
void tc_mngt_wait_requests(struct tc_cache *c, struct tc_volume *v);
/* Likewise until no commit, cleaner batch or cleaner kick is running or queued. */
void tc_mngt_wait_idle(struct tc_cache *c);

/* ---- metadata (metadata.c) ---- */
int tc_meta_init(struct tc_cache *c);
void tc_meta_fini(struct tc_cache *c);
static inline void tc_meta_mark(struct tc_cache *c, uint32_t slot)
{
	atomic_store_explicit(&c->meta.block_dirty[slot / TC_MD_ENTRIES_PER_BLOCK], 1,
			      memory_order_release);
}
/* Wait for a commit that starts after this call; @w->fn runs on completion. */
void tc_meta_commit_wait(struct tc_cache *c, struct tc_commit_waiter *w);
/* Start a commit now (or right after the running one), with no waiter: used when
 * clean lines wait for a commit before they may be evicted. */
void tc_meta_kick(struct tc_cache *c);
/* Periodic: start a commit if blocks changed and the interval passed. */
void tc_meta_tick(struct tc_cache *c, uint64_t now);
/* Synchronous commit (management paths). */
int tc_meta_commit_sync(struct tc_cache *c);

/* remote.c - one writer while dirty on a shared-store backing (an RBD image).
 * tc_remote_check_owner: -EBUSY (a message naming both caches) when @dev records
 * another cache as holding its dirty data; tc_remote_check_uncached: -EBUSY when it
 * records any; tc_remote_mark_dirty: record this cache (@dirty) or remove the record
 * (no-op for devices without one and for read-only caches); tc_remote_forget: remove
 * it with a warning of what is lost.  All return 0 or -errno. */
int tc_remote_check_owner(struct tc_cache *c, tc_dev *dev, const char *volume);
int tc_remote_check_uncached(tc_ctx *ctx, tc_dev *dev, const char *volume);
int tc_remote_mark_dirty(struct tc_cache *c, tc_dev *dev, bool dirty);
int tc_remote_forget(tc_ctx *ctx, tc_dev *dev, const char *volume);
/* Load all blocks (open), recovering after a crash - synchronous. */
int tc_meta_load(struct tc_cache *c, bool trust_clean);
/* Superblocks - synchronous. */
int tc_cache_sb_write(struct tc_cache *c);
int tc_backing_sb_write(struct tc_volume *v);

/* ---- requests (request.c) ---- */
void tc_cache_error(struct tc_cache *c, struct tc_volume *v, const char *what, int err);
/* Free every request still in flight, without completing it (process death). */
void tc_requests_abandon(struct tc_cache *c);

/* ---- cleaner (cleaner.c) ---- */
int tc_cleaner_init(struct tc_cache *c);
void tc_cleaner_fini(struct tc_cache *c);
void tc_cleaner_tick(struct tc_cache *c, uint64_t now);
/* Lines per full stripe of @stripe bytes that the cleaner writes back whole: 0 when
 * there is no stripe, it is no whole number of lines, one line, or more than a batch. */
uint32_t tc_cleaner_stripe_lines(struct tc_cache *c, uint64_t stripe);
/* Run a cleaner pass soon from a work item (allocation starved). */
void tc_cleaner_kick(struct tc_cache *c);
/* Drain the volume's dirty data (blocking); used by flush, detach and set. */
int tc_cleaner_drain(struct tc_volume *v, tc_progress_fn fn, void *opaque);
/* Whether a writeback batch of volume @v is in flight, or lines of it wait for the
 * flush group's flush.  Takes meta.lock. */
bool tc_cleaner_busy(struct tc_cache *c, struct tc_volume *v);
/* Deterministic contexts: run queued work, or advance the virtual clock to the next
 * timer (at most one tick): one step of a loop that waits for the cleaner. */
void tc_cleaner_wait_step(struct tc_cache *c);

/* ---- checksums of cached data (csum.c) ----
 * Per 4 KiB unit of a slot; all of these do nothing when c->csum is NULL.  @line_buf
 * holds unit 0 of the line at its start (unit u at u * 4096); @out / @v are indexed by
 * unit. */
uint32_t tc_csum_unit(const void *p);
void tc_csum_compute(struct tc_cache *c, uint16_t mask, const uint8_t *line_buf,
		     uint32_t out[16]);
/* Units [first_unit, first_unit + nunits) held contiguously in the iovecs. */
void tc_csum_compute_iov(struct tc_cache *c, unsigned first_unit, unsigned nunits,
			 const struct iovec *iov, int cnt, uint32_t out[16]);
/* Record the values of the units of @mask (line held exclusively). */
void tc_csum_store(struct tc_cache *c, uint32_t slot, uint16_t mask, const uint32_t v[16]);
/* The units of @mask have no known value any more. */
void tc_csum_forget(struct tc_cache *c, uint32_t slot, uint16_t mask);
/* Check what was read from the slot; returns the units that failed (counted in
 * c->csum_errors).  A unit with no known value passes and learns it. */
uint16_t tc_csum_verify(struct tc_cache *c, uint32_t slot, uint16_t mask,
			const uint8_t *line_buf);
uint16_t tc_csum_verify_iov(struct tc_cache *c, uint32_t slot, unsigned first_unit,
			    unsigned nunits, const struct iovec *iov, int cnt);

/* ---- stats (stats.c) ---- */
static inline void tc_stat_add(struct tc_volume *v, int idx, uint64_t n)
{
	atomic_fetch_add_explicit(&v->st[idx], n, memory_order_relaxed);
}

/* ---- partitions (alloc.c) ---- */
/* Resolve @v's reserve and cap into lines and note whether any online volume of the
 * cache has one (c->shares); after its settings or the cache's volumes change. */
void tc_shares_update(struct tc_cache *c, struct tc_volume *v);
/* A share (tc_volume_settings.reserve, cap) in lines: rounded @up for a reserve, down
 * (to at least one line) for a cap; 0 for none. */
uint64_t tc_share_lines(struct tc_cache *c, uint64_t share, bool up);
/* Whether settings @s for volume @id fit the cache: its reserve at most its cap, the
 * reservations of all the cache's volumes (online or not) within the cache.  0, or
 * -EINVAL with the reason logged, naming the volume @name. */
int tc_shares_check(struct tc_cache *c, uint8_t id, const char *name,
		    const struct tc_volume_settings *s);

/* tc_lat_record - count one completed client request of class @cls (enum
 * tc_lat_class) that took @ns; relaxed atomics only, any thread. */
void tc_lat_record(struct tc_volume *v, unsigned cls, uint64_t ns);

static inline unsigned tc_popcount16(uint16_t x) { return (unsigned)__builtin_popcount(x); }

/* Mask of units [a, b) */
static inline uint16_t tc_units_mask(unsigned a, unsigned b)
{
	return (uint16_t)(((1u << b) - 1u) & ~((1u << a) - 1u));
}

/* Aligned buffer allocation for device I/O (4096-aligned). */
void *tc_alloc_buf(size_t len);

#endif /* TC_CACHE_PRIV_H */
