/* SPDX-License-Identifier: MIT */
/*
 * stress.c - tc-stress: randomized crash and consistency testing of the cache engine.
 *
 *   tc-stress [--seed N] [--count K] [--ops M] [--verbose] [--trace]
 *
 * Runs seeds N .. N+K-1 (defaults: 1, $TC_STRESS_COUNT or 500, 400 ops per seed).
 * Each seed is one reproducible run: the seed picks a configuration (line size,
 * replacement policy, 1-3 volumes with their own settings, a cache small enough to
 * evict), drives it with a random mix of requests on a deterministic context (TC_CTX_
 * DETERMINISTIC with that seed: completion order, timers and the virtual clock are all
 * seed-chosen), and checks every answer against the reference model in model.c.
 *
 * The oracle is docs/architecture.md's invariants, applied per 512-byte sector:
 *   1. every read returns what the model says the sector holds now (checked on every
 *      read completion, on full reads after each clean restart and at the end);
 *   2. after a power cut of every device (crash devices keep a seed-chosen subset of
 *      their unflushed 4 KiB units) and recovery, each sector holds its value as of the
 *      last FLUSH / FUA write that covered it or a value written since, never garbage
 *      nor another sector's or volume's data (full read of every volume);
 *   3. dirty data is accounted exactly: tc_volume_flush_dirty leaves 0 dirty bytes, and
 *      after tc_volume_detach the backing devices, read directly, hold every value.
 * Every written sector carries its volume, sector and write id, so a failure says
 * exactly what was found instead of what was expected: zeros, garbage, a stale write,
 * another sector's data.  The program stops at the first failing seed and prints the
 * seed, the sector, what was found and allowed, the configuration and the last library
 * messages; `tc-stress --seed N --count 1` replays it exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "report.h"
#include "tiercache.h"
#include "tiercache-test.h"

#define MAX_VOLUMES 3
#define MAX_INFLIGHT 8
#define MAX_LINE_SIZE 65536u
#define MAX_REQ_BYTES (3u * MAX_LINE_SIZE)
#define VERIFY_CHUNK (128u * 1024)
#define MS ((uint64_t)1000 * 1000)
#define IDLE_LIMIT_NS (120 * 1000 * MS)   /* virtual time a drain may take */
#define SEED_TIMEOUT_S 120                    /* wall time per seed: hang watchdog */
#define TC_STR_(x) #x
#define TC_STR(x) TC_STR_(x)

/* The options, and the seed in progress for the hang watchdog: the only global. */
struct stress_config {
	uint64_t first_seed;
	uint64_t count;
	unsigned ops;
	bool verbose;
	bool trace;                     /* log every request and event to stderr */
	bool arrays;                    /* --arrays: every backing is an array */
	bool write_hole;                /* --write-hole: power cuts of degraded parity arrays
	                                 * and member loss after a cut, without resync */
	const char *tmpdir;
	_Atomic uint64_t current_seed;
};

static struct stress_config config;

/* ------------------------------------------------------------------------------------
 * Random numbers and per-seed configuration.
 */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

/* Uniform in [0, n). */
static uint64_t rnd_below(uint64_t *state, uint64_t n)
{
	return n ? rnd(state) % n : 0;
}

/* --arrays: the array behind a volume (members and spares are crash devices). */
#define MAX_MEMBERS 8
#define MAX_ARRAY_DEVS 14       /* members, spares at creation, devices added later */

struct array_setup {
	enum tc_raid_level_id level;
	unsigned members, spares, copies;
	uint32_t chunk;                         /* bytes */
	uint64_t member_size;                   /* bytes of array data on every member */
	struct tc_array_rebuild_opts rate;
};

struct vol_setup {
	uint64_t size;                          /* bytes */
	struct tc_volume_settings set;          /* at format time */
	struct array_setup arr;                 /* --arrays */
};

struct seed_setup {
	uint64_t seed;
	struct tc_cache_opts opts;
	uint32_t lines_wanted;
	uint64_t cache_dev_size;
	unsigned nvol;
	struct vol_setup vol[MAX_VOLUMES];
};

static void random_settings(uint64_t *rng, struct tc_volume_settings *s)
{
	static const uint8_t policies[10] = {
		TC_WP_WB, TC_WP_WB, TC_WP_WB, TC_WP_INSTWB, TC_WP_WT,
		TC_WP_WT, TC_WP_WT, TC_WP_WA, TC_WP_WA, TC_WP_PT,
	};

	tc_volume_settings_default(s);
	s->write_policy = policies[rnd_below(rng, 10)];
	s->read_cache = rnd_below(rng, 4) != 0;
	s->flush_rate = (uint8_t)rnd_below(rng, 3);
	s->admission = rnd_below(rng, 2) ? TC_ADMIT_NHIT : TC_ADMIT_ALWAYS;
	s->nhit = 2;
	s->fill = rnd_below(rng, 2) ? TC_FILL_LINE : TC_FILL_SECTORS;
	s->seq_cutoff = rnd_below(rng, 2) ? 256 * 1024 : 0;
}

static const char *level_name(const struct array_setup *a)
{
	const char *n = tc_raid_level_name(a->level);

	return n ? n : "?";
}

static unsigned level_parity(enum tc_raid_level_id level)
{
	return level == TC_RAID6 ? 2 : level == TC_RAID5 ? 1 : 0;
}

/* The array's size for @a (array.c: whole chunks of the smallest member times the data
 * members; RAID 10 near layout: member chunks x members / copies). */
static uint64_t array_size(const struct array_setup *a)
{
	uint64_t chunks = a->member_size / a->chunk;

	switch (a->level) {
	case TC_RAID0: return a->member_size * a->members;
	case TC_RAID1: return a->member_size;
	case TC_RAID10: return chunks * a->members / a->copies * a->chunk;
	default: return a->member_size * (a->members - level_parity(a->level));
	}
}

/* A random level and geometry: small chunks, 2-8 members (the level's minimum at
 * least), 0-2 hot spares, member size so that the array holds about @want bytes of
 * volume data, and random rebuild rates (md's floor under load, or faster). */
static void random_array(uint64_t *rng, uint64_t want, struct array_setup *a)
{
	static const enum tc_raid_level_id levels[8] = {
		TC_RAID0, TC_RAID1, TC_RAID10, TC_RAID10, TC_RAID5, TC_RAID5, TC_RAID6, TC_RAID6,
	};
	static const uint32_t chunks[4] = { 4096, 8192, 16384, 65536 };
	static const unsigned prio[3] = { 0, 50, 100 };
	uint64_t data_per_member, total = TC_BACKING_DATA_OFFSET + want;

	memset(a, 0, sizeof(*a));
	a->level = levels[rnd_below(rng, 8)];
	a->chunk = chunks[rnd_below(rng, 4)];
	switch (a->level) {
	case TC_RAID0: a->members = 2 + (unsigned)rnd_below(rng, 5); break;
	case TC_RAID1: a->members = 2 + (unsigned)rnd_below(rng, 2); break;
	case TC_RAID10:
		a->copies = 2 + (rnd_below(rng, 4) == 0);
		a->members = a->copies + (unsigned)rnd_below(rng, MAX_MEMBERS - a->copies + 1);
		break;
	case TC_RAID5: a->members = 3 + (unsigned)rnd_below(rng, MAX_MEMBERS - 2); break;
	default: a->members = 4 + (unsigned)rnd_below(rng, MAX_MEMBERS - 3); break;
	}
	a->spares = a->level == TC_RAID0 ? 0 : (unsigned)rnd_below(rng, 3);
	data_per_member = a->level == TC_RAID1 ? total
		: a->level == TC_RAID10 ? total * a->copies / a->members
		: a->level == TC_RAID0 ? total / a->members
		: total / (a->members - level_parity(a->level));
	a->member_size = (data_per_member + a->chunk - 1) / a->chunk * a->chunk + a->chunk;
	a->rate.min_rate = rnd_below(rng, 2) ? 0 : 20000000;
	a->rate.max_rate = rnd_below(rng, 3) ? 0 : UINT64_MAX;
	a->rate.priority = prio[rnd_below(rng, 3)];
	a->rate.depth = 1 + (unsigned)rnd_below(rng, 8);
}

/* Instant write-back needs a backing with a full stripe: on an array without parity
 * (whose io_opt is no stripe the engine can fill) it is refused, so write-back it is. */
static void fit_settings(const struct vol_setup *vs, struct tc_volume_settings *s)
{
	if (config.arrays && !level_parity(vs->arr.level) && s->write_policy == TC_WP_INSTWB)
		s->write_policy = TC_WP_WB;
}

