/* SPDX-License-Identifier: MIT */
/*
 * plan.c - what a sub-request will do, decided under the shard lock with the line
 * held (request.c runs it): the effective route of a write from the volume's write
 * policy and the cache's state (effective_route), whether a read miss fills the cache
 * (admit_fill: read caching, admission, sequential bypass, the range's attributes of
 * region.c), and the units each device
 * reads and writes (tc_plan_read, tc_plan_write, tc_plan_discard), and whether the
 * sub-request is a hit for the replacement policy (repl_hit: it uses a resident line;
 * request.c tells the policy).  A plan ends by naming the path's first step (enum
 * sub_step_id).  The sequential detector's verdict on a whole request comes first
 * (tc_plan_seq_bypass).
 *
 * Policies are cases here: a write policy is one case of effective_route() and the
 * route it picks is one branch of tc_plan_write(); the request paths of request.c are
 * shared by all of them.
 */
#include "cache_priv.h"
#include "request.h"

bool tc_plan_seq_bypass(struct tc_volume *v, const struct tc_io *io, bool instant)
{
	uint64_t cutoff = TC_SET(v, seq_cutoff);
	if ((io->op != TC_OP_READ && io->op != TC_OP_WRITE) || !cutoff ||
	    !tc_seq_check(&v->seq, io->offset, io->length, cutoff) || instant)
		return false;
	/* bcache's rule (should_writeback in drivers/md/bcache/writeback.h): a stream's
	 * write into a stripe of a parity backing that holds dirty data in the cache
	 * stays in the cache, where it helps that stripe go out whole, instead of costing
	 * the array a partial-stripe update now and another when the rest is cleaned.  A
	 * write of whole stripes goes around (nothing of those stripes is left to
	 * complete). */
	uint64_t st = v->stripe;
	if (io->op == TC_OP_WRITE && v->dirty_ix.group_units &&
	    (tc_stripe_pos(v, io->offset) % st || io->length % st)) {
		unsigned shift = v->cache->line_shift;
		uint32_t first = (uint32_t)(io->offset >> shift);
		uint32_t last = (uint32_t)((io->offset + io->length - 1) >> shift);
		if (tc_dirty_any(&v->dirty_ix, first, last)) {
			tc_stat_add(v, ST_SEQ_DIRTY_STRIPE, 1);
			return false;
		}
	}
	tc_stat_add(v, ST_BYPASS_SEQ, 1);
	/* Writes go around the cache whole; reads only where they miss (admit_fill). */
	if (io->op == TC_OP_WRITE)
		tc_stat_add(v, ST_BYPASS_BYTES, io->length);
	return true;
}

/*
 * The service-rate rule: a stream of whole-stripe writes goes where it completes
 * faster.  Instant write-back lands it in the cache at the cache device's rate; sent
 * whole to the backing, a parity array writes it as full stripes at its own rate.
 * On SATA SSDs in RAID 1 (520 MB/s) in front of a RAID 6 of six HDDs (~800 MB/s of
 * full stripes), the array is the faster: the reviews' instant write-back fell to
 * the SSDs' speed there.  So both rates are measured as the volume runs (bytes/s of
 * the whole-stripe requests completed on each path, tc_volume.srate), and a
 * whole-stripe write that instant write-back would take goes to the backing while
 * the cache's rate is below the backing's.  Our own rule; bcache's congestion
 * tracking (sending I/O around a cache device whose latency is over a threshold) is
 * the nearest known kin.
 *
 * How the rates are kept (tc-bench-instwb's per-path timing showed each of these
 * costing the stream):
 *   - a request that switches path (the first on a path, or the first after the other
 *     path's requests) is not sampled: on the array it pays the seek and rotation to
 *     where the stream now is (6 to 20 ms against 2 ms for the next ones, the emulated
 *     HDDs' positioning time; a real disk's too), and on a fresh device its first
 *     request pays for waking threads and allocating the file (15 ms).  Sampled, one
 *     such request as the rate's starting value kept the faster path looking the
 *     slower for the whole of a 32 MiB stream;
 *   - the other path is measured in bursts of TC_SRATE_BURST consecutive requests
 *     (the first of each not sampled, as above), and a warm-up keeps the volume's
 *     first requests in the cache (its first request goes there: nothing is measured
 *     yet) until a burst is complete, then sends a burst to the backing: a probe of
 *     one request measured only the switch.  Cache first, because the very first
 *     request is there already: where the backing is the faster, the stream then
 *     moves to the array once and stays, paying the one positioning any writer of the
 *     array pays at the start of a stream; backing first cost a second positioning
 *     and one more request in the cache;
 *   - probes back off: the first comes TC_SRATE_PERIOD decisions after the rates
 *     last changed which path they favour, and each probe that leaves the favoured
 *     path as it was doubles the distance to the next, up to TC_SRATE_PERIOD_MAX.  A
 *     probe of a disk array costs its burst at the slower rate plus a positioning of
 *     the array when the stream comes back (6 to 20 ms on the emulated HDDs, 4 to 13
 *     requests' worth): every 64 decisions that was about 10 % of a stream, every
 *     1024 under 1 %.  What the backoff delays is only the discovery that the path
 *     not taken got faster; the favoured path is sampled on every request, so its
 *     slowing down (a degraded array, a rebuild) turns the choice at once, and that
 *     change brings the probes back to every 64 decisions;
 *   - the k-th sample kept weighs 1/k up to 1/8 (a mean, then an EWMA of weight 1/8),
 *     a probe's 1/2: at 1/8 a probed path needed 8 bursts to follow a change.
 * No rate is known on devices without a clock (the memory backend): then nothing
 * changes.
 */
