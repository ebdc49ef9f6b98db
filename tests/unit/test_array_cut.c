/* SPDX-License-Identifier: MIT */
/*
 * test_array_cut.c - a power cut at every device request of the array management
 * operations (src/raid/sb.c, rebuild.c): create (over an old array), add-spare,
 * replace (its start, every window and checkpoint of the copy, its completion), and a
 * member failure with a hot spare (the spare's takeover of the slot, the rebuild's
 * checkpoints, its end), the removal of a spare, a repair (md's "repair" sync
 * action) of a damaged parity chunk or copy, and the re-add of a member that left
 * while half the array was written again (its resync of those regions).  Each runs on crash devices behind the
 * cutter of cut_dev.h, which lets N requests through (counted over every device
 * together) and fails the later ones; the crash devices then keep a seed-chosen part of what was not flushed.
 * For N = 0, 1, 2, ... until the operation completes uncut, the files are
 * "rebooted": opened again, the devices holding a member superblock of the array
 * assembled (as the host groups them), and checked: the array assembles; it is in
 * the old state or the new one, named in the failure message; every sector written
 * and flushed before the operation reads back, whole and degraded (a member failed);
 * a rebuild or replace cut midway resumes or restarts at assembly and ends with the
 * new device in the slot and the data right.  RAID 1, RAID 5 and RAID 6, deterministic
 * contexts (the seed of a run is its N).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "dev.h"
#include "helpers.h"
#include "tiercache.h"
#include "tiercache-test.h"
#include "cut_dev.h"

#define CHUNK 4096u
#define DATA (32u * 1024u)                      /* array data per member, bytes */
#define MSIZE (TC_ARRAY_DATA_OFFSET + DATA)     /* member files, sparse */
#define NDEV CUT_FILES                   /* members and the spare / successor */
#define MAX_CUTS 3000

enum aop { OP_CREATE, OP_ADD_SPARE, OP_REPLACE, OP_TAKEOVER, OP_REMOVE_SPARE, OP_REPAIR,
	   OP_READD };

static const char *const op_names[] = { "create array (over an old array)", "add-spare",
	"replace (start, copy, completion)", "member failure: spare takeover and rebuild",
	"remove the spare", "repair (a check rewriting the mismatched parity or copy)",
	"re-add of a member that left (its resync)" };

struct fx {
	struct cut_files cf;     /* the device files, and as prepare() left them */
	struct t_log log;
	enum tc_raid_level_id level;
	unsigned n;             /* members; device n is the spare / the successor */
};

#define VICTIM 1u   /* the member replaced, or failed for the spare to take over */

static uint8_t pattern[2 * DATA];   /* the array's data (at most 2 data members) */
static uint8_t before[2 * DATA];    /* re-add: the data before the member left */

static uint64_t array_bytes(const struct fx *f)
{
	unsigned data = f->level == TC_RAID1 ? 1 : f->level == TC_RAID6 ? f->n - 2 : f->n - 1;
	return (uint64_t)data * DATA;
}

static tc_dev *open_file(tc_ctx *ctx, const char *path, unsigned flags)
{
	tc_dev *d;
	assert_int_equal(tc_dev_open_file(ctx, path, flags | TC_DEV_BUFFERED, MSIZE, &d), 0);
	return d;
}

/* For the repair: the redundancy of the first row damaged behind the array's back,
 * its data left alone: the last member's first chunk, P of row 0 (md's left-symmetric
 * rotation) on RAID 5 and 6, the second copy of chunk 0 on RAID 1.  The array then
 * still reads the pattern (RAID 5 and 6, whole: from the data chunks) and a check
 * counts one mismatch. */
