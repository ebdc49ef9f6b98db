/* SPDX-License-Identifier: MIT */
/*
 * test_raid_random.c - arrays under random I/O checked against a reference model (a
 * plain buffer): batches of requests in flight together (never overlapping one
 * another, but often sharing stripes, so stripe operations queue on the stripe lock),
 * reads compared with the model, writes, write-zeroes, discards and flushes, on every
 * level, in deterministic contexts (several seeds) and in a threaded one with
 * several submitting threads, with transient read errors on the members now and then
 * (repaired: every request still succeeds).  Members are failed mid-run, some while requests are in
 * flight: within the redundancy every read stays right; past it every request fails
 * with -EIO.  Without failures, the members are consistent afterwards: P and Q
 * recomputed from the data members match, and mirror copies agree.  With hot spares,
 * each failure is taken over by a spare that is rebuilt while the random requests go
 * on (at no rate limit, so that the rebuilds overlap the requests); afterwards every
 * member is active again and the members are consistent.  In the threaded runs a
 * member is also replaced (copied onto a new device) while the threads run.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "raid_common.h"

#define CHUNK 4096u
#define MEMBER (32u * CHUNK)
#define BATCH 8u

static void quiet_log(void *opaque, enum tc_log_level level, const char *msg)
{
}

static unsigned parity_of(enum tc_raid_level_id level)
{
	return level == TC_RAID6 ? 2 : level == TC_RAID5 ? 1 : 0;
}

static unsigned survivable(enum tc_raid_level_id level, unsigned n)
{
	switch (level) {
	case TC_RAID0: return 0;
	case TC_RAID1: return n - 1;
	case TC_RAID10: return 1;
	case TC_RAID5: return 1;
	case TC_RAID6: return 2;
	}
	return 0;
}

/* Members consistent with each other: parity recomputed, or copies equal. */
static void check_consistent(struct raid_fx *fx, enum tc_raid_level_id level)
{
	uint8_t *img[TC_ARRAY_MAX_MEMBERS];
	unsigned n = fx->n, m = parity_of(level), k = n - m;

	for (unsigned i = 0; i < n; i++) {
		img[i] = malloc(MEMBER);
		assert_int_equal(tc_dev_pread(fx->member[i], img[i], MEMBER, 0), 0);
	}
	if (m) {
		uint8_t p[CHUNK], q[CHUNK];
		for (uint64_t s = 0; s < MEMBER / CHUNK; s++) {
			uint8_t *d[TC_ARRAY_MAX_MEMBERS];
			for (unsigned j = 0; j < k; j++)
				d[j] = img[ref_r56_member(n, m, s, j)] + s * CHUNK;
			ref_pq(k, CHUNK, d, p, q);
			assert_memory_equal(img[ref_r56_member(n, m, s, k)] + s * CHUNK, p, CHUNK);
			if (m == 2)
				assert_memory_equal(img[ref_r56_member(n, m, s, k + 1)] + s * CHUNK,
						    q, CHUNK);
		}
	} else if (level == TC_RAID1) {
		for (unsigned i = 1; i < n; i++)
			assert_memory_equal(img[i], img[0], MEMBER);
	} else if (level == TC_RAID10) {
		for (uint64_t c = 0; c < (uint64_t)MEMBER / CHUNK * n / 2; c++) {
			uint64_t s0 = c * 2, s1 = c * 2 + 1;
			assert_memory_equal(img[s0 % n] + s0 / n * CHUNK, img[s1 % n] + s1 / n * CHUNK,
					    CHUNK);
		}
	}
	for (unsigned i = 0; i < n; i++)
		free(img[i]);
}

static void check_all(struct raid_fx *fx, const uint8_t *model, uint64_t size)
{
	uint8_t *back = malloc(size);

	assert_int_equal(tc_dev_pread(fx->array, back, size, 0), 0);
	assert_memory_equal(back, model, size);
	free(back);
}

/* Junk over a faulty member, below the array: nothing may be read from it any more
 * (once the requests in flight to it are done: a read already at the member when it
 * failed returns what the member holds). */
static void scribble(tc_dev *member, uint64_t *rs)
{
	uint8_t *junk = malloc(MEMBER);

	raid_fill(junk, MEMBER, rs);
	assert_int_equal(tc_dev_pwrite(member, junk, MEMBER, 0, 0), 0);
	free(junk);
}

struct range {
	uint64_t off, len;
};