#define TC_SRATE_PERIOD 64u
#define TC_SRATE_PERIOD_MAX 1024u
#define TC_SRATE_BURST 3u

void tc_plan_srate_sample(struct tc_volume *v, const struct tc_req *r, uint64_t len,
			  uint64_t ns)
{
	unsigned path = r->stripe_path;
	if (!ns || path == TC_SRATE_NONE)
		return;
	if (r->stripe_switch) {
		atomic_fetch_add(&v->srate_n[path - 1], 1);   /* measured nothing */
		return;
	}
	unsigned k = atomic_fetch_add(&v->srate_kept[path - 1], 1) + 1;
	atomic_fetch_add(&v->srate_n[path - 1], 1);
	uint64_t w = k < 8 ? k : 8;
	if (r->stripe_probe && w > 2)
		w = 2;
	_Atomic uint64_t *rate = &v->srate[path - 1];
	uint64_t sample = len * 1000000000ull / ns, old = atomic_load(rate);
	atomic_store(rate, old && w > 1 ? old - old / w + sample / w : sample);
}

unsigned tc_plan_stream_path(struct tc_volume *v, bool *probe)
{
	*probe = false;
	if (!atomic_load(&v->srate_n[0]))
		return TC_SRATE_CACHE;   /* no clock, or the very first request */
	unsigned n = atomic_fetch_add(&v->srate_tick, 1);
	if (n < 2 * TC_SRATE_BURST - 1) {
		/* The warm-up: with the very first request, a burst into the cache, then
		 * one to the backing. */
		*probe = true;
		return n < TC_SRATE_BURST - 1 ? TC_SRATE_CACHE : TC_SRATE_BACKING;
	}
	uint64_t cr = atomic_load(&v->srate[0]), br = atomic_load(&v->srate[1]);
	if (!cr && !br)
		return TC_SRATE_CACHE;   /* neither measured (no clock): nothing changes */
	unsigned fav = br && (!cr || cr < br) ? TC_SRATE_BACKING : TC_SRATE_CACHE;
	unsigned at = atomic_load(&v->srate_probe_at);
	if (atomic_exchange(&v->srate_fav, (uint8_t)fav) != fav) {
		/* The rates changed their mind (or this is the first choice): probe soon. */
		atomic_store(&v->srate_period, TC_SRATE_PERIOD);
		at = n + TC_SRATE_PERIOD;
		atomic_store(&v->srate_probe_at, at);
	} else if ((int)(n - at) >= (int)TC_SRATE_BURST) {
		/* A burst is over and the choice held: the next one twice as far. */
		unsigned p = atomic_load(&v->srate_period);
		p = p < TC_SRATE_PERIOD ? TC_SRATE_PERIOD :
		    p >= TC_SRATE_PERIOD_MAX / 2 ? TC_SRATE_PERIOD_MAX : 2 * p;
		if (atomic_compare_exchange_strong(&v->srate_probe_at, &at, n + p)) {
			atomic_store(&v->srate_period, p);
			at = n + p;
		}
	}
	*probe = n - at < TC_SRATE_BURST;
	return (fav == TC_SRATE_BACKING) != *probe ? TC_SRATE_BACKING : TC_SRATE_CACHE;
}