static void damage_redundancy(struct fx *f, tc_ctx *ctx)
{
	unsigned victim = f->level == TC_RAID1 ? 1 : f->n - 1;
	tc_dev *d = open_file(ctx, f->cf.path[victim], 0);
	uint8_t *junk = aligned_alloc(4096, CHUNK);
	assert_non_null(junk);
	memset(junk, 0xa5, CHUNK);
	assert_int_equal(tc_dev_pwrite(d, junk, CHUNK, TC_ARRAY_DATA_OFFSET, 0), 0);
	assert_int_equal(tc_dev_flush(d), 0);
	tc_dev_close(d);
	free(junk);

	tc_dev *m[NDEV], *a;
	for (unsigned i = 0; i < f->n; i++)
		m[i] = open_file(ctx, f->cf.path[i], 0);
	assert_int_equal(tc_array_assemble(ctx, m, f->n, 0, &a), 0);
	if (f->level != TC_RAID1) {
		static uint8_t back[sizeof(pattern)];
		assert_int_equal(tc_dev_pread(a, back, array_bytes(f), 0), 0);
		assert_memory_equal(back, pattern, array_bytes(f));
	}
	assert_int_equal(tc_array_check(a, false), 0);
	assert_int_equal(tc_array_wait(a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.mismatches, 1);
	tc_dev_close(a);
}

/* Fresh files in the state before @op: for create, an old array "old" over the
 * members holding the pattern; else the array "a" holding it (flushed, closed clean),
 * with a hot spare on device n for the takeover.  Device n is blank otherwise. */
static void prepare(struct fx *f, enum aop op)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, 1, TC_LOG_ERROR, &f->log);
	tc_dev *m[NDEV], *a;
	/* A re-add needs the write-intent map (RAID 5 and 6 would take the log). */
	struct tc_array_opts o = { .level = f->level, .chunk = CHUNK,
				   .consistency = op == OP_READD ? TC_CONSISTENCY_BITMAP
				   : TC_CONSISTENCY_DEFAULT };

	for (unsigned i = 0; i <= f->n; i++) {
		unlink(f->cf.path[i]);
		m[i] = open_file(ctx, f->cf.path[i], TC_DEV_CREATE);
	}
	unsigned spares = op == OP_TAKEOVER || op == OP_REMOVE_SPARE ? 1 : 0;
	if (!spares)
		tc_dev_close(m[f->n]);
	assert_int_equal(tc_array_create(ctx, op == OP_CREATE ? "old" : "a", &o, m, f->n,
					 &m[f->n], spares, 0, &a), 0);
	uint64_t len = array_bytes(f);
	if (op == OP_READD) {
		/* The member leaves; the first half is written again while it is away (the
		 * pattern then), so it holds stale data there until its resync. */
		assert_int_equal(tc_dev_pwrite(a, before, len, 0, 0), 0);
		assert_int_equal(tc_dev_flush(a), 0);
		assert_int_equal(tc_array_fail_member(a, VICTIM), 0);
		assert_int_equal(tc_dev_pwrite(a, pattern, len / 2, 0, 0), 0);
	} else {
		assert_int_equal(tc_dev_pwrite(a, pattern, len, 0, 0), 0);
	}
	assert_int_equal(tc_dev_flush(a), 0);
	tc_dev_close(a);
	if (op == OP_REPAIR)
		damage_redundancy(f, ctx);
	tc_ctx_free(ctx);
}

/* The run's devices: crash devices over the files (seeds from @n), each behind a
 * cutter spending @b. */
struct run {
	tc_ctx *ctx;
	struct cut_budget b;
	tc_dev *crash[NDEV], *cut[NDEV];
};

static void run_open(struct fx *f, struct run *r, uint64_t n)
{
	memset(r, 0, sizeof(*r));
	r->ctx = t_ctx(TC_CTX_DETERMINISTIC, n + 1, TC_LOG_ERROR, &f->log);
	atomic_store(&r->b.limit, UINT64_MAX);
	for (unsigned i = 0; i <= f->n; i++) {
		assert_int_equal(tc_dev_new_crash(r->ctx, f->cf.path[i], 0, 0, n * NDEV + i + 1,
						  &r->crash[i]), 0);
		r->cut[i] = cut_new(r->ctx, r->crash[i], &r->b);
	}
}

