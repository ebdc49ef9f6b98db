/* SPDX-License-Identifier: MIT */
/*
 * protect.c - write-back only on a protected cache (architecture invariant 4).
 *
 * A volume may run write-back (wb, instwb) only on a cache whose device survives a
 * failure (tc_dev_limits redundancy >= 1), unless the cache superblock carries the
 * override (enum tc_wb_guard).  Turning write-back on is refused otherwise
 * (tc_protect_check, from attach and set).  While the device is degraded, or has no
 * redundancy and no override, write-back is held: the cache-wide hold (c->wb_hold)
 * sends every write-back write through (plan.c) and lets the cleaner write the dirty
 * data back flat out (cleaner.c); the stored policy never changes, and when the device
 * is redundant again the hold ends and the volumes return to it.  This is what the
 * controllers do when their cache loses its protection (MegaRAID's write-back with BBU
 * falling back to write-through, Linux md's r5c journal leaving write-back when its
 * array degrades).
 *
 * The device's watcher (cache.c) calls tc_protect_event() on a completion thread: it
 * only flips the hold (one atomic store, so the next write planned already goes
 * through) and queues the rest (the log lines, the cleaner's kick) to the context.
 *
 * A rising error rate holds write-back too, before any member fails (the error-rate
 * rule, tc_protect_tick): a member of an array cache device with TC_ERR_HOLD (10) read
 * errors in the last 60 s makes the cache count as degraded.  A failed read of a
 * member is corrected by the array (rewritten from the other copy or the parity, md's
 * read-error correction) and the member is kept: md fails it only past
 * max_corrected_read_errors (20, a count that md halves for every hour that passes),
 * the controllers likewise keep a member with media errors until a threshold.  Such
 * a member is on its way out, and while the array corrects its reads the dirty data
 * it holds is only as safe as the other copy.  So the hold starts at half md's limit,
 * counted over a minute (a burst, not an hour's slow trickle, which md's own limit
 * and a scrub are for): the dirty data is written back while the member still
 * serves, not after md has failed it.  The hold ends when every member has had at
 * most TC_ERR_CLEAR (2) errors in the last 60 s: the hysteresis keeps a member at the
 * threshold from turning write-back on and off.  Sampled once a second from the
 * cache's timer, in buckets of 10 s (the window is 50 to 60 s long).  Our own rule;
 * the figures are md's (drivers/md/md.c, max_corrected_read_errors).  Only arrays
 * count their members' errors (tc_array_status); other devices fail whole.
 */
#include <errno.h>
#include <string.h>
#include "cache_priv.h"

_Static_assert(TC_ERR_BUCKETS == sizeof(((struct tc_cache *)0)->err_snap) /
	       sizeof(((struct tc_cache *)0)->err_snap[0]), "err_snap holds the buckets");

/* Whether write-back may run on @c's device as it is now. */
static bool wb_allowed(struct tc_cache *c, uint8_t redundancy)
{
	return atomic_load(&c->wb_guard) != TC_WB_GUARD_PROTECTED || redundancy >= 1;
}

static uint8_t dev_redundancy(struct tc_cache *c)
{
	struct tc_dev_limits l;
	tc_dev_limits(c->dev, &l);
	return l.redundancy;
}

const char *tc_protect_reason(struct tc_cache *c)
{
	if (atomic_load(&c->failed))
		return "cache failed";
	switch (atomic_load(&c->wb_hold)) {
	case TC_HOLD_DEGRADED:
		return "cache degraded";
	case TC_HOLD_UNPROTECTED:
		return "cache not redundant";
	case TC_HOLD_ERRORS:
		return "cache member errors";
	default:
		return "";
	}
}

unsigned tc_protect_effective(struct tc_volume *v)
{
	unsigned wp = TC_SET(v, write_policy);
	if (atomic_load(&v->cache->failed))
		return TC_WP_PT;
	if (tc_write_policy_is_wb(wp) && atomic_load(&v->cache->wb_hold))
		return TC_WP_WT;
	return wp;
}

bool tc_protect_unprotected(struct tc_cache *c)
{
	return atomic_load(&c->wb_guard) != TC_WB_GUARD_PROTECTED && dev_redundancy(c) == 0;
}

int tc_protect_check(struct tc_cache *c, const char *vol, unsigned wp)
{
	if (!tc_write_policy_is_wb(wp))
		return 0;
	uint8_t red = dev_redundancy(c);
	if (wb_allowed(c, red))
		return 0;
	tc_err(c->ctx, "volume \"%s\": write policy %s refused: cache %s has redundancy %u "
	       "(it survives no device failure), and write-back needs a redundant cache; "
	       "use wt, put the cache on a mirror (RAID 1, 10 or 5), or format it with "
	       "--unprotected-writeback to accept losing dirty data with the device",
	       vol, tc_write_policy_name(wp), c->dev->name, red);
	return -EPERM;
}