static void make_setup(uint64_t seed, struct seed_setup *su)
{
	static const uint32_t line_sizes[3] = { 4096, 16384, 65536 };
	uint64_t rng = mix64(seed ^ 0x5354524553530001ull);
	uint64_t total = 0, max_lines, data_offset;

	memset(su, 0, sizeof(*su));
	su->seed = seed;
	tc_cache_opts_default(&su->opts);
	su->opts.line_size = line_sizes[rnd_below(&rng, 3)];
	su->opts.replacement = rnd_below(&rng, 2) ? TC_REPL_S3FIFO : TC_REPL_LRU;
	su->opts.unprotected_writeback = true;
	su->opts.dirty_low_pct = (uint8_t)(10 + rnd_below(&rng, 41));
	su->opts.dirty_high_pct = (uint8_t)(su->opts.dirty_low_pct + 10 +
					    rnd_below(&rng, 91 - su->opts.dirty_low_pct));
	su->nvol = 1 + (unsigned)rnd_below(&rng, MAX_VOLUMES);
	for (unsigned v = 0; v < su->nvol; v++) {
		su->vol[v].size = (2u << 20) + rnd_below(&rng, (6u << 20) / 4096 + 1) * 4096;
		random_settings(&rng, &su->vol[v].set);
		if (config.arrays) {
			/* From a generator of its own: the rest of the setup stays that of
			 * the seed without --arrays. */
			uint64_t arng = mix64(seed ^ (0x4152524159000000ull + v));

			random_array(&arng, su->vol[v].size, &su->vol[v].arr);
			su->vol[v].size = array_size(&su->vol[v].arr) - TC_BACKING_DATA_OFFSET;
			fit_settings(&su->vol[v], &su->vol[v].set);
		}
		total += su->vol[v].size;
	}
	/* Small enough to evict: at most half of what the volumes hold. */
	su->lines_wanted = 64 + (uint32_t)rnd_below(&rng, 193);
	max_lines = total / su->opts.line_size / 2;
	if (su->lines_wanted > max_lines)
		su->lines_wanted = (uint32_t)max_lines;
	if (su->lines_wanted < 16)
		su->lines_wanted = 16;
	/* Superblocks and metadata blocks (<= 256 lines: 2 blocks) before the line-aligned
	 * data area. */
	data_offset = (65536 + 2 * 8192 + su->opts.line_size - 1) /
		      su->opts.line_size * su->opts.line_size;
	su->cache_dev_size = data_offset + (uint64_t)su->lines_wanted * su->opts.line_size;
}

static void settings_str(const struct tc_volume_settings *s, char *out, size_t len)
{
	snprintf(out, len, "%s read_cache=%s admission=%s%s fill=%s seq_cutoff=%" PRIu64
		 " flush=%s", tc_write_policy_name(s->write_policy),
		 s->read_cache ? "on" : "off",
		 s->admission == TC_ADMIT_NHIT ? "nhit:" : "always",
		 s->admission == TC_ADMIT_NHIT ? (s->nhit == 2 ? "2" : "?") : "",
		 s->fill == TC_FILL_LINE ? "line" : "sectors", s->seq_cutoff,
		 tc_flush_rate_name(s->flush_rate));
}

static bool settings_equal(const struct tc_volume_settings *a,
			   const struct tc_volume_settings *b)
{
	return a->read_cache == b->read_cache && a->write_policy == b->write_policy &&
	       a->flush_rate == b->flush_rate && a->admission == b->admission &&
	       a->fill == b->fill && a->seq_cutoff == b->seq_cutoff &&
	       (a->admission != TC_ADMIT_NHIT || a->nhit == b->nhit);
}

/* ------------------------------------------------------------------------------------
 * One run (one seed).
 */

enum req_kind { REQ_FREE, REQ_READ, REQ_WRITE, REQ_ZEROES, REQ_DISCARD, REQ_FLUSH };

struct run;

struct req {
	struct tc_io io;
	struct iovec iov;
	struct run *run;
	uint8_t *buf;                   /* MAX_REQ_BYTES */
	enum req_kind kind;
	unsigned vol;
	uint64_t first, nsectors;
	bool fua;
	uint32_t write_id;              /* REQ_WRITE */
	uint64_t token;                 /* flush: model token */
};

struct counts {
	uint64_t reads, writes, zeroes, discards, flushes, fua;
	uint64_t settings, flush_dirty, power_cuts, restarts;
	uint64_t sectors_verified;
	/* --arrays */
	uint64_t member_failures, double_failures, spares_added, replaces, removes;
	uint64_t checks, resyncs, rebuilds_resumed, cuts_deferred;
	/* Engine counters summed over every generation: does the run reach the paths? */
	uint64_t read_hits, promotions, evictions, writeback_bytes, bypassed;
};

struct run {
	const struct seed_setup *su;
	uint64_t rng;
	unsigned generation;            /* +1 at every restart */
	unsigned op;                    /* index in the op loop */
	const char *phase;

	char dir[PATH_MAX - 32];        /* room for "/cache.img" in the paths below */
	char cache_path[PATH_MAX];
	char vol_path[MAX_VOLUMES][PATH_MAX];
	/* --arrays: every member and spare file of volume v's array, in the order they
	 * were made; mdev the devices open now (NULL: never opened, or closed by the
	 * array: removed, or left out at assembly). */
	char mpath[MAX_VOLUMES][MAX_ARRAY_DEVS][PATH_MAX];
	unsigned ndevs[MAX_VOLUMES];
	tc_dev *mdev[MAX_VOLUMES][MAX_ARRAY_DEVS];
	/* Removed while a hot spare: its superblock erased, it is blank from then on and
	 * is no longer given to the assembly (as the host, which groups devices by their
	 * superblocks, would not). */
	bool blank[MAX_VOLUMES][MAX_ARRAY_DEVS];
	bool resync[MAX_VOLUMES];       /* a power cut since the array was last whole */
	bool checking[MAX_VOLUMES];     /* a check started by the op loop */
	bool lose_member[MAX_VOLUMES];  /* --write-hole: fail a member after assembly */
	bool cut;                       /* power is off: completions are dropped */

	tc_ctx *ctx;
	tc_dev *cache_dev;
	tc_dev *vol_dev[MAX_VOLUMES];
	tc_cache *cache;
	tc_volume *vol[MAX_VOLUMES];
	struct tc_volume_settings set[MAX_VOLUMES];   /* as last stored */
	uint64_t stream_end[MAX_VOLUMES];             /* sectors: sequential streams */

	struct tc_model *model;
	struct req reqs[MAX_INFLIGHT];
	unsigned inflight;
	uint8_t *vbuf;                  /* VERIFY_CHUNK */

	struct report rep;              /* the first failure, the last log lines */
	struct counts n;
};

static void run_log(void *opaque, enum tc_log_level level, const char *msg)
{
	struct run *r = opaque;
	static const char *names[] = { "error", "warn", "info", "debug" };

	if (config.trace)
		fprintf(stderr, "op %u gen %u: log %s: %s\n", r->op, r->generation,
			names[level & 3], msg);
	if (level > TC_LOG_WARN)
		return;
	report_log(&r->rep, "[gen %u %s] %s", r->generation, names[level & 3], msg);
}

/* Records the first failure of the run; later ones are consequences. */
static void fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_vfail(&r->rep, fmt, ap);
	va_end(ap);
}

/* A data mismatch, in the format the brief promises. */
static void fail_sector(struct run *r, unsigned vol, uint64_t sector, const char *msg,
			const char *where)
{
	fail(r, "volume=%u offset=%" PRIu64 " (sector %" PRIu64 "): %s [%s, %s]", vol,
	     sector * TC_SECTOR_SIZE, sector, msg, where, r->phase);
}