/* The power fails: nothing more reaches the files, each crash device keeps its
 * seed's choice of what was not flushed; then @a (owning the cutters: every
 * operation takes its devices over, also when it fails) is closed. */
static void run_cut_power(struct fx *f, struct run *r, tc_dev *a)
{
	atomic_store(&r->b.limit, 0);
	for (unsigned i = 0; i <= f->n; i++)
		assert_true(tc_crash_power_cut(r->crash[i]) >= 0);
	if (a)
		tc_dev_close(a);
	for (unsigned i = 0; i <= f->n; i++)
		tc_dev_close(r->crash[i]);
	tc_ctx_free(r->ctx);
}

static bool member_is(const struct tc_array_status *st, unsigned slot, const char *path)
{
	return st->member[slot].name && !strcmp(st->member[slot].name, path);
}

/* Run @op with the power cut after @n requests; true when it completed uncut. */
static bool run_cut(struct fx *f, enum aop op, uint64_t n)
{
	struct run r;
	tc_dev *a = NULL;
	bool done;
	struct tc_array_status st;

	run_open(f, &r, n);
	if (op == OP_CREATE) {
		struct tc_array_opts o = { .level = f->level, .chunk = CHUNK };
		cut_budget_start(&r.b, n);
		int ret = tc_array_create(r.ctx, "new", &o, r.cut, f->n, &r.cut[f->n], 1,
					  TC_ARRAY_FORCE, &a);
		done = cut_budget_done(&r.b, n) && ret == 0;
		if (ret)
			a = NULL;
		run_cut_power(f, &r, a);
		return done;
	}
	/* The array as a host starts it: assembled (the superblocks marked dirty), the
	 * rebuild at full speed on the virtual clock; durable before the cut. */
	char succ[320];
	snprintf(succ, sizeof(succ), "%s", r.cut[op == OP_READD ? VICTIM : f->n]->name);
	unsigned ndev = op == OP_TAKEOVER || op == OP_REMOVE_SPARE ? f->n + 1 : f->n;
	if (op == OP_READD) {
		/* Assembled without the member that left (recorded faulty); device n, the
		 * last one given, takes its place in the list, and no part. */
		tc_dev *given[NDEV];
		for (unsigned i = 0, k = 0; i < f->n; i++)
			if (i != VICTIM)
				given[k++] = r.cut[i];
		tc_dev_close(r.cut[f->n]);
		assert_int_equal(tc_array_assemble(r.ctx, given, f->n - 1, 0, &a), 0);
	} else {
		assert_int_equal(tc_array_assemble(r.ctx, r.cut, ndev, 0, &a), 0);
	}
	struct tc_array_rebuild_opts ro = { .max_rate = UINT64_MAX, .priority = 100 };
	assert_int_equal(tc_array_set_rebuild(a, &ro), 0);
	for (unsigned i = 0; i <= f->n; i++)
		assert_int_equal(tc_dev_flush(r.crash[i]), 0);
	cut_budget_start(&r.b, n);
	int ret = 0;
	switch (op) {
	case OP_ADD_SPARE:
		ret = tc_array_add_spare(a, r.cut[f->n]);
		break;
	case OP_REPLACE:
		ret = tc_array_replace(a, VICTIM, r.cut[f->n]);
		break;
	case OP_REMOVE_SPARE:
		ret = tc_array_remove(a, succ);
		break;
	case OP_REPAIR:
		tc_dev_close(r.cut[f->n]);   /* device n takes no part: its cutter goes */
		ret = tc_array_check(a, true);
		break;
	case OP_READD:
		ret = tc_array_re_add(a, r.cut[VICTIM]);
		break;
	case OP_TAKEOVER:
	default:
		ret = tc_array_fail_member(a, VICTIM);
		break;
	}
	if (ret == 0)
		ret = tc_array_wait(a);
	assert_int_equal(tc_array_status(a, &st), 0);
	done = cut_budget_done(&r.b, n) && ret == 0;
	if (done && op == OP_REPAIR)
		done = st.mismatches == 1;
	if (done && op != OP_ADD_SPARE && op != OP_REMOVE_SPARE && op != OP_REPAIR)
		done = st.member[VICTIM].state == TC_MEMBER_ACTIVE &&
		       member_is(&st, VICTIM, succ);
	run_cut_power(f, &r, a);
	return done;
}