/* The queued half of a change: say what it means for each volume, and get the dirty
 * data of held volumes written back now. */
static void protect_work_fn(struct tc_work *w)
{
	struct tc_cache *c = (struct tc_cache *)((char *)w -
						 offsetof(struct tc_cache, protect_work));
	uint8_t hold = atomic_load(&c->wb_hold);
	uint8_t was = c->hold_logged;
	c->hold_logged = hold;
	if (hold != was && !c->closing) {
		pthread_mutex_lock(&c->mgmt_lock);
		for (unsigned i = 1; i <= TC_MAX_VOLUMES; i++) {
			struct tc_volume *v = c->vols[i];
			if (!v || !tc_write_policy_is_wb(TC_SET(v, write_policy)))
				continue;
			if (hold == TC_HOLD_ERRORS)
				tc_warn(c->ctx, "volume \"%s\": write-back held, writes go through "
					"(cache member errors: %s member %u had %llu read errors "
					"in %llu s, the threshold is %u); %llu dirty bytes being "
					"written back", v->name, c->dev->name,
					atomic_load(&c->err_member),
					(unsigned long long)atomic_load(&c->err_count),
					(unsigned long long)(TC_ERR_WINDOW_NS / 1000000000ull),
					TC_ERR_HOLD,
					(unsigned long long)(atomic_load(&v->dirty_units) *
							     TC_UNIT_SIZE));
			else if (hold)
				tc_warn(c->ctx, "volume \"%s\": write-back held, writes go through "
					"(%s %s); %llu dirty bytes being written back",
					v->name, tc_protect_reason(c), c->dev->name,
					(unsigned long long)(atomic_load(&v->dirty_units) *
							     TC_UNIT_SIZE));
			else if (was == TC_HOLD_ERRORS)
				tc_info(c->ctx, "volume \"%s\": cache %s: no member had more than "
					"%u read errors in the last %llu s; back to write policy "
					"%s", v->name, c->dev->name, TC_ERR_CLEAR,
					(unsigned long long)(TC_ERR_WINDOW_NS / 1000000000ull),
					tc_write_policy_name(TC_SET(v, write_policy)));
			else
				tc_info(c->ctx, "volume \"%s\": cache %s is redundant again; back to "
					"write policy %s", v->name, c->dev->name,
					tc_write_policy_name(TC_SET(v, write_policy)));
		}
		pthread_mutex_unlock(&c->mgmt_lock);
	}
	if (hold)
		tc_cleaner_kick(c);
	/* Cleared last: close waits for it (tc_mngt_wait_idle).  A change that came
	 * meanwhile is already in force (the hold is one store); its log lines follow at
	 * the next change or open. */
	atomic_store(&c->protect_queued, false);
}

static void protect_queue(struct tc_cache *c)
{
	if (atomic_exchange(&c->protect_queued, true))
		return;
	c->protect_work.fn = protect_work_fn;
	tc_ctx_defer(c->ctx, &c->protect_work);
}

void tc_protect_event(struct tc_cache *c, enum tc_dev_event ev)
{
	uint8_t red = dev_redundancy(c);
	switch (ev) {
	case TC_DEV_DEGRADED:
		/* The override means "write back whatever the device survives". */
		if (atomic_load(&c->wb_guard) != TC_WB_GUARD_PROTECTED)
			return;
		atomic_store(&c->wb_hold, TC_HOLD_DEGRADED);
		break;
	case TC_DEV_REDUNDANT: {
		uint8_t was = atomic_load(&c->wb_hold);
		if (!wb_allowed(c, red) || was == TC_HOLD_NONE || was == TC_HOLD_ERRORS)
			return;
		/* Whole again, but a member's error rate may still hold write-back. */
		atomic_store(&c->wb_hold, atomic_load(&c->err_hold) ? TC_HOLD_ERRORS :
			     TC_HOLD_NONE);
		break;
	}
	default:
		return;   /* TC_DEV_FAILED: the pass-through fallback (cache.c) */
	}
	if (!c->closing)
		protect_queue(c);
}

/* Read errors of each member now, into @cnt (TC_ARRAY_MAX_MEMBERS entries); false
 * when the device cannot tell. */
static bool member_errors(struct tc_cache *c, uint64_t *cnt)
{
	struct tc_array_status st;
	if (!c->err_array || tc_array_status(c->dev, &st))
		return false;
	for (unsigned i = 0; i < TC_ARRAY_MAX_MEMBERS; i++)
		cnt[i] = i < st.members ? st.member[i].read_errors : 0;
	return true;
}