static bool overlaps(const struct range *r, unsigned nr, uint64_t off, uint64_t len)
{
	for (unsigned i = 0; i < nr; i++)
		if (off < r[i].off + r[i].len && r[i].off < off + len)
			return true;
	return false;
}

/*
 * @rounds batches on an array of @level over @n members; at the rounds listed in
 * @fail_at (0-terminated, at most survivable) a member fails while the batch is in
 * flight.  Then, with @past, one failure more: every request fails.
 */
static void run_random_spares(enum tc_ctx_mode mode, uint64_t seed,
			      enum tc_raid_level_id level, unsigned n, unsigned rounds,
			      const unsigned *fail_at, bool past, unsigned spares)
{
	struct raid_fx fx;
	uint64_t rs = seed * 7919 + 1;
	tc_dev *spare[4];

	assert_int_equal(raid_fx_open_faults(&fx, mode, seed, level, n, CHUNK, MEMBER), 0);
	tc_ctx_set_log(fx.ctx, quiet_log, NULL, TC_LOG_ERROR);
	if (spares) {
		struct tc_array_rebuild_opts o = { .max_rate = UINT64_MAX, .priority = 100 };
		assert_int_equal(tc_array_set_rebuild(fx.array, &o), 0);
	}
	for (unsigned i = 0; i < spares; i++) {
		assert_int_equal(tc_dev_new_memory(fx.ctx, MEMBER, &spare[i]), 0);
		assert_int_equal(tc_array_add_spare(fx.array, spare[i]), 0);
	}
	unsigned used = 0;
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	uint64_t size = info.size, sectors = size / TC_SECTOR_SIZE;
	/* Read errors: a transient read fault on a member, now and then, while no member
	 * is faulty nor about to be (with one faulty, a read error past the redundancy
	 * is a true -EIO);
	 * none on RAID 0, which has nothing to repair from. */
	bool read_errors = level != TC_RAID0;
	uint64_t stripe = (uint64_t)CHUNK * (n - parity_of(level));
	uint8_t *model = calloc(1, size);
	uint8_t *bufs[BATCH], *zero = calloc(1, 4 * stripe);
	struct raid_pending pend[BATCH];
	unsigned failed = 0;

	for (unsigned b = 0; b < BATCH; b++)
		bufs[b] = malloc(4 * stripe);
	for (unsigned round = 0; round < rounds; round++) {
		struct range r[BATCH];
		unsigned ops[BATCH], nb = 1 + (unsigned)(raid_rand(&rs) % BATCH);
		unsigned victim_now = UINT32_MAX;
		bool failing = fail_at && fail_at[failed] && round == fail_at[failed];
		if (read_errors && !failed && !failing && raid_rand(&rs) % 3 == 0) {
			struct tc_fault f = { .op = TC_FAULT_READ, .error = EIO, .transient = true,
					      .after = raid_rand(&rs) % 4 };
			assert_int_equal(tc_fault_arm(fx.fault[raid_rand(&rs) % n], &f), 0);
		}
		for (unsigned b = 0; b < nb; b++) {
			uint64_t len, off;
			unsigned tries = 0;
			do {
				uint64_t max = 3 * stripe / TC_SECTOR_SIZE;
				len = (1 + raid_rand(&rs) % max) * TC_SECTOR_SIZE;
				/* Often aligned to chunks and stripes, to take every write path. */
				if (raid_rand(&rs) % 4 == 0)
					off = raid_rand(&rs) % (size / stripe) * stripe;
				else
					off = raid_rand(&rs) % sectors * TC_SECTOR_SIZE;
				if (off + len > size)
					len = size - off;
			} while (overlaps(r, b, off, len) && ++tries < 20);
			if (tries >= 20) {
				nb = b;
				break;
			}
			r[b] = (struct range){ off, len };
			unsigned pick = (unsigned)(raid_rand(&rs) % 100);
			ops[b] = pick < 50 ? TC_OP_WRITE : pick < 88 ? TC_OP_READ :
				pick < 93 ? TC_OP_WRITE_ZEROES : pick < 97 ? TC_OP_DISCARD : TC_OP_FLUSH;
			if (ops[b] == TC_OP_WRITE)
				raid_fill(bufs[b], len, &rs);
			void *buf = ops[b] == TC_OP_WRITE || ops[b] == TC_OP_READ ? bufs[b] : NULL;
			raid_pending_submit(fx.ctx, fx.array, &pend[b], ops[b], buf,
					    ops[b] == TC_OP_FLUSH ? 0 : len,
					    ops[b] == TC_OP_FLUSH ? 0 : off);
		}
		if (fail_at && fail_at[failed] && round == fail_at[failed]) {
			/* Let some member requests complete first, then fail a member. */
			if (mode == TC_CTX_DETERMINISTIC)
				tc_ctx_poll(fx.ctx, 3);
			for (unsigned i = 0; i < n; i++)
				tc_fault_heal(fx.fault[i]);
			unsigned victim = (unsigned)((failed * 3 + seed) % n);
			struct tc_array_status st;
			assert_int_equal(tc_array_status(fx.array, &st), 0);
			while (st.member[victim].state != TC_MEMBER_ACTIVE)
				victim = (victim + 1) % n;
			assert_int_equal(tc_array_fail_member(fx.array, victim), 0);
			failed++;
			victim_now = victim;
			if (used < spares) {
				/* The spare took the slot at once: rebuilding, or on a threaded
				 * context (small memory members, no rate limit) maybe rebuilt
				 * already (seen in a loaded CI run). */
				struct tc_dev_info si;
				tc_dev_info(spare[used], &si);
				assert_int_equal(tc_array_status(fx.array, &st), 0);
				assert_string_equal(st.member[victim].name, si.name);
				if (mode == TC_CTX_DETERMINISTIC)
					assert_int_equal(st.member[victim].state,
							 TC_MEMBER_REBUILDING);
				else
					assert_true(st.member[victim].state == TC_MEMBER_REBUILDING ||
						    st.member[victim].state == TC_MEMBER_ACTIVE);
			}
		}
		for (unsigned b = 0; b < nb; b++) {
			assert_int_equal(raid_pending_wait(&pend[b]), 0);
			if (ops[b] == TC_OP_WRITE)
				memcpy(model + r[b].off, bufs[b], r[b].len);
			else if (ops[b] == TC_OP_WRITE_ZEROES || ops[b] == TC_OP_DISCARD)
				memset(model + r[b].off, 0, r[b].len);
			else if (ops[b] == TC_OP_READ)
				assert_memory_equal(bufs[b], model + r[b].off, r[b].len);
		}
		if (victim_now < n)
			scribble(fx.member[victim_now], &rs);
		if (victim_now < n && used < spares)
			fx.member[victim_now] = spare[used++];  /* for check_consistent */
		for (unsigned i = 0; i < n; i++)
			tc_fault_heal(fx.fault[i]);
	}
	check_all(&fx, model, size);
	if (spares) {
		assert_int_equal(tc_array_wait(fx.array), 0);
		struct tc_array_status st;
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		for (unsigned i = 0; i < n; i++)
			assert_int_equal(st.member[i].state, TC_MEMBER_ACTIVE);
		check_all(&fx, model, size);
	}
	if (failed <= used)
		check_consistent(&fx, level);
	/* The read errors were met, and repaired. */
	uint64_t fired = 0, corrected = 0;
	struct tc_array_status st;
	assert_int_equal(tc_array_status(fx.array, &st), 0);
	for (unsigned i = 0; i < n; i++) {
		struct tc_fault_state fs;
		assert_int_equal(tc_fault_get(fx.fault[i], &fs), 0);
		fired += fs.failed_total;
		corrected += st.member[i].corrected;
	}
	if (read_errors) {
		assert_true(fired > 0);
		assert_true(corrected > 0);
	}
	if (past) {
		/* Fail members until the array has failed (RAID 10 may survive more than its
		 * guaranteed redundancy): every read stays right until then. */
		for (;;) {
			struct tc_array_status st;
			assert_int_equal(tc_array_status(fx.array, &st), 0);
			if (st.failed)
				break;
			assert_true(failed <= survivable(level, n) || level == TC_RAID10);
			check_all(&fx, model, size);
			unsigned victim = 0;
			while (st.member[victim].state != TC_MEMBER_ACTIVE)
				victim++;
			assert_int_equal(tc_array_fail_member(fx.array, victim), 0);
			failed++;
		}
		for (unsigned b = 0; b < BATCH; b++)
			raid_pending_submit(fx.ctx, fx.array, &pend[b],
					    b % 2 ? TC_OP_WRITE : TC_OP_READ, bufs[b], CHUNK,
					    (uint64_t)b * CHUNK);
		for (unsigned b = 0; b < BATCH; b++)
			assert_int_equal(raid_pending_wait(&pend[b]), -EIO);
	}
	for (unsigned b = 0; b < BATCH; b++)
		free(bufs[b]);
	free(zero);
	free(model);
	raid_fx_close(&fx);
}