/* Read the whole array and compare it with @want (NULL: zeros). */
static void check_data(struct fx *f, tc_dev *a, const uint8_t *want, uint64_t n,
		       enum aop op, const char *state, const char *when)
{
	uint64_t len = array_bytes(f);
	static uint8_t back[sizeof(pattern)], zeros[sizeof(pattern)];
	assert_int_equal(tc_dev_pread(a, back, len, 0), 0);
	if (!want)
		want = zeros;
	for (uint64_t s = 0; s < len; s += TC_SECTOR_SIZE)
		if (memcmp(back + s, want + s, TC_SECTOR_SIZE))
			fail_msg("%s, cut after %llu requests (%s): %s: sector at %llu reads "
				 "other data than %s", op_names[op], (unsigned long long)n, state,
				 when, (unsigned long long)s,
				 want == zeros ? "zeros (a new array)" : "was written and flushed");
}

/* Open the files again; put into @devs those holding a member superblock of the
 * array named @name (as the host groups them).  Returns their count; @which[k] is the
 * device index of devs[k]. */
static unsigned reopen(struct fx *f, tc_ctx *ctx, const char *name, tc_dev **devs,
		       unsigned *which)
{
	unsigned k = 0;
	for (unsigned i = 0; i <= f->n; i++) {
		tc_dev *d = open_file(ctx, f->cf.path[i], 0);
		struct tc_array_member_info mi;
		int r = tc_array_examine(ctx, d, &mi);
		if (r == 1 && !strcmp(mi.name, name)) {
			which[k] = i;
			devs[k++] = d;
		} else {
			tc_dev_close(d);
		}
	}
	return k;
}

/* Fail each slot in turn (within the redundancy: one at a time) and read: every
 * member's data agrees with the others'. */
static void check_degraded(struct fx *f, const uint8_t *want, uint64_t n, enum aop op,
			   const char *state, const char *name)
{
	for (unsigned slot = 0; slot < f->n; slot++) {
		tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, n + 100 + slot, TC_LOG_ERROR, &f->log);
		tc_dev *devs[NDEV], *a;
		unsigned which[NDEV];
		unsigned k = reopen(f, ctx, name, devs, which);
		assert_int_equal(tc_array_assemble(ctx, devs, k, TC_ARRAY_READONLY, &a), 0);
		struct tc_array_status st;
		assert_int_equal(tc_array_status(a, &st), 0);
		if (st.member[slot].state == TC_MEMBER_ACTIVE) {
			assert_true(tc_array_fail_member(a, slot) >= 0);
			char when[64];
			snprintf(when, sizeof(when), "slot %u failed", slot);
			check_data(f, a, want, n, op, state, when);
		}
		tc_dev_close(a);
		tc_ctx_free(ctx);
	}
}

/* The array "a" assembled after the cut from the devices holding its superblock (as
 * the host groups them); fails the test, naming @op and @n, when it does not. */