/*
 * Instant write-back (maxCache's rule, as the reviews of SSD-caching controllers
 * describe it): a write covering whole aligned full stripes of the backing is made
 * dirty at once, even where the sequential detector would send it around, as long as
 * write-back is not held (protect.c), the cleaner is not under pressure and the
 * cache's dirty lines are below its dirty_low_pct (default 40 %: bcache's cut-off up
 * to which write-back is accepted freely).  Above it such writes are treated as in wb,
 * so a long stream cannot fill the cache with dirty data faster than it drains.  And
 * the service-rate rule above may send it to the backing instead.
 */
void tc_plan_instant(struct tc_req *r, const struct tc_io *io)
{
	struct tc_volume *v = r->vol;
	struct tc_cache *c = v->cache;
	uint64_t st = v->stripe;
	r->instant_lo = r->instant_hi = 0;
	if (io->op != TC_OP_WRITE || !st ||
	    __atomic_load_n(&v->set.write_policy, __ATOMIC_ACQUIRE) != TC_WP_INSTWB)
		return;
	/* The whole stripes of the backing's grid (tc_stripe_pos) inside the write. */
	uint64_t lo = (tc_stripe_pos(v, io->offset) + st - 1) / st * st;
	uint64_t hi = tc_stripe_pos(v, io->offset + io->length) / st * st;
	if (lo >= hi)
		return;
	lo -= v->stripe_skew;
	hi -= v->stripe_skew;
	if (atomic_load(&c->failed) || atomic_load(&c->wb_hold) ||
	    atomic_load(&c->pressure) || atomic_load(&v->draining) ||
	    atomic_load(&c->dirty_lines) * 100 >= (uint64_t)c->sb.dirty_low_pct * c->nslots)
		return;
	if (lo == io->offset && hi == io->offset + io->length) {
		unsigned path = tc_plan_stream_path(v, &r->stripe_probe);
		r->stripe_switch = atomic_exchange(&v->srate_last, (uint8_t)path) != path;
		if (path == TC_SRATE_BACKING)
			return;
		r->stripe_path = TC_SRATE_CACHE;
	}
	r->instant_lo = lo;
	r->instant_hi = hi;
	tc_stat_add(v, ST_INSTANT_BYTES, hi - lo);
}

/* Whether sub-request @s lies wholly in its request's instant range. */
static bool sub_instant(const struct tc_sub *s)
{
	uint64_t a = ((uint64_t)s->line_no << s->c->line_shift) + s->off;
	return s->req->instant_lo < s->req->instant_hi && a >= s->req->instant_lo &&
	       a + s->len <= s->req->instant_hi;
}

/* The write policy of line @line of @v now: its range's own (region.c), else the
 * volume's; *@kind (may be NULL) the range's kind. */
static uint8_t line_policy(struct tc_volume *v, uint32_t line, unsigned *kind)
{
	uint8_t wp = __atomic_load_n(&v->set.write_policy, __ATOMIC_ACQUIRE), rwp;
	unsigned k = tc_region_of(v, line, &rwp);
	if (kind)
		*kind = k;
	return k == TC_REGION_POLICY ? rwp : wp;
}