static void run_random(enum tc_ctx_mode mode, uint64_t seed, enum tc_raid_level_id level,
		       unsigned n, unsigned rounds, const unsigned *fail_at, bool past)
{
	run_random_spares(mode, seed, level, n, rounds, fail_at, past, 0);
}

static const unsigned no_fail[] = { 0 };
static const unsigned fail_one[] = { 60, 0 };
static const unsigned fail_two[] = { 40, 90, 0 };

static void test_random_raid0(void **state)
{
	for (uint64_t seed = 1; seed <= 3; seed++)
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID0, 3, 150, no_fail, true);
}

static void test_random_raid1(void **state)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID1, 3, 150, no_fail, false);
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID1, 3, 150, fail_two, true);
	}
}

static void test_random_raid10(void **state)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID10, 4, 150, no_fail, false);
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID10, 4, 150, fail_one, true);
	}
}

static void test_random_raid5(void **state)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID5, 3 + (unsigned)seed, 150, no_fail,
			   false);
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID5, 3 + (unsigned)seed, 150,
			   fail_one, true);
	}
}

static void test_random_raid6(void **state)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID6, 4 + (unsigned)seed, 150, no_fail,
			   false);
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID6, 4 + (unsigned)seed, 150,
			   fail_one, false);
		run_random(TC_CTX_DETERMINISTIC, seed, TC_RAID6, 4 + (unsigned)seed, 150,
			   fail_two, true);
	}
}