static tc_dev *assemble_after(struct fx *f, tc_ctx *ctx, enum aop op, uint64_t n)
{
	tc_dev *devs[NDEV], *a;
	unsigned which[NDEV];
	unsigned k = reopen(f, ctx, "a", devs, which);
	int r = tc_array_assemble(ctx, devs, k, 0, &a);
	/* A re-add cut before the member took its slot leaves a RAID 5 or 6 that stopped
	 * while open (dirty) with a member missing: refused unless forced, md's rule for
	 * any crash of a degraded parity array; the admin forces it (no write was in
	 * flight here: nothing is at risk). */
	if (r == -EUCLEAN && op == OP_READD) {
		k = reopen(f, ctx, "a", devs, which);
		r = tc_array_assemble(ctx, devs, k, TC_ARRAY_FORCE, &a);
	}
	if (r)
		fail_msg("%s, cut after %llu requests: the array does not assemble from its %u "
			 "devices (%d: %s)", op_names[op], (unsigned long long)n, k, r,
			 f->log.last);
	return a;
}

/* After a repair cut: the array assembles; old (the mismatch still there) or new
 * (repaired); the data chunks were never written (RAID 5/6 read the pattern at once);
 * the repair run again finds the one mismatch or none and leaves none, and the array
 * reads the pattern. */