static uint8_t effective_route(struct tc_sub *s)
{
	struct tc_volume *v = s->vol;
	if (atomic_load(&s->c->failed))
		return ROUTE_PT;
	/* A range's own attribute (region.c): uncacheable goes around the cache, a
	 * range with its own write policy follows it. */
	unsigned kind;
	uint8_t wp = line_policy(v, s->line_no, &kind);
	if (kind == TC_REGION_UNCACHEABLE)
		return ROUTE_PT;
	bool instant = wp == TC_WP_INSTWB && sub_instant(s);
	if (s->req->seq_bypass && wp != TC_WP_PT && !instant)
		return ROUTE_PT;
	/* Write-back held (the cache device degraded, or has no redundancy and no
	 * override): write-through until it is protected again (invariant 4). */
	if (tc_write_policy_is_wb(wp) && atomic_load(&s->c->wb_hold))
		return ROUTE_WT;
	switch (wp) {
	case TC_WP_WB:
	case TC_WP_INSTWB:
		/* Announce the write-back write before looking at draining; a drain raises
		 * draining before reading wb_inflight, so one of the two sees the other.
		 * The policy is read again after draining: a drain that ran between the
		 * first read and the announcement (it saw no write in flight), then the new
		 * policy and draining lowered, would otherwise let this write go dirty under
		 * a policy that is no longer write-back (test_cache_threaded under TSan:
		 * 16 KiB dirty right after a switch to wa).  The setter publishes the
		 * policy before lowering draining, so seeing it lowered shows the policy. */
		atomic_fetch_add(&v->wb_inflight, 1);
		if (!atomic_load(&v->draining) && !tc_range_flushing(v, s->line_no) &&
		    tc_write_policy_is_wb(line_policy(v, s->line_no, NULL)))
			return ROUTE_WB;
		atomic_fetch_sub(&v->wb_inflight, 1);
		return ROUTE_WT;
	case TC_WP_WT:
		return ROUTE_WT;
	case TC_WP_WA:
		return ROUTE_WA;
	default:
		return ROUTE_PT;
	}
}

/* Drop the shard lock, allocate a slot for the line, retake the lock and install it. */
static void plan_alloc(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	pthread_mutex_unlock(&s->shard->lock);
	uint32_t slot = tc_slot_alloc(c, s->vol->id, s->line_no);
	pthread_mutex_lock(&s->shard->lock);
	if (slot == TC_SLOT_NONE)
		return;
	tc_map_insert(c, slot);
	s->slot = slot;
	tc_stat_add(s->vol, ST_PROMOTIONS, 1);
}

static bool admit_fill(struct tc_sub *s)
{
	struct tc_volume *v = s->vol;
	uint8_t rwp = 0;
	unsigned region = tc_region_of(v, s->line_no, &rwp);
	uint8_t wp = region == TC_REGION_POLICY ? rwp : TC_SET(v, write_policy);
	if (!TC_SET(v, read_cache) || wp == TC_WP_PT || region == TC_REGION_UNCACHEABLE ||
	    atomic_load(&s->c->failed) || s->c->readonly)
		return false;   /* a read-only cache (inspection) is never filled */
	/* A pinned line is wanted in the cache whatever the stream or its history. */
	if (region == TC_REGION_PINNED)
		return true;
	if (s->req->seq_bypass) {
		tc_stat_add(v, ST_BYPASS_BYTES, s->len);
		return false;
	}
	if (TC_SET(v, admission) == TC_ADMIT_NHIT &&
	    tc_admit_access(&s->c->admit, s->key) < TC_SET(v, nhit)) {
		tc_stat_add(v, ST_BYPASS_ADMIT, 1);
		return false;
	}
	return true;
}

void tc_plan_read(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	uint16_t valid = s->slot != TC_SLOT_NONE ? c->lines[s->slot].valid : 0;
	/* A resident line is referenced, hit or partial: the policy hears of it. */
	s->repl_hit = s->slot != TC_SLOT_NONE;
	/* A failed cache device is trusted with nothing the backing holds as well: clean
	 * units come from the backing, dirty ones (the only copy) from the slot. */
	if (valid && atomic_load(&c->failed))
		valid &= c->lines[s->slot].dirty;

	if ((s->touched & ~valid) == 0) {
		tc_stat_add(s->vol, ST_READ_HITS, 1);
		s->from_cache = s->touched;
		s->step = STEP_HIT_READ;
		return;
	}
	if (!s->hold.excl) {
		s->hold.want_excl = true;
		s->step = STEP_UPGRADE;
		return;
	}
	tc_stat_add(s->vol, (s->touched & valid) ? ST_READ_PARTIAL : ST_READ_MISSES, 1);
	atomic_store_explicit(&s->req->missed, true, memory_order_relaxed);
	s->fill = 0;
	if (admit_fill(s)) {
		if (s->slot == TC_SLOT_NONE)
			plan_alloc(s);
		if (s->slot != TC_SLOT_NONE) {
			valid = c->lines[s->slot].valid;
			uint16_t want = TC_SET(s->vol, fill) == TC_FILL_LINE ?
				(uint16_t)c->unit_mask_all : s->touched;
			s->fill = want & (uint16_t)~valid;
		}
	}
	uint16_t need = (uint16_t)((s->touched & ~valid) | s->fill);
	s->bspan_lo = (uint32_t)__builtin_ctz(need);
	s->bspan_hi = 32u - (uint32_t)__builtin_clz(need);
	s->from_cache = s->touched & valid;
	s->step = STEP_MISS_BACKING_READ;
}