void tc_protect_tick(struct tc_cache *c, uint64_t now)
{
	uint64_t cnt[TC_ARRAY_MAX_MEMBERS];
	if (!c->err_array || now < c->err_next_ns || c->closing || c->readonly)
		return;
	c->err_next_ns = now + 1000000000ull;
	if (!member_errors(c, cnt))
		return;
	/* A new bucket: its start replaces the oldest snapshot. */
	while (now >= c->err_bucket_ns + TC_ERR_BUCKET_NS) {
		memcpy(c->err_snap[c->err_pos], cnt, sizeof(cnt));
		c->err_pos = (c->err_pos + 1) % TC_ERR_BUCKETS;
		c->err_bucket_ns += TC_ERR_BUCKET_NS;
		if (now >= c->err_bucket_ns + TC_ERR_WINDOW_NS)
			c->err_bucket_ns = now - now % TC_ERR_BUCKET_NS;   /* long idle */
	}
	uint64_t worst = 0;
	unsigned who = 0;
	for (unsigned i = 0; i < TC_ARRAY_MAX_MEMBERS; i++) {
		uint64_t old = c->err_snap[c->err_pos][i];
		uint64_t n = cnt[i] >= old ? cnt[i] - old : 0;   /* a replaced member restarts */
		if (n > worst) {
			worst = n;
			who = i;
		}
	}
	bool held = atomic_load(&c->err_hold);
	if (!held && worst >= TC_ERR_HOLD) {
		atomic_store(&c->err_member, who);
		atomic_store(&c->err_count, worst);
		atomic_store(&c->err_hold, true);
		uint8_t none = TC_HOLD_NONE;
		/* The override means write-back whatever the device does; a degrade or no
		 * redundancy already holds. */
		if (atomic_load(&c->wb_guard) == TC_WB_GUARD_PROTECTED &&
		    atomic_compare_exchange_strong(&c->wb_hold, &none, TC_HOLD_ERRORS))
			protect_queue(c);
	} else if (held && worst <= TC_ERR_CLEAR) {
		atomic_store(&c->err_hold, false);
		uint8_t errs = TC_HOLD_ERRORS;
		if (atomic_compare_exchange_strong(&c->wb_hold, &errs, TC_HOLD_NONE))
			protect_queue(c);
	}
}

void tc_protect_init(struct tc_cache *c)
{
	c->err_array = strcmp(c->dev->ops->name, "array") == 0;
	uint64_t now = tc_ctx_now(c->ctx);
	c->err_next_ns = now;
	c->err_bucket_ns = now;
	c->err_pos = 0;
	atomic_store(&c->err_hold, false);
	uint64_t cnt[TC_ARRAY_MAX_MEMBERS] = { 0 };
	member_errors(c, cnt);
	for (unsigned b = 0; b < TC_ERR_BUCKETS; b++)
		memcpy(c->err_snap[b], cnt, sizeof(cnt));
	atomic_store(&c->wb_guard, c->sb.wb_guard);
	uint8_t hold = wb_allowed(c, dev_redundancy(c)) ? TC_HOLD_NONE : TC_HOLD_UNPROTECTED;
	atomic_store(&c->wb_hold, hold);
	c->hold_logged = hold;
}

int tc_cache_set_unprotected_writeback(tc_cache *c, bool allow)
{
	int r = 0;
	pthread_mutex_lock(&c->sb_lock);
	uint8_t old = c->sb.wb_guard;
	uint8_t want = allow ? TC_WB_GUARD_OVERRIDE : TC_WB_GUARD_PROTECTED;
	if (old == want)
		goto out;
	if (!allow && dev_redundancy(c) == 0) {
		/* A failed command changes nothing: refuse while write-back runs on it. */
		pthread_mutex_lock(&c->mgmt_lock);
		for (unsigned i = 1; i <= TC_MAX_VOLUMES && !r; i++) {
			struct tc_volume *v = c->vols[i];
			if (v && tc_write_policy_is_wb(TC_SET(v, write_policy))) {
				tc_err(c->ctx, "cache %s: cannot require a redundant cache for "
				       "write-back: volume \"%s\" runs %s on it and the device has "
				       "redundancy 0; set that volume to wt first", c->dev->name,
				       v->name, tc_write_policy_name(TC_SET(v, write_policy)));
				r = -EBUSY;
			}
		}
		pthread_mutex_unlock(&c->mgmt_lock);
		if (r)
			goto out;
	}
	c->sb.wb_guard = want;
	r = tc_cache_sb_write(c);
	if (r) {
		c->sb.wb_guard = old;
		goto out;
	}
	atomic_store(&c->wb_guard, want);
	/* The override is write-back whatever the device survives: no hold at all. */
	if (allow)
		atomic_store(&c->wb_hold, TC_HOLD_NONE);
	else if (!allow && dev_redundancy(c) == 0)
		atomic_store(&c->wb_hold, TC_HOLD_UNPROTECTED);
	tc_info(c->ctx, "cache %s: write-back %s", c->dev->name, allow ?
		"allowed without redundancy (unprotected: dirty data is lost with the device)" :
		"needs a redundant cache device");
out:
	pthread_mutex_unlock(&c->sb_lock);
	return r;
}