/* --trace: one line per request and event, for replaying a failing seed by hand. */
static void trace(const struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void trace(const struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (!config.trace)
		return;
	fprintf(stderr, "op %u gen %u: ", r->op, r->generation);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void print_failure(const struct run *r)
{
	const struct seed_setup *su = r->su;
	char s[256];

	printf("FAIL seed=%" PRIu64 " %s\n", su->seed, r->rep.failure);
	printf("  at op %u of %u, generation %u (power cuts %" PRIu64 ", clean restarts %"
	       PRIu64 ")\n", r->op, config.ops, r->generation, r->n.power_cuts,
	       r->n.restarts);
	printf("  config: line_size=%u replacement=%s lines=%u (cache device %" PRIu64
	       " bytes) dirty_pct=%u..%u\n", su->opts.line_size,
	       tc_replacement_name(su->opts.replacement), su->lines_wanted,
	       su->cache_dev_size, su->opts.dirty_low_pct, su->opts.dirty_high_pct);
	for (unsigned v = 0; v < su->nvol; v++) {
		settings_str(&su->vol[v].set, s, sizeof(s));
		printf("  volume %u: size=%" PRIu64 " formatted %s\n", v, su->vol[v].size, s);
		settings_str(&r->set[v], s, sizeof(s));
		printf("  volume %u: now %s\n", v, s);
		if (config.arrays) {
			const struct array_setup *a = &su->vol[v].arr;

			printf("  volume %u: on %s of %u members (copies %u), chunk %" PRIu32
			       ", %u spares, member size %" PRIu64 ", rebuild min %" PRIu64
			       " max %" PRIu64 " priority %u depth %u\n", v, level_name(a),
			       a->members, a->copies, a->chunk, a->spares, a->member_size,
			       a->rate.min_rate, a->rate.max_rate, a->rate.priority,
			       a->rate.depth);
		}
	}
	report_print_log(&r->rep);
	printf("  replay: tc-stress --seed %" PRIu64 " --count 1 --ops %u%s%s\n", su->seed,
	       config.ops, config.arrays ? " --arrays" : "",
	       config.write_hole ? " --write-hole" : "");
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------
 * Waiting: drive the deterministic context until a condition holds.
 */

/* Polls until at most @limit requests are in flight.  The virtual clock moves when
 * nothing is queued; a request that never completes is a failure, not a hang. */
static bool wait_inflight(struct run *r, unsigned limit)
{
	uint64_t idle = 0, spins = 0;

	while (r->inflight > limit && !r->rep.failed) {
		int ran = tc_ctx_poll(r->ctx, 16);

		if (ran < 0) {
			fail(r, "tc_ctx_poll returned %d", ran);
			break;
		}
		if (tc_ctx_pending(r->ctx) == 0) {
			tc_ctx_advance(r->ctx, MS);
			idle += MS;
		}
		if (idle > IDLE_LIMIT_NS || ++spins > 50u * 1000 * 1000) {
			fail(r, "%u requests never completed (%" PRIu64 " ms of virtual time "
			     "waited)", r->inflight, idle / MS);
			break;
		}
	}
	return !r->rep.failed;
}

/* ------------------------------------------------------------------------------------
 * Requests.
 */

static void check_read(struct run *r, struct req *q)
{
	char msg[1024];

	for (uint64_t i = 0; i < q->nsectors && !r->rep.failed; i++) {
		const uint8_t *sec = q->buf + i * TC_SECTOR_SIZE;

		if (!tc_model_check(r->model, q->vol, q->first + i, sec, TC_MODEL_CURRENT, msg,
				    sizeof(msg)))
			fail_sector(r, q->vol, q->first + i, msg, "read while running");
	}
	r->n.sectors_verified += q->nsectors;
}

static const char *kind_name(enum req_kind k)
{
	switch (k) {
	case REQ_READ: return "read";
	case REQ_WRITE: return "write";
	case REQ_ZEROES: return "write-zeroes";
	case REQ_DISCARD: return "discard";
	case REQ_FLUSH: return "flush";
	default: return "?";
	}
}

static void req_done(struct tc_io *io, int result)
{
	struct req *q = io->private_data;
	struct run *r = q->run;

	if (q->kind == REQ_FREE) {
		fail(r, "a request completed twice (io %p)", (void *)io);
		return;
	}
	if (r->cut) {
		/* Failing after the power cut: in flight at the crash, as for the
		 * requests drop_inflight() forgets. */
		q->kind = REQ_FREE;
		r->inflight--;
		return;
	}
	trace(r, "done %s vol %u sectors %" PRIu64 "+%" PRIu64 "%s: %d", kind_name(q->kind),
	      q->vol, q->first, q->nsectors, q->fua ? " fua" : "", result);
	if (result != 0)
		fail(r, "%s volume=%u offset=%" PRIu64 " length=%" PRIu64 "%s failed: %d (%s)",
		     kind_name(q->kind), q->vol, q->first * TC_SECTOR_SIZE,
		     q->nsectors * TC_SECTOR_SIZE, q->fua ? " fua" : "", result,
		     strerror(-result));
	switch (q->kind) {
	case REQ_READ:
		if (result == 0)
			check_read(r, q);
		break;
	case REQ_WRITE:
	case REQ_ZEROES:
	case REQ_DISCARD:
		tc_model_complete(r->model, q->vol, q->first, q->nsectors, result, q->fua);
		break;
	case REQ_FLUSH:
		tc_model_flush_end(r->model, q->vol, q->token, result);
		break;
	default:
		break;
	}
	q->kind = REQ_FREE;
	r->inflight--;
}

static bool ranges_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

/* Whether [first, first + n) of @vol conflicts with a request in flight: a read with a
 * write, a write with anything (flushes conflict with nothing). */
static bool conflicts(const struct run *r, unsigned vol, uint64_t first, uint64_t n,
		      bool is_read)
{
	for (unsigned i = 0; i < MAX_INFLIGHT; i++) {
		const struct req *q = &r->reqs[i];

		if (q->kind == REQ_FREE || q->kind == REQ_FLUSH || q->vol != vol)
			continue;
		if (is_read && q->kind == REQ_READ)
			continue;
		if (ranges_overlap(first, n, q->first, q->nsectors))
			return true;
	}
	return false;
}

/* A random range: 512 B to 3 lines, often 4 KiB aligned, often in a hot region (the
 * first 32 lines: overwrites of cached and dirty lines, evictions of hot ones) or
 * continuing a sequential stream (the sequential cutoff). */
static void pick_range(struct run *r, unsigned v, uint64_t *first, uint64_t *n)
{
	uint64_t vsect = r->su->vol[v].size / TC_SECTOR_SIZE;
	uint64_t line = r->su->opts.line_size / TC_SECTOR_SIZE;
	uint64_t hot = vsect / 4 < 32 * line ? vsect / 4 : 32 * line;
	uint64_t len, start;
	bool aligned = rnd_below(&r->rng, 10) < 7;

	switch (rnd_below(&r->rng, 4)) {
	case 0: len = 1 + rnd_below(&r->rng, 8); break;
	case 1: len = 8 * (1 + rnd_below(&r->rng, 4)); break;
	case 2: len = 1 + rnd_below(&r->rng, line); break;
	default: len = 1 + rnd_below(&r->rng, 3 * line); break;
	}
	if (aligned)
		len = (len + 7) & ~7ull;
	if (len > vsect)
		len = vsect;
	switch (rnd_below(&r->rng, 10)) {
	case 0: case 1:
		start = r->stream_end[v];
		break;
	case 2: case 3: case 4: case 5:
		start = rnd_below(&r->rng, hot);
		break;
	default:
		start = rnd_below(&r->rng, vsect);
		break;
	}
	if (aligned)
		start &= ~7ull;
	if (start + len > vsect)
		start = vsect - len;
	r->stream_end[v] = start + len < vsect ? start + len : 0;
	*first = start;
	*n = len;
}

static struct req *free_req(struct run *r)
{
	if (!wait_inflight(r, MAX_INFLIGHT - 1))
		return NULL;
	for (unsigned i = 0; i < MAX_INFLIGHT; i++)
		if (r->reqs[i].kind == REQ_FREE)
			return &r->reqs[i];
	fail(r, "test driver: no free request slot");
	return NULL;
}

static void submit(struct run *r, struct req *q)
{
	trace(r, "submit %s vol %u sectors %" PRIu64 "+%" PRIu64 "%s (write id %" PRIu32 ")",
	      kind_name(q->kind), q->vol, q->first, q->nsectors, q->fua ? " fua" : "",
	      q->kind == REQ_WRITE ? q->write_id : 0);
	q->io.private_data = q;
	q->io.done = req_done;
	q->run = r;
	r->inflight++;
	tc_volume_submit(r->vol[q->vol], &q->io);
}

/* READ, WRITE, WRITE_ZEROES or DISCARD of a random range of a random volume. */
static void submit_data(struct run *r, enum req_kind kind, bool fua)
{
	bool is_read = kind == REQ_READ;
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	uint64_t first = 0, n = 0;
	struct req *q = free_req(r);
	int tries;

	if (!q)
		return;
	for (tries = 0;; tries++) {
		pick_range(r, v, &first, &n);
		if (!conflicts(r, v, first, n, is_read))
			break;
		if (tries >= 8) {
			/* Let something complete, then try again. */
			if (!wait_inflight(r, r->inflight - 1))
				return;
			tries = 0;
		}
	}
	memset(&q->io, 0, sizeof(q->io));
	q->kind = kind;
	q->vol = v;
	q->first = first;
	q->nsectors = n;
	q->fua = fua;
	q->io.offset = first * TC_SECTOR_SIZE;
	q->io.length = n * TC_SECTOR_SIZE;
	q->io.flags = fua ? TC_IO_FUA : 0;
	switch (kind) {
	case REQ_READ:
		q->io.op = TC_OP_READ;
		memset(q->buf, 0xa5, n * TC_SECTOR_SIZE);  /* stale buffers must not pass */
		r->n.reads++;
		break;
	case REQ_WRITE: {
		uint32_t id = tc_model_new_write_id(r->model);

		q->io.op = TC_OP_WRITE;
		q->write_id = id;
		tc_model_fill(v, first, n, id, q->buf);
		tc_model_submit(r->model, v, first, n, TC_MODEL_WRITE, id);
		r->n.writes++;
		break;
	}
	case REQ_ZEROES:
		q->io.op = TC_OP_WRITE_ZEROES;
		tc_model_submit(r->model, v, first, n, TC_MODEL_ZEROES, 0);
		r->n.zeroes++;
		break;
	case REQ_DISCARD:
		q->io.op = TC_OP_DISCARD;
		tc_model_submit(r->model, v, first, n, TC_MODEL_DISCARD, 0);
		r->n.discards++;
		break;
	default:
		break;
	}
	if (kind == REQ_READ || kind == REQ_WRITE) {
		q->iov.iov_base = q->buf;
		q->iov.iov_len = n * TC_SECTOR_SIZE;
		q->io.iov = &q->iov;
		q->io.iovcnt = 1;
	}
	if (fua)
		r->n.fua++;
	submit(r, q);
}

static void submit_flush(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	struct req *q = free_req(r);

	if (!q)
		return;
	memset(&q->io, 0, sizeof(q->io));
	q->kind = REQ_FLUSH;
	q->vol = v;
	q->first = q->nsectors = 0;
	q->fua = false;
	q->io.op = TC_OP_FLUSH;
	q->token = tc_model_flush_begin(r->model, v);
	r->n.flushes++;
	submit(r, q);
}

/* ------------------------------------------------------------------------------------
 * Management operations while I/O runs.
 */

static void change_settings(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	struct tc_volume_settings s, got;
	char want[256], have[256];
	int ret;

	random_settings(&r->rng, &s);
	fit_settings(&r->su->vol[v], &s);
	r->n.settings++;
	settings_str(&s, want, sizeof(want));
	trace(r, "tc_volume_set vol %u: %s", v, want);
	ret = tc_volume_set(r->vol[v], &s, NULL, NULL);
	if (ret != 0) {
		settings_str(&s, want, sizeof(want));
		fail(r, "tc_volume_set(volume %u, %s) returned %d (%s)", v, want, ret,
		     strerror(-ret));
		return;
	}
	r->set[v] = s;
	tc_volume_get(r->vol[v], &got);
	if (!settings_equal(&s, &got)) {
		settings_str(&s, want, sizeof(want));
		settings_str(&got, have, sizeof(have));
		fail(r, "volume %u: tc_volume_get after tc_volume_set gives %s, set %s", v,
		     have, want);
	}
}

static bool writes_inflight(const struct run *r, unsigned v)
{
	for (unsigned i = 0; i < MAX_INFLIGHT; i++) {
		const struct req *q = &r->reqs[i];

		if (q->vol == v && (q->kind == REQ_WRITE || q->kind == REQ_ZEROES ||
				    q->kind == REQ_DISCARD))
			return true;
	}
	return false;
}

static void check_no_dirty(struct run *r, unsigned v, const char *when)
{
	struct tc_volume_stats st;

	tc_volume_stats(r->vol[v], &st);
	if (st.dirty_bytes != 0)
		fail(r, "volume %u: %" PRIu64 " dirty bytes %s", v, st.dirty_bytes, when);
}

static void flush_dirty(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	bool quiet = !writes_inflight(r, v);
	int ret;

	r->n.flush_dirty++;
	trace(r, "tc_volume_flush_dirty vol %u", v);
	ret = tc_volume_flush_dirty(r->vol[v], NULL, NULL);
	if (ret != 0) {
		fail(r, "tc_volume_flush_dirty(volume %u) returned %d (%s)", v, ret,
		     strerror(-ret));
		return;
	}
	if (quiet)
		check_no_dirty(r, v, "after tc_volume_flush_dirty with no write in flight");
}

/* ------------------------------------------------------------------------------------
 * --arrays: every volume's backing is an array with member superblocks over crash
 * devices (one file each), created at format and assembled from its member and spare
 * files at every restart, so that a member failed before a power cut must be refused
 * as stale (invariant 7).  Member failures (two at once on RAID 6), hot spares added,
 * replaces, removals and checks come from the op loop; rebuilds run on the
 * deterministic context while the requests go on.
 *
 * The arrays repair themselves after a crash (the partial-parity log's replay, the
 * write-intent map's resync, the mirrors' resync: docs/raid.md, "The write hole"),
 * but by default the test also does what md's start would on top: it waits for a
 * rebuild to end and runs a repair pass (tc_array_check with repair) before the cache
 * reads anything, and it cuts the power only while every parity array is whole and
 * every mirror either whole or rebuilding onto a spare (otherwise it restarts cleanly
 * instead).  --write-hole lifts both rules and loses a member right after every cut:
 * the write-hole case, where only the arrays' own recovery stands between a torn
 * stripe update and wrong data in chunks nobody wrote.
 */

/* Whether device @i of volume @v's array is one that tc_array_status @st lists. */
static bool array_lists(const struct run *r, unsigned v, unsigned i,
			const struct tc_array_status *st)
{
	char name[PATH_MAX + 8];

	snprintf(name, sizeof(name), "crash:%s", r->mpath[v][i]);
	for (unsigned m = 0; m < st->members; m++)
		if ((st->member[m].name && !strcmp(st->member[m].name, name)) ||
		    (st->member[m].replacing && !strcmp(st->member[m].replacing, name)))
			return true;
	for (unsigned e = 0; e < st->nextra; e++)
		if (st->extra[e].name && !strcmp(st->extra[e].name, name))
			return true;
	return false;
}

/* Forgets the devices the array closed (removed, or left out at assembly). */
static void array_forget_closed(struct run *r, unsigned v)
{
	struct tc_array_status st;

	if (tc_array_status(r->vol_dev[v], &st) != 0)
		return;
	for (unsigned i = 0; i < r->ndevs[v]; i++)
		if (r->mdev[v][i] && !array_lists(r, v, i, &st)) {
			trace(r, "array %u: %s closed by the array", v, r->mpath[v][i]);
			r->mdev[v][i] = NULL;
		}
}

/* Device @i of volume @v's array: the crash device over its file (made with
 * TC_DEV_CREATE in @flags), seeded by seed, generation and place. */
static int array_open_file(struct run *r, unsigned v, unsigned i, unsigned flags,
			   tc_dev **out)
{
	int ret = tc_dev_new_crash(r->ctx, r->mpath[v][i], flags,
				   TC_ARRAY_DATA_OFFSET + r->su->vol[v].arr.member_size,
				   mix64(r->su->seed * 7919 + r->generation * 131 + v * 17 + i),
				   out);

	if (ret)
		fail(r, "tc_dev_new_crash(%s) returned %d", r->mpath[v][i], ret);
	return ret;
}

/* A new member or spare file for volume @v's array: its index, or -1 when there is no
 * room for another (then nothing is opened). */
static int array_new_device(struct run *r, unsigned v, tc_dev **out)
{
	unsigned i = r->ndevs[v];

	if (i >= MAX_ARRAY_DEVS)
		return -1;
	snprintf(r->mpath[v][i], sizeof(r->mpath[v][i]), "%s/vol%u-dev%u.img", r->dir, v, i);
	if (array_open_file(r, v, i, TC_DEV_CREATE, out))
		return -1;
	r->ndevs[v]++;
	return (int)i;
}

/* After a power cut (default mode): md's resync at start, as the test's own step
 * (see above): the rebuild ends, then a repair pass makes parity and copies agree. */
static void array_resync(struct run *r, unsigned v)
{
	struct tc_array_status st;
	int ret;

	if (!r->resync[v] || r->su->vol[v].arr.level == TC_RAID0) {
		r->resync[v] = false;
		return;
	}
	ret = tc_array_wait(r->vol_dev[v]);
	if (ret == 0)
		ret = tc_array_status(r->vol_dev[v], &st);
	if (ret == 0 && (st.degraded || st.failed))
		return;         /* not whole yet: resync once it is */
	if (ret == 0)
		ret = tc_array_check(r->vol_dev[v], true);
	if (ret == 0)
		ret = tc_array_wait(r->vol_dev[v]);
	if (ret != 0) {
		fail(r, "array %u: resync after the power cut: %d (%s)", v, ret, strerror(-ret));
		return;
	}
	r->resync[v] = false;
	r->n.resyncs++;
}

/* Volume @v's array: created (@format) or assembled from every file it ever had. */
static bool open_array(struct run *r, unsigned v, bool format)
{
	const struct array_setup *as = &r->su->vol[v].arr;
	struct tc_array_opts ao = { .level = as->level, .chunk = as->chunk,
				    .copies = as->copies };
	struct tc_array_status st;
	struct tc_array_identity id;
	tc_dev *devs[MAX_ARRAY_DEVS];
	unsigned flags = format ? TC_DEV_CREATE : 0, n;
	char name[16];
	int ret;

	if (format) {
		r->ndevs[v] = as->members + as->spares;
		for (unsigned i = 0; i < r->ndevs[v]; i++)
			snprintf(r->mpath[v][i], sizeof(r->mpath[v][i]), "%s/vol%u-dev%u.img",
				 r->dir, v, i);
	}
	n = 0;
	for (unsigned i = 0; i < r->ndevs[v]; i++) {
		if (array_open_file(r, v, i, flags, &devs[n])) {
			while (n--)
				tc_dev_close(devs[n]);
			return false;
		}
		/* A spare removed: its superblock must be gone, and it stays out. */
		struct tc_array_member_info mi;
		if (r->blank[v][i]) {
			int e = tc_array_examine(r->ctx, devs[n], &mi);
			tc_dev_close(devs[n]);
			r->mdev[v][i] = NULL;
			if (e != 0) {
				fail(r, "array %u: %s, a spare removed, holds a member superblock "
				     "still (examine %d)", v, r->mpath[v][i], e);
				while (n--)
					tc_dev_close(devs[n]);
				return false;
			}
			continue;
		}
		r->mdev[v][i] = devs[n++];      /* the calls below may clear devs[] */
	}
	snprintf(name, sizeof(name), "arr%u", v);
	if (format)
		/* New sparse files read as zeros: parity and copies agree already. */
		ret = tc_array_create(r->ctx, name, &ao, devs, as->members, devs + as->members,
				      as->spares, TC_ARRAY_ASSUME_CLEAN, &r->vol_dev[v]);
	else
		ret = tc_array_assemble(r->ctx, devs, n,
					config.write_hole ? TC_ARRAY_FORCE : 0, &r->vol_dev[v]);
	if (ret) {
		fail(r, "array %u (%s): %s returned %d (%s)", v, level_name(as),
		     format ? "tc_array_create" : "tc_array_assemble", ret, strerror(-ret));
		r->vol_dev[v] = NULL;
		for (unsigned i = 0; i < r->ndevs[v]; i++)
			r->mdev[v][i] = NULL;
		return false;
	}
	array_forget_closed(r, v);
	ret = as->level == TC_RAID0 ? 0 : tc_array_set_rebuild(r->vol_dev[v], &as->rate);
	if (ret == 0)
		ret = tc_array_status(r->vol_dev[v], &st);
	if (ret == 0)
		ret = tc_array_identity(r->vol_dev[v], &id);
	if (ret != 0) {
		fail(r, "array %u: rebuild rates, status or identity: %d", v, ret);
		return false;
	}
	if (st.size != array_size(as)) {
		fail(r, "array %u (%s, %u members, chunk %" PRIu32 "): size %" PRIu64
		     ", the layout gives %" PRIu64, v, level_name(as), as->members, as->chunk,
		     st.size, array_size(as));
		return false;
	}
	if (!format && st.sync == TC_ARRAY_SYNC_REBUILD && id.rebuild_pos > 0) {
		/* Resumed from its checkpoint, never from further back. */
		r->n.rebuilds_resumed++;
		if (st.sync_pos < id.rebuild_pos) {
			fail(r, "array %u: rebuild resumed at %" PRIu64 ", below its checkpoint %"
			     PRIu64, v, st.sync_pos, id.rebuild_pos);
			return false;
		}
	}
	if (r->lose_member[v] && st.redundancy >= 1) {
		unsigned i = (unsigned)rnd_below(&r->rng, st.members);

		trace(r, "write hole: array %u loses member %u after the power cut", v, i);
		tc_array_fail_member(r->vol_dev[v], i);
		r->n.member_failures++;
	}
	r->lose_member[v] = false;
	array_resync(r, v);
	return !r->rep.failed;
}

/* Whether a power cut now stays out of the write hole (see above). */
static bool arrays_cut_safe(struct run *r)
{
	struct tc_array_status st;

	for (unsigned v = 0; v < r->su->nvol; v++) {
		bool rebuilding = false;

		if (tc_array_status(r->vol_dev[v], &st) != 0)
			return false;
		for (unsigned m = 0; m < st.members; m++)
			rebuilding |= st.member[m].state == TC_MEMBER_REBUILDING;
		if (st.faulty > 0 || r->resync[v] ||
		    (st.parity && (st.degraded || rebuilding)))
			return false;
	}
	return true;
}

/* Fails a member within the redundancy left; on RAID 6 with both parities left, now
 * and then two at once. */
static void array_fail(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol), nfail = 1;
	struct tc_array_status st;

	if (tc_array_status(r->vol_dev[v], &st) != 0 || st.redundancy < 1)
		return;
	if (st.redundancy >= 2 && rnd_below(&r->rng, 2)) {
		nfail = 2;
		r->n.double_failures++;
	}
	for (unsigned k = 0; k < nfail; k++) {
		unsigned i = (unsigned)rnd_below(&r->rng, st.members);
		int ret;

		trace(r, "array %u: fail member %u", v, i);
		ret = tc_array_fail_member(r->vol_dev[v], i);
		if (ret < 0) {
			fail(r, "tc_array_fail_member(array %u, %u) returned %d", v, i, ret);
			return;
		}
		r->n.member_failures += ret == 0;
	}
}

static void array_add_spare(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	struct tc_array_status st;
	tc_dev *dev;
	int i, ret;

	if (r->su->vol[v].arr.level == TC_RAID0 || tc_array_status(r->vol_dev[v], &st) ||
	    st.nextra >= TC_ARRAY_MAX_EXTRA || (i = array_new_device(r, v, &dev)) < 0)
		return;
	trace(r, "array %u: add spare %s", v, r->mpath[v][i]);
	ret = tc_array_add_spare(r->vol_dev[v], dev);
	if (ret) {
		fail(r, "tc_array_add_spare(array %u, %s) returned %d (%s)", v, r->mpath[v][i],
		     ret, strerror(-ret));
		return;
	}
	r->mdev[v][i] = dev;
	r->n.spares_added++;
}

/* Replaces an active member of a whole, idle array by a new device. */
static void array_replace(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol), m;
	struct tc_array_status st;
	tc_dev *dev;
	int i, ret;

	if (r->su->vol[v].arr.level == TC_RAID0 || tc_array_status(r->vol_dev[v], &st) ||
	    st.sync != TC_ARRAY_SYNC_IDLE || st.degraded || st.nextra >= TC_ARRAY_MAX_EXTRA)
		return;
	m = (unsigned)rnd_below(&r->rng, st.members);
	if (st.member[m].state != TC_MEMBER_ACTIVE || (i = array_new_device(r, v, &dev)) < 0)
		return;
	trace(r, "array %u: replace member %u by %s", v, m, r->mpath[v][i]);
	ret = tc_array_replace(r->vol_dev[v], m, dev);
	if (ret) {
		fail(r, "tc_array_replace(array %u, %u, %s) returned %d (%s)", v, m,
		     r->mpath[v][i], ret, strerror(-ret));
		return;
	}
	r->mdev[v][i] = dev;
	r->n.replaces++;
}

/* Removes a spare or a retired member (faulty and taken over, replaced). */
static void array_remove(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	struct tc_array_status st;
	char name[PATH_MAX + 8];
	int ret;

	if (tc_array_status(r->vol_dev[v], &st) || st.nextra == 0)
		return;
	unsigned k = (unsigned)rnd_below(&r->rng, st.nextra);
	snprintf(name, sizeof(name), "%s", st.extra[k].name);
	bool spare = st.extra[k].state == TC_MEMBER_SPARE;
	trace(r, "array %u: remove %s", v, name);
	ret = tc_array_remove(r->vol_dev[v], name);
	if (ret == -EBUSY)
		return;         /* requests in flight: documented, retry later */
	if (ret) {
		fail(r, "tc_array_remove(array %u, %s) returned %d (%s)", v, name, ret,
		     strerror(-ret));
		return;
	}
	for (unsigned i = 0; spare && i < r->ndevs[v]; i++) {
		char dn[PATH_MAX + 8];
		snprintf(dn, sizeof(dn), "crash:%s", r->mpath[v][i]);
		if (!strcmp(dn, name))
			r->blank[v][i] = true;
	}
	array_forget_closed(r, v);
	r->n.removes++;
}

/* Starts a check (no repair) while the requests go on; finish() checks the count. */
static void array_start_check(struct run *r)
{
	unsigned v = (unsigned)rnd_below(&r->rng, r->su->nvol);
	struct tc_array_status st;
	int ret;

	if (r->su->vol[v].arr.level == TC_RAID0 || tc_array_status(r->vol_dev[v], &st) ||
	    st.sync != TC_ARRAY_SYNC_IDLE || st.degraded)
		return;
	trace(r, "array %u: check", v);
	ret = tc_array_check(r->vol_dev[v], false);
	if (ret)
		fail(r, "tc_array_check(array %u) returned %d (%s)", v, ret, strerror(-ret));
	r->n.checks++;
}

/* End of a seed: every rebuild ends, and a whole array's members agree (P and Q, or
 * the copies): the writes, the rebuilds and the resyncs kept them consistent. */
static void arrays_final_check(struct run *r)
{
	for (unsigned v = 0; v < r->su->nvol && !r->rep.failed; v++) {
		struct tc_array_status st;
		int ret;

		if (r->su->vol[v].arr.level == TC_RAID0)
			continue;
		ret = tc_array_wait(r->vol_dev[v]);
		if (ret == 0)
			ret = tc_array_status(r->vol_dev[v], &st);
		if (ret == 0 && (st.degraded || st.failed))
			continue;
		if (ret == 0)
			ret = tc_array_check(r->vol_dev[v], false);
		if (ret == 0)
			ret = tc_array_wait(r->vol_dev[v]);
		if (ret == 0)
			ret = tc_array_status(r->vol_dev[v], &st);
		if (ret != 0) {
			fail(r, "array %u: final check: %d (%s)", v, ret, strerror(-ret));
			return;
		}
		if (st.mismatches != 0)
			fail(r, "array %u (%s, %u members, chunk %" PRIu32 "): %" PRIu64
			     " mismatches in the final check (%s)", v, level_name(&r->su->vol[v].arr),
			     st.members, st.chunk, st.mismatches,
			     st.parity ? "stripes whose parity disagrees with their data"
				       : "chunks whose copies differ");
	}
}

/* ------------------------------------------------------------------------------------
 * Bringing the whole stack up and down.
 */

static void close_devices(struct run *r)
{
	for (unsigned v = 0; v < r->su->nvol; v++) {
		if (r->vol_dev[v])
			tc_dev_close(r->vol_dev[v]);
		r->vol_dev[v] = NULL;
		r->vol[v] = NULL;
		for (unsigned i = 0; i < MAX_ARRAY_DEVS; i++)
			r->mdev[v][i] = NULL;   /* closed with their array */
	}
	if (r->cache_dev)
		tc_dev_close(r->cache_dev);
	r->cache_dev = NULL;
	if (r->ctx)
		tc_ctx_free(r->ctx);
	r->ctx = NULL;
}

/* Forget requests that will never complete (their context is gone). */
static void drop_inflight(struct run *r)
{
	for (unsigned i = 0; i < MAX_INFLIGHT; i++)
		r->reqs[i].kind = REQ_FREE;
	r->inflight = 0;
}

/* Opens context, devices and cache; formats everything first when @format. */
static bool open_stack(struct run *r, bool format)
{
	const struct seed_setup *su = r->su;
	struct tc_ctx_opts co = {
		.mode = TC_CTX_DETERMINISTIC,
		.seed = mix64(su->seed * 1000003u + r->generation),
		.log_level = config.trace ? TC_LOG_INFO : TC_LOG_WARN,
	};
	unsigned flags = format ? TC_DEV_CREATE : 0;
	unsigned order[MAX_VOLUMES];
	char name[16];
	int ret;

	ret = tc_ctx_new(&co, &r->ctx);
	if (ret) {
		fail(r, "tc_ctx_new returned %d", ret);
		return false;
	}
	tc_ctx_set_log(r->ctx, run_log, r, config.trace ? TC_LOG_INFO : TC_LOG_WARN);
	ret = tc_dev_new_crash(r->ctx, r->cache_path, flags, su->cache_dev_size,
			       mix64(co.seed + 1), &r->cache_dev);
	if (ret) {
		fail(r, "tc_dev_new_crash(%s) returned %d", r->cache_path, ret);
		return false;
	}
	for (unsigned v = 0; v < su->nvol; v++) {
		if (config.arrays) {
			if (!open_array(r, v, format))
				return false;
			continue;
		}
		ret = tc_dev_new_crash(r->ctx, r->vol_path[v], flags,
				       TC_BACKING_DATA_OFFSET + su->vol[v].size,
				       mix64(co.seed + 2 + v), &r->vol_dev[v]);
		if (ret) {
			fail(r, "tc_dev_new_crash(%s) returned %d", r->vol_path[v], ret);
			return false;
		}
	}
	if (format) {
		ret = tc_cache_format(r->ctx, r->cache_dev, &su->opts);
		if (ret) {
			fail(r, "tc_cache_format returned %d (%s)", ret, strerror(-ret));
			return false;
		}
		for (unsigned v = 0; v < su->nvol; v++) {
			snprintf(name, sizeof(name), "vol%u", v);
			/* A full stripe of two lines: requests of up to three lines cover
			 * whole ones, which instwb makes dirty at once. */
			ret = tc_backing_format_striped(r->ctx, r->vol_dev[v], name,
							&su->vol[v].set,
							config.arrays ? 0 : 2 * su->opts.line_size);
			if (ret) {
				fail(r, "tc_backing_format(%s) returned %d (%s)", name, ret,
				     strerror(-ret));
				return false;
			}
			r->set[v] = su->vol[v].set;
		}
	}
	ret = tc_cache_open(r->ctx, r->cache_dev, &r->cache);
	if (ret) {
		fail(r, "tc_cache_open returned %d (%s)", ret, strerror(-ret));
		return false;
	}
	/* Attach in a seed-chosen order: volume ids and table slots vary. */
	for (unsigned v = 0; v < su->nvol; v++)
		order[v] = v;
	for (unsigned v = su->nvol; v > 1; v--) {
		unsigned j = (unsigned)rnd_below(&r->rng, v), t = order[v - 1];

		order[v - 1] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < su->nvol; i++) {
		unsigned v = order[i];
		struct tc_volume_settings got;
		char want[256], have[256];

		ret = tc_cache_attach(r->cache, r->vol_dev[v], NULL, 0, &r->vol[v]);
		if (ret) {
			fail(r, "tc_cache_attach(volume %u) returned %d (%s)", v, ret,
			     strerror(-ret));
			return false;
		}
		if (tc_volume_size(r->vol[v]) != su->vol[v].size) {
			fail(r, "volume %u: size %" PRIu64 ", formatted with %" PRIu64, v,
			     tc_volume_size(r->vol[v]), su->vol[v].size);
			return false;
		}
		tc_volume_get(r->vol[v], &got);
		if (!settings_equal(&got, &r->set[v])) {
			settings_str(&r->set[v], want, sizeof(want));
			settings_str(&got, have, sizeof(have));
			fail(r, "volume %u: attached with settings %s, stored %s", v, have,
			     want);
			return false;
		}
	}
	return true;
}

/* Reads every sector of every volume through the engine and checks it under @rule;
 * with @collapse, what was read becomes the model's durable state. */
static void verify_volumes(struct run *r, enum tc_model_rule rule, bool collapse)
{
	char msg[1024];

	for (unsigned v = 0; v < r->su->nvol && !r->rep.failed; v++) {
		uint64_t size = r->su->vol[v].size;

		for (uint64_t off = 0; off < size && !r->rep.failed; off += VERIFY_CHUNK) {
			uint64_t len = size - off < VERIFY_CHUNK ? size - off : VERIFY_CHUNK;
			int ret;

			memset(r->vbuf, 0xa5, len);
			ret = tc_volume_pread(r->vol[v], r->vbuf, len, off);
			if (ret != 0) {
				fail(r, "full read: tc_volume_pread(volume %u, offset %" PRIu64
				     ", length %" PRIu64 ") returned %d (%s) [%s]", v, off, len,
				     ret, strerror(-ret), r->phase);
				return;
			}
			for (uint64_t i = 0; i < len / TC_SECTOR_SIZE; i++) {
				uint64_t s = off / TC_SECTOR_SIZE + i;
				const uint8_t *sec = r->vbuf + i * TC_SECTOR_SIZE;

				if (!tc_model_check(r->model, v, s, sec, rule, msg, sizeof(msg))) {
					fail_sector(r, v, s, msg, "full read");
					return;
				}
				if (collapse)
					tc_model_collapse(r->model, v, s, sec);
			}
			r->n.sectors_verified += len / TC_SECTOR_SIZE;
		}
	}
}

/* Adds the volumes' engine counters to the run's before the cache goes away. */
static void collect_stats(struct run *r)
{
	struct tc_volume_stats st;

	for (unsigned v = 0; v < r->su->nvol; v++) {
		if (!r->vol[v])
			continue;
		tc_volume_stats(r->vol[v], &st);
		r->n.read_hits += st.read_hits + st.read_partial_hits;
		r->n.promotions += st.promotions;
		r->n.evictions += st.evictions;
		r->n.writeback_bytes += st.writeback_bytes;
		r->n.bypassed += st.bypassed_seq + st.bypassed_admission;
	}
}

static void clean_restart(struct run *r);

/* The cleaner's dirty index of every volume agrees with the cache lines (dirty.c). */
static void check_dirty_index(struct run *r, const char *when)
{
	for (unsigned v = 0; v < r->su->nvol; v++) {
		int ret = r->vol[v] ? tc_volume_check_dirty_index(r->vol[v]) : 0;
		if (ret != 0)
			fail(r, "volume %u: dirty index check %s returned %d (%s)", v, when, ret,
			     strerror(-ret));
	}
}

/* Power cut of every device with requests in flight, process death, recovery, and a
 * full check against invariant 2. */
static void power_cut(struct run *r)
{
	int ret;

	if (config.arrays && !config.write_hole && !arrays_cut_safe(r)) {
		r->n.cuts_deferred++;
		clean_restart(r);
		return;
	}
	r->n.power_cuts++;
	trace(r, "power cut with %u requests in flight", r->inflight);
	collect_stats(r);
	ret = tc_crash_power_cut(r->cache_dev);
	for (unsigned v = 0; v < r->su->nvol && ret >= 0; v++) {
		if (!config.arrays) {
			ret = tc_crash_power_cut(r->vol_dev[v]);
			continue;
		}
		/* Every member and spare at the same instant. */
		array_forget_closed(r, v);
		for (unsigned i = 0; i < r->ndevs[v] && ret >= 0; i++)
			if (r->mdev[v][i]) {
				trace(r, "power cut: %s", r->mpath[v][i]);
				ret = tc_crash_power_cut(r->mdev[v][i]);
			}
		r->resync[v] = true;
		r->lose_member[v] = config.write_hole;
	}
	if (ret < 0) {
		fail(r, "tc_crash_power_cut returned %d", ret);
		return;
	}
	if (config.arrays) {
		/* An array's close flushes its members, which runs the context: first let
		 * what is queued fail (the devices refuse everything now), so that no
		 * work item points into the requests tc_cache_abandon frees. */
		r->cut = true;
		for (unsigned i = 0; i < 100000 && tc_ctx_poll(r->ctx, 64) > 0; i++)
			;
		r->cut = false;
	}
	tc_cache_abandon(r->cache);
	r->cache = NULL;
	close_devices(r);
	drop_inflight(r);
	r->generation++;
	r->phase = "after power cut and recovery";
	if (open_stack(r, false)) {
		verify_volumes(r, TC_MODEL_RECOVERED, true);
		check_dirty_index(r, "after recovery");
	}
	r->phase = "running";
}

/* Wait for everything, tc_cache_close, reopen, and a full exact check (invariant 1:
 * a clean shutdown keeps every completed write). */
static void clean_restart(struct run *r)
{
	int ret;

	r->n.restarts++;
	trace(r, "clean restart");
	if (!wait_inflight(r, 0))
		return;
	check_dirty_index(r, "before a clean restart");
	collect_stats(r);
	ret = tc_cache_close(r->cache);
	r->cache = NULL;
	if (ret != 0) {
		fail(r, "tc_cache_close returned %d (%s)", ret, strerror(-ret));
		return;
	}
	close_devices(r);
	r->generation++;
	r->phase = "after clean shutdown and reopen";
	if (open_stack(r, false))
		verify_volumes(r, TC_MODEL_CURRENT, true);
	r->phase = "running";
}

/* End of a seed: exact check, no dirty data left, then detach and check the backing
 * devices directly (invariant 3). */
static void finish(struct run *r)
{
	struct tc_cache_stats cs;
	char msg[1024];
	int ret;

	r->phase = "end of run";
	if (!wait_inflight(r, 0))
		return;
	verify_volumes(r, TC_MODEL_CURRENT, false);
	check_dirty_index(r, "at the end of the run");
	for (unsigned v = 0; v < r->su->nvol && !r->rep.failed; v++) {
		ret = tc_volume_flush_dirty(r->vol[v], NULL, NULL);
		if (ret != 0)
			fail(r, "final tc_volume_flush_dirty(volume %u) returned %d (%s)", v,
			     ret, strerror(-ret));
		check_no_dirty(r, v, "after the final tc_volume_flush_dirty");
	}
	if (config.arrays)
		arrays_final_check(r);
	if (r->rep.failed)
		return;
	tc_cache_stats(r->cache, &cs);
	if (cs.dirty_bytes != 0 || cs.lines_dirty != 0) {
		fail(r, "cache: %" PRIu64 " dirty bytes in %" PRIu64 " lines after every "
		     "volume's tc_volume_flush_dirty", cs.dirty_bytes, cs.lines_dirty);
		return;
	}
	collect_stats(r);
	for (unsigned v = 0; v < r->su->nvol; v++) {
		ret = tc_volume_detach(r->vol[v], 0, NULL, NULL);
		if (ret != 0) {
			fail(r, "tc_volume_detach(volume %u) returned %d (%s)", v, ret,
			     strerror(-ret));
			return;
		}
		r->vol[v] = NULL;
	}
	r->phase = "backing device read directly after detach";
	for (unsigned v = 0; v < r->su->nvol && !r->rep.failed; v++) {
		uint64_t size = r->su->vol[v].size;

		for (uint64_t off = 0; off < size && !r->rep.failed; off += VERIFY_CHUNK) {
			uint64_t len = size - off < VERIFY_CHUNK ? size - off : VERIFY_CHUNK;

			ret = tc_dev_pread(r->vol_dev[v], r->vbuf, len,
					   TC_BACKING_DATA_OFFSET + off);
			if (ret != 0) {
				fail(r, "tc_dev_pread(backing %u, offset %" PRIu64 ") returned %d",
				     v, TC_BACKING_DATA_OFFSET + off, ret);
				return;
			}
			for (uint64_t i = 0; i < len / TC_SECTOR_SIZE; i++) {
				uint64_t s = off / TC_SECTOR_SIZE + i;

				if (!tc_model_check(r->model, v, s, r->vbuf + i * TC_SECTOR_SIZE,
						    TC_MODEL_CURRENT, msg, sizeof(msg))) {
					fail_sector(r, v, s, msg, "backing after detach");
					return;
				}
			}
			r->n.sectors_verified += len / TC_SECTOR_SIZE;
		}
	}
	if (r->rep.failed)
		return;
	ret = tc_cache_close(r->cache);
	r->cache = NULL;
	if (ret != 0)
		fail(r, "tc_cache_close after detaching every volume returned %d", ret);
}

/* ------------------------------------------------------------------------------------
 * The op loop.
 */

static void op_loop(struct run *r)
{
	for (r->op = 0; r->op < config.ops && !r->rep.failed; r->op++) {
		unsigned pick = (unsigned)rnd_below(&r->rng, 1000);
		int ran;

		if (pick < 290)
			submit_data(r, REQ_READ, false);
		else if (pick < 570)
			submit_data(r, REQ_WRITE, false);
		else if (pick < 620)
			submit_data(r, REQ_WRITE, true);
		else if (pick < 670)
			submit_data(r, REQ_ZEROES, rnd_below(&r->rng, 4) == 0);
		else if (pick < 720)
			submit_data(r, REQ_DISCARD, false);
		else if (pick < 800)
			submit_flush(r);
		else if (pick < 815)
			change_settings(r);
		else if (pick < 830)
			flush_dirty(r);
		else if (pick < 842)
			power_cut(r);
		else if (pick < 848)
			clean_restart(r);
		else if (!config.arrays)
			;
		else if (pick < 856)
			array_fail(r);
		else if (pick < 860)
			array_add_spare(r);
		else if (pick < 863)
			array_replace(r);
		else if (pick < 866)
			array_remove(r);
		else if (pick < 868)
			array_start_check(r);
		/* else: a pause, the cleaner and the timers get the time */
		if (r->rep.failed)
			break;
		ran = tc_ctx_poll(r->ctx, (unsigned)rnd_below(&r->rng, 9));
		if (ran < 0)
			fail(r, "tc_ctx_poll returned %d", ran);
		if (rnd_below(&r->rng, 10) < 3)
			tc_ctx_advance(r->ctx, rnd_below(&r->rng, 50 * MS + 1));
	}
}

/* ------------------------------------------------------------------------------------
 * A seed from start to end.
 */

static void remove_files(struct run *r)
{
	unlink(r->cache_path);
	for (unsigned v = 0; v < r->su->nvol; v++) {
		unlink(r->vol_path[v]);
		for (unsigned i = 0; i < r->ndevs[v]; i++)
			unlink(r->mpath[v][i]);
	}
	rmdir(r->dir);
}

static void free_run(struct run *r)
{
	/* After a failure the engine may be in any state: abandon, never wait.  Nor are
	 * the devices closed then: an array's close flushes its members, which runs the
	 * context, whose queue can still hold work items of requests tc_cache_abandon
	 * freed.  They are left open (the run's files are removed all the same). */
	if (r->cache)
		tc_cache_abandon(r->cache);
	r->cache = NULL;
	if (!r->rep.failed)
		close_devices(r);
	for (unsigned i = 0; i < MAX_INFLIGHT; i++)
		free(r->reqs[i].buf);
	free(r->vbuf);
	tc_model_free(r->model);
}

static void describe(const struct run *r, char *out, size_t len)
{
	const struct seed_setup *su = r->su;
	size_t used;

	used = (size_t)snprintf(out, len, "line %u %s, %u lines; %u volume%s (",
				su->opts.line_size, tc_replacement_name(su->opts.replacement),
				su->lines_wanted, su->nvol, su->nvol > 1 ? "s" : "");
	for (unsigned v = 0; v < su->nvol && used < len; v++) {
		used += (size_t)snprintf(out + used, len - used, "%s%" PRIu64 " KiB %s%s",
					 v ? ", " : "", su->vol[v].size >> 10,
					 tc_write_policy_name(su->vol[v].set.write_policy),
					 su->vol[v].set.read_cache ? "" : " no-rc");
		if (config.arrays && used < len)
			used += (size_t)snprintf(out + used, len - used, " on %s x%u/%uK",
						 level_name(&su->vol[v].arr),
						 su->vol[v].arr.members,
						 su->vol[v].arr.chunk >> 10);
	}
	if (used < len)
		snprintf(out + used, len - used, ")");
}

/* Returns true when the seed passed. */
static bool run_seed(uint64_t seed)
{
	struct seed_setup su;
	struct run *r = calloc(1, sizeof(*r));
	uint64_t sizes[MAX_VOLUMES];
	bool ok;
	char desc[512];

	if (!r) {
		fprintf(stderr, "tc-stress: out of memory\n");
		exit(2);
	}
	make_setup(seed, &su);
	r->su = &su;
	r->rng = mix64(seed ^ 0x52554e0000000000ull);
	r->phase = "setup";
	for (unsigned v = 0; v < su.nvol; v++)
		sizes[v] = su.vol[v].size;
	r->model = tc_model_new(su.nvol, sizes);
	r->vbuf = malloc(VERIFY_CHUNK);
	for (unsigned i = 0; i < MAX_INFLIGHT; i++)
		r->reqs[i].buf = malloc(MAX_REQ_BYTES);
	if (!r->model || !r->vbuf || !r->reqs[MAX_INFLIGHT - 1].buf) {
		fprintf(stderr, "tc-stress: out of memory\n");
		exit(2);
	}
	snprintf(r->dir, sizeof(r->dir), "%s/tc-stress-%" PRIu64 "-XXXXXX", config.tmpdir,
		 seed);
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, "tc-stress: mkdtemp(%s): %s\n", r->dir, strerror(errno));
		exit(2);
	}
	snprintf(r->cache_path, sizeof(r->cache_path), "%s/cache.img", r->dir);
	for (unsigned v = 0; v < su.nvol; v++)
		snprintf(r->vol_path[v], sizeof(r->vol_path[v]), "%s/vol%u.img", r->dir, v);

	atomic_store(&config.current_seed, seed);
	alarm(SEED_TIMEOUT_S);
	if (open_stack(r, true)) {
		r->phase = "running";
		op_loop(r);
		if (!r->rep.failed)
			finish(r);
	}
	alarm(0);
	ok = !r->rep.failed;
	if (!ok)
		print_failure(r);
	else if (config.verbose) {
		describe(r, desc, sizeof(desc));
		printf("seed %" PRIu64 ": ok; %s; %" PRIu64 " reads, %" PRIu64 " writes (%"
		       PRIu64 " fua), %" PRIu64 " zeroes, %" PRIu64 " discards, %" PRIu64
		       " flushes, %" PRIu64 " settings, %" PRIu64 " flush_dirty, %" PRIu64
		       " power cuts, %" PRIu64 " restarts, %" PRIu64 " sectors verified; "
		       "engine: %" PRIu64 " read hits, %" PRIu64 " promotions, %" PRIu64
		       " evictions, %" PRIu64 " KiB written back, %" PRIu64 " bypassed\n",
		       seed, desc, r->n.reads, r->n.writes, r->n.fua, r->n.zeroes,
		       r->n.discards, r->n.flushes, r->n.settings, r->n.flush_dirty,
		       r->n.power_cuts, r->n.restarts, r->n.sectors_verified,
		       r->n.read_hits, r->n.promotions, r->n.evictions,
		       r->n.writeback_bytes >> 10, r->n.bypassed);
		if (config.arrays)
			printf("  arrays: %" PRIu64 " member failures (%" PRIu64 " double), %"
			       PRIu64 " spares added, %" PRIu64 " replaces, %" PRIu64
			       " removes, %" PRIu64 " checks, %" PRIu64 " resyncs, %" PRIu64
			       " rebuilds resumed, %" PRIu64 " power cuts made clean restarts\n",
			       r->n.member_failures, r->n.double_failures, r->n.spares_added,
			       r->n.replaces, r->n.removes, r->n.checks, r->n.resyncs,
			       r->n.rebuilds_resumed, r->n.cuts_deferred);
		fflush(stdout);
	}
	free_run(r);
	remove_files(r);
	free(r);
	return ok;
}