void tc_plan_write(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	s->route = effective_route(s);
	bool resident = s->slot != TC_SLOT_NONE;
	uint16_t partial = s->touched & (uint16_t)~s->full;
	uint16_t valid = s->slot != TC_SLOT_NONE ? c->lines[s->slot].valid : 0;
	uint16_t dirty = s->slot != TC_SLOT_NONE ? c->lines[s->slot].dirty : 0;

	/* Pass-through drops the cached units it overwrites.  Where the line is dirty, or
	 * clean in memory but still dirty in the committed metadata (cleaned since the
	 * last commit), recovery after a crash would trust the slot copy: update it
	 * instead of dropping it (write-around), so that it holds the new data too. */
	bool disk_dirty = s->slot != TC_SLOT_NONE && (valid & s->touched) &&
			  (tc_line_flags_load(&c->lines[s->slot]) & TC_LINE_DISK_DIRTY);
	if (s->route == ROUTE_PT && ((dirty & s->touched) || disk_dirty))
		s->route = ROUTE_WA;
	bool hit = (s->touched & ~valid) == 0;
	tc_stat_add(s->vol, hit ? ST_WRITE_HITS : (s->touched & valid) ? ST_WRITE_PARTIAL :
		    ST_WRITE_MISSES, 1);
	if (!hit)
		atomic_store_explicit(&s->req->missed, true, memory_order_relaxed);

	if (s->route == ROUTE_WB) {
		if (s->slot == TC_SLOT_NONE)
			plan_alloc(s);
		if (s->slot == TC_SLOT_NONE) {
			s->route = ROUTE_WA;   /* nothing evictable: write around this time */
			atomic_fetch_sub(&s->vol->wb_inflight, 1);
		} else {
			valid = c->lines[s->slot].valid;
			s->rmw_cache = partial & valid;
			s->rmw_backing = partial & (uint16_t)~valid;
			s->cache_write = s->touched;
			s->backing_write = false;
			s->repl_hit = resident;
			s->step = STEP_WRITE_RMW_READS;
			return;
		}
	}
	if (s->route == ROUTE_WT && s->slot == TC_SLOT_NONE && !s->req->seq_bypass)
		plan_alloc(s);
	s->backing_write = true;
	s->rmw_backing = 0;
	if (s->route == ROUTE_PT || s->slot == TC_SLOT_NONE) {
		s->cache_write = 0;
		s->rmw_cache = 0;
	} else {
		valid = c->lines[s->slot].valid;
		s->rmw_cache = partial & valid;
		s->cache_write = s->touched & (uint16_t)~(partial & ~valid);
	}
	/* A write into a resident line is a hit for the replacement policy, as a read is;
	 * pass-through, which only drops cached units, is not. */
	s->repl_hit = resident && s->cache_write;
	s->step = STEP_WRITE_RMW_READS;
}

void tc_plan_discard(struct tc_sub *s)
{
	struct tc_cache *c = s->c;
	if (s->slot != TC_SLOT_NONE) {
		/* Clean units touched go: the backing zeroes the discarded sectors, and a
		 * clean copy must never differ from the backing (it would be trusted
		 * after a clean restart, then dropped after a crash: old data first,
		 * zeros later).  Dirty units stay: dropping them would let the backing's
		 * older copy come back if the crash lands before the backing's discard
		 * is durable; kept, their writeback restores the backing's copy, and
		 * "old data" is what a discard allows. */
		struct tc_line *l = &c->lines[s->slot];
		uint16_t inval = s->touched & (uint16_t)~l->dirty;
		if (l->valid & inval)
			tc_line_set_bits(c, s->slot, l->valid & (uint16_t)~inval, l->dirty);
	}
	s->hold.inf->gen++;
	s->step = STEP_DISCARD;
}