static void check_repair(struct fx *f, tc_ctx *ctx, uint64_t n, bool done)
{
	struct tc_array_status st;
	tc_dev *a = assemble_after(f, ctx, OP_REPAIR, n);
	if (f->level != TC_RAID1)
		check_data(f, a, pattern, n, OP_REPAIR, "old or new", "at assembly");
	/* What an admin does after the restart, once the resync of an unclean shutdown
	 * (if any) ends: check, then repair what it found. */
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_check(a, false), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	const char *state = st.mismatches ? "old" : "new";
	if (st.mismatches > 1)
		fail_msg("%s, cut after %llu requests: a check after the restart finds %llu "
			 "mismatches, not the 1 damaged or none", op_names[OP_REPAIR],
			 (unsigned long long)n, (unsigned long long)st.mismatches);
	if (done && st.mismatches)
		fail_msg("%s completed uncut but a check after the restart finds the mismatch",
			 op_names[OP_REPAIR]);
	assert_int_equal(tc_array_check(a, true), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_check(a, false), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	if (st.mismatches)
		fail_msg("%s, cut after %llu requests (%s): repaired again after the restart, "
			 "a check still finds %llu mismatches", op_names[OP_REPAIR],
			 (unsigned long long)n, state, (unsigned long long)st.mismatches);
	check_data(f, a, pattern, n, OP_REPAIR, state, "repaired again");
	tc_dev_close(a);
}

/* After the cut: the devices assemble, old state or new, the data right. */
static void check_after(struct fx *f, enum aop op, uint64_t n, bool done)
{
	tc_ctx *ctx = t_ctx(TC_CTX_DETERMINISTIC, n + 1, TC_LOG_ERROR, &f->log);
	tc_dev *devs[NDEV], *a;
	unsigned which[NDEV];
	struct tc_array_status st;
	struct tc_array_identity id;

	if (op == OP_CREATE) {
		/* New: every device holds the new array's superblock; it assembles whole
		 * with its spare and reads zeros, also with any member failed.  Old: none
		 * does; the old array assembles (its data was being zeroed: not checked).
		 * Between: a create cut between devices; it is made again (--force). */
		unsigned k = reopen(f, ctx, "new", devs, which);
		const char *state = k == f->n + 1 ? "new" : k == 0 ? "old" : "partly created";
		if (done && k != f->n + 1)
			fail_msg("%s completed uncut but %u of %u devices hold its superblock",
				 op_names[op], k, f->n + 1);
		if (k == f->n + 1) {
			int r = tc_array_assemble(ctx, devs, k, 0, &a);
			if (r)
				fail_msg("%s, cut after %llu requests (new): does not assemble "
					 "(%d: %s)", op_names[op], (unsigned long long)n, r,
					 f->log.last);
			assert_int_equal(tc_array_status(a, &st), 0);
			assert_false(st.degraded);
			assert_int_equal(tc_array_identity(a, &id), 0);
			assert_int_equal(id.nspares, 1);
			check_data(f, a, NULL, n, op, state, "whole");
			tc_dev_close(a);
			check_degraded(f, NULL, n, op, state, "new");
		} else {
			for (unsigned i = 0; i < k; i++)
				tc_dev_close(devs[i]);
			if (k == 0) {
				k = reopen(f, ctx, "old", devs, which);
				int r = tc_array_assemble(ctx, devs, k, TC_ARRAY_READONLY, &a);
				if (r)
					fail_msg("%s, cut after %llu requests (old): the old array "
						 "does not assemble (%d: %s)", op_names[op],
						 (unsigned long long)n, r, f->log.last);
				tc_dev_close(a);
			}
			/* What the documentation says to do: create again, forced. */
			tc_dev *m[NDEV];
			for (unsigned i = 0; i <= f->n; i++)
				m[i] = open_file(ctx, f->cf.path[i], 0);
			struct tc_array_opts o = { .level = f->level, .chunk = CHUNK };
			assert_int_equal(tc_array_create(ctx, "new", &o, m, f->n, &m[f->n], 1,
							 TC_ARRAY_FORCE, &a), 0);
			check_data(f, a, NULL, n, op, state, "created again");
			tc_dev_close(a);
		}
		tc_ctx_free(ctx);
		return;
	}

	if (op == OP_REPAIR) {
		check_repair(f, ctx, n, done);
		tc_ctx_free(ctx);
		check_degraded(f, pattern, n, op, "repaired again", "a");
		return;
	}
	a = assemble_after(f, ctx, op, n);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(tc_array_identity(a, &id), 0);
	const char *succ = f->cf.path[f->n];
	const char *state;
	switch (op) {
	case OP_ADD_SPARE:
		/* Old: no spare (device n blank); new: device n a spare of the array. */
		state = id.nspares ? "new" : "old";
		if (done && !id.nspares)
			fail_msg("%s completed uncut but the spare is not the array's after a "
				 "restart", op_names[op]);
		if (id.nspares && strcmp(id.spare[0], succ))
			fail_msg("%s, cut after %llu requests: the spare is %s, not %s",
				 op_names[op], (unsigned long long)n, id.spare[0], succ);
		break;
	case OP_REMOVE_SPARE:
		/* Old: device n the array's spare; new: the array has none. */
		state = id.nspares ? "old" : "new";
		if (done && id.nspares)
			fail_msg("%s completed uncut but after a restart the array has spare %s",
				 op_names[op], id.spare[0]);
		break;
	case OP_READD:
		/* Old: the member left out (recorded faulty), the array degraded; between:
		 * back in its slot, resyncing (the resync resumes); new: active. */
		state = st.member[VICTIM].state == TC_MEMBER_ACTIVE ? "new"
			: st.member[VICTIM].state == TC_MEMBER_REBUILDING ? "resyncing (resumed)"
			: "old";
		if (done && strcmp(state, "new"))
			fail_msg("%s completed uncut but the restart finds it %s", op_names[op],
				 state);
		break;
	case OP_REPLACE:
	case OP_TAKEOVER:
	default:
		/* Old: the first member in the slot (the spare still a spare); between: the
		 * new device rebuilding in the slot (the copy or rebuild resumes); new: the
		 * new device active in the slot. */
		state = !member_is(&st, VICTIM, succ) ? "old"
			: st.member[VICTIM].state == TC_MEMBER_ACTIVE ? "new"
			: "rebuilding (resumed)";
		if (done && strcmp(state, "new"))
			fail_msg("%s completed uncut but the restart finds it %s", op_names[op],
				 state);
		break;
	}
	/* The data as flushed before the operation, at once (a rebuild resumed, not run
	 * yet), then after the pass; the new device in the slot once it ends, unless the
	 * operation left no trace (old). */
	check_data(f, a, pattern, n, op, state, "at assembly");
	if (op == OP_READD && !strcmp(state, "old")) {
		/* What the admin does then: the re-add again. */
		tc_dev *back = open_file(ctx, f->cf.path[VICTIM], 0);
		int r = tc_array_re_add(a, back);
		if (r)
			fail_msg("%s, cut after %llu requests (old): the re-add after the restart "
				 "fails (%d: %s)", op_names[op], (unsigned long long)n, r,
				 f->log.last);
	}
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	if (st.degraded || st.sync != TC_ARRAY_SYNC_IDLE)
		fail_msg("%s, cut after %llu requests (%s): degraded after the restart's pass",
			 op_names[op], (unsigned long long)n, state);
	if (op == OP_READD) {
		if (st.member[VICTIM].state != TC_MEMBER_ACTIVE)
			fail_msg("%s, cut after %llu requests (%s): slot %u not active after the "
				 "restart's pass", op_names[op], (unsigned long long)n, state,
				 VICTIM);
	} else if (op != OP_ADD_SPARE && op != OP_REMOVE_SPARE && strcmp(state, "old")) {
		if (!member_is(&st, VICTIM, succ) ||
		    st.member[VICTIM].state != TC_MEMBER_ACTIVE)
			fail_msg("%s, cut after %llu requests (%s): after the resumed pass slot "
				 "%u holds %s (state %d), not %s", op_names[op],
				 (unsigned long long)n, state, VICTIM,
				 st.member[VICTIM].name ? st.member[VICTIM].name : "nothing",
				 st.member[VICTIM].state, succ);
	}
	check_data(f, a, pattern, n, op, state, "after the restart's pass");
	tc_dev_close(a);
	tc_ctx_free(ctx);
	check_degraded(f, pattern, n, op, state, "a");
}

static void cut_every_request(struct fx *f, enum aop op, enum tc_raid_level_id level,
			      unsigned members)
{
	f->level = level;
	f->n = members;
	for (size_t i = 0; i < sizeof(pattern); i++) {
		pattern[i] = (uint8_t)(i * 7 + 3 + (i >> 12));
		/* Re-add: the second half as before the member left, the first not. */
		before[i] = i < array_bytes(f) / 2 ? (uint8_t)(i * 5 + 91) : pattern[i];
	}
	uint64_t n;
	prepare(f, op);
	cut_files_save(&f->cf, f->n + 1);
	for (n = 0; n < MAX_CUTS; n++) {
		cut_files_restore(&f->cf, f->n + 1);
		bool done = run_cut(f, op, n);
		if (getenv("TC_CUT_VERBOSE"))
			fprintf(stderr, "%s: cut after %llu: %s\n", op_names[op],
				(unsigned long long)n, done ? "completed" : "cut");
		check_after(f, op, n, done);
		if (done)
			break;
	}
	assert_true(n < MAX_CUTS);
	print_message("  %s, %s of %u: cut at each of its %llu requests, old or new\n",
		      op_names[op], tc_raid_level_name(level), members,
		      (unsigned long long)n);
}

#define LEVELS(name, op)                                                               \
	static void name(void **state)                                                 \
	{                                                                              \
		cut_every_request(*state, op, TC_RAID1, 2);                            \
		cut_every_request(*state, op, TC_RAID5, 3);                            \
		cut_every_request(*state, op, TC_RAID6, 4);                            \
	}

LEVELS(test_create, OP_CREATE)
LEVELS(test_add_spare, OP_ADD_SPARE)
LEVELS(test_replace, OP_REPLACE)
LEVELS(test_takeover, OP_TAKEOVER)
LEVELS(test_remove_spare, OP_REMOVE_SPARE)
LEVELS(test_repair, OP_REPAIR)
LEVELS(test_readd, OP_READD)

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	cut_files_setup(&f->cf, "tc-array-cut");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	assert_int_equal(t_rm_rf(f->cf.dir), 0);
	free(f);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readd, setup, teardown),
	};
	/* TC_CUT_ONLY=test_replace (a cmocka filter) runs one operation. */
	if (getenv("TC_CUT_ONLY"))
		cmocka_set_test_filter(getenv("TC_CUT_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