/* ------------------------------------------------------------------------------------
 * Watchdog and command line.
 */

/* "FAIL seed=<current seed>: <what>\n" on stdout, async-signal-safe. */
static void report_signal(const char *what)
{
	char buf[160], num[24];
	uint64_t seed = atomic_load(&config.current_seed);
	size_t len = 0, n = 0;
	const char *pre = "FAIL seed=";

	do {
		num[n++] = (char)('0' + seed % 10);
		seed /= 10;
	} while (seed && n < sizeof(num));
	for (const char *p = pre; *p; p++)
		buf[len++] = *p;
	while (n)
		buf[len++] = num[--n];
	for (const char *p = what; *p && len < sizeof(buf) - 1; p++)
		buf[len++] = *p;
	buf[len++] = '\n';
	if (write(STDOUT_FILENO, buf, len) < 0)
		return;
}

/* A seed that hangs is reported by number, then the process ends. */
static void watchdog(int sig)
{
	(void)sig;
	report_signal(": no result after " TC_STR(SEED_TIMEOUT_S) " s (hang)");
	_exit(1);
}

/* A seed that crashes the process is reported by number, then the signal does its
 * default work (core dump, exit status). */
static void fatal_signal(int sig)
{
	report_signal(sig == SIGSEGV ? ": crashed (SIGSEGV)" : sig == SIGBUS ?
		      ": crashed (SIGBUS)" : ": crashed (SIGABRT)");
	signal(sig, SIG_DFL);
	raise(sig);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tc-stress [--seed N] [--count K] [--ops M] [--arrays [--write-hole]]\n"
		"                 [--verbose] [--trace]\n"
		"  --seed N    first seed (default 1)\n"
		"  --count K   seeds to run (default $TC_STRESS_COUNT or 500)\n"
		"  --ops M     operations per seed (default 400)\n"
		"  --arrays    every backing is an array of crash devices: random level\n"
		"              (0, 1, 10, 5, 6), 2-8 members, 4-64 KiB chunks, hot spares;\n"
		"              member failures, spares added, replaces, checks, rebuilds cut\n"
		"              by power cuts and resumed at assembly\n"
		"  --write-hole  with --arrays: also cut the power of degraded parity arrays\n"
		"              and lose a member after every cut, without resync (the write\n"
		"              hole: fails until the arrays close it; off by default)\n"
		"  --verbose   one line per passing seed\n"
		"  --trace     every request and event on stderr (to debug one seed)\n"
		"Temporary files go under $TMPDIR (default /tmp).\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	const char *env = getenv("TC_STRESS_COUNT");
	uint64_t passed = 0, failed = 0, v;
	struct sigaction sa;
	struct timespec t0, t1;

	config.first_seed = 1;
	config.count = 500;
	config.ops = 400;
	config.tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (env && !parse_u64(env, &config.count)) {
		fprintf(stderr, "tc-stress: TC_STRESS_COUNT=%s is not a number\n", env);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc && parse_u64(argv[i + 1], &v)) {
			config.first_seed = v;
			i++;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc &&
			   parse_u64(argv[i + 1], &v)) {
			config.count = v;
			i++;
		} else if (!strcmp(argv[i], "--ops") && i + 1 < argc &&
			   parse_u64(argv[i + 1], &v) && v <= UINT_MAX) {
			config.ops = (unsigned)v;
			i++;
		} else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
			config.verbose = true;
		} else if (!strcmp(argv[i], "--trace")) {
			config.trace = true;
		} else if (!strcmp(argv[i], "--arrays")) {
			config.arrays = true;
		} else if (!strcmp(argv[i], "--write-hole")) {
			config.write_hole = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (config.write_hole && !config.arrays) {
		fprintf(stderr, "tc-stress: --write-hole needs --arrays\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watchdog;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = fatal_signal;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < config.count; i++) {
		if (run_seed(config.first_seed + i)) {
			passed++;
		} else {
			failed++;
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (config.verbose)
		printf("%.1f s for %" PRIu64 " seeds of %u ops\n",
		       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		       passed + failed, config.ops);
	printf("%" PRIu64 " passed, %" PRIu64 " failed\n", passed, failed);
	return failed ? 1 : 0;
}