static void test_random_spares(void **state)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		run_random_spares(TC_CTX_DETERMINISTIC, seed, TC_RAID1, 3, 150, fail_two, false, 2);
		run_random_spares(TC_CTX_DETERMINISTIC, seed, TC_RAID10, 4, 150, fail_one, false, 1);
		run_random_spares(TC_CTX_DETERMINISTIC, seed, TC_RAID5, 3 + (unsigned)seed, 150,
				  fail_two, false, 2);
		run_random_spares(TC_CTX_DETERMINISTIC, seed, TC_RAID6, 4 + (unsigned)seed, 150,
				  fail_two, false, 2);
	}
	run_random_spares(TC_CTX_THREADED, 7, TC_RAID6, 6, 150, fail_two, false, 2);
	run_random_spares(TC_CTX_THREADED, 8, TC_RAID5, 4, 150, fail_one, false, 1);
	run_random_spares(TC_CTX_THREADED, 9, TC_RAID10, 4, 150, fail_one, false, 1);
}

static void test_random_threaded(void **state)
{
	run_random(TC_CTX_THREADED, 1, TC_RAID6, 6, 150, no_fail, false);
	run_random(TC_CTX_THREADED, 2, TC_RAID6, 6, 150, fail_two, true);
	run_random(TC_CTX_THREADED, 3, TC_RAID5, 4, 150, fail_one, true);
	run_random(TC_CTX_THREADED, 4, TC_RAID10, 4, 150, fail_one, true);
	run_random(TC_CTX_THREADED, 5, TC_RAID1, 2, 150, fail_one, true);
}

/* ---- several submitting threads on one stripe set ------------------------------------ */

#define THREADS 4u

struct worker {
	struct raid_fx *fx;
	uint8_t *model;         /* shared; each thread owns the chunks c with c % THREADS == id */
	uint64_t size;
	unsigned id;
	unsigned ops;
	int bad;                /* first mismatch or error */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint64_t rs = 0x9e3779b97f4a7c15ull * (w->id + 1);
	uint8_t buf[CHUNK];
	uint64_t chunks = w->size / CHUNK;

	for (unsigned i = 0; i < w->ops && !w->bad; i++) {
		uint64_t c = (raid_rand(&rs) % (chunks / THREADS)) * THREADS + w->id;
		uint64_t s0 = raid_rand(&rs) % (CHUNK / TC_SECTOR_SIZE);
		uint64_t ns = 1 + raid_rand(&rs) % (CHUNK / TC_SECTOR_SIZE - s0);
		uint64_t off = c * CHUNK + s0 * TC_SECTOR_SIZE, len = ns * TC_SECTOR_SIZE;
		if (raid_rand(&rs) % 2) {
			raid_fill(buf, len, &rs);
			if (tc_dev_pwrite(w->fx->array, buf, len, off, 0) != 0)
				w->bad = 1;
			memcpy(w->model + off, buf, len);
		} else {
			if (tc_dev_pread(w->fx->array, buf, len, off) != 0 ||
			    memcmp(buf, w->model + off, len))
				w->bad = 2;
		}
	}
	return NULL;
}

static void run_threads_spare(enum tc_raid_level_id level, unsigned n, bool fail,
			      bool spare, bool replace)
{
	struct raid_fx fx;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	tc_dev *sp = NULL;

	assert_int_equal(raid_fx_open(&fx, TC_CTX_THREADED, 0, level, n, CHUNK, MEMBER), 0);
	tc_ctx_set_log(fx.ctx, quiet_log, NULL, TC_LOG_ERROR);
	if (spare) {
		struct tc_array_rebuild_opts o = { .max_rate = UINT64_MAX, .priority = 100 };
		assert_int_equal(tc_array_set_rebuild(fx.array, &o), 0);
		assert_int_equal(tc_dev_new_memory(fx.ctx, MEMBER, &sp), 0);
		assert_int_equal(tc_array_add_spare(fx.array, sp), 0);
	}
	struct tc_dev_info info;
	tc_dev_info(fx.array, &info);
	uint8_t *model = calloc(1, info.size);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .fx = &fx, .model = model, .size = info.size, .id = i,
					.ops = 400 };
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	if (replace) {
		/* Member 1 copied onto the spare device while the threads run. */
		struct tc_dev_info si;
		tc_dev_info(sp, &si);
		assert_int_equal(tc_array_remove(fx.array, si.name), 0);
		assert_int_equal(tc_dev_new_memory(fx.ctx, MEMBER, &sp), 0);
		assert_int_equal(tc_array_replace(fx.array, 1, sp), 0);
	} else if (fail) {
		uint64_t rs = 5;
		assert_int_equal(tc_array_fail_member(fx.array, 1), 0);
		if (!spare)
			scribble(fx.member[1], &rs);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	check_all(&fx, model, info.size);
	if (spare) {
		assert_int_equal(tc_array_wait(fx.array), 0);
		fx.member[1] = sp;
		check_all(&fx, model, info.size);
	}
	if (!fail || spare)
		check_consistent(&fx, level);
	if (replace) {
		struct tc_array_status st;
		assert_int_equal(tc_array_status(fx.array, &st), 0);
		assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
		assert_int_equal(st.extra[0].state, TC_MEMBER_REPLACED);
	}
	free(model);
	raid_fx_close(&fx);
}

static void run_threads(enum tc_raid_level_id level, unsigned n, bool fail)
{
	run_threads_spare(level, n, fail, false, false);
}

static void test_threads_spare(void **state)
{
	run_threads_spare(TC_RAID6, 6, true, true, false);
	run_threads_spare(TC_RAID5, 4, true, true, false);
	run_threads_spare(TC_RAID1, 2, true, true, false);
	run_threads_spare(TC_RAID10, 4, true, true, false);
	run_threads_spare(TC_RAID6, 6, false, true, true);
	run_threads_spare(TC_RAID5, 4, false, true, true);
	run_threads_spare(TC_RAID1, 2, false, true, true);
	run_threads_spare(TC_RAID10, 4, false, true, true);
}

/* A member failed while reads of it are in flight, then scribbled over: those reads
 * must not return what they read (array.c, map_read_done; raid56.c, r56_child_done).
 * One run in about 170 caught it before the fix, under load: 20 runs each. */
#define FAIL_RUNS 20

static void test_threads_raid6(void **state)
{
	run_threads(TC_RAID6, 6, false);
	for (unsigned i = 0; i < FAIL_RUNS; i++)
		run_threads(TC_RAID6, 6, true);
}

static void test_threads_raid5(void **state)
{
	run_threads(TC_RAID5, 5, false);
	for (unsigned i = 0; i < FAIL_RUNS; i++)
		run_threads(TC_RAID5, 5, true);
}

static void test_threads_raid1(void **state)
{
	run_threads(TC_RAID1, 3, false);
	for (unsigned i = 0; i < FAIL_RUNS; i++)
		run_threads(TC_RAID10, 4, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_raid0),
		cmocka_unit_test(test_random_raid1),
		cmocka_unit_test(test_random_raid10),
		cmocka_unit_test(test_random_raid5),
		cmocka_unit_test(test_random_raid6),
		cmocka_unit_test(test_random_spares),
		cmocka_unit_test(test_random_threaded),
		cmocka_unit_test(test_threads_raid6),
		cmocka_unit_test(test_threads_raid5),
		cmocka_unit_test(test_threads_raid1),
		cmocka_unit_test(test_threads_spare),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
