/* SPDX-License-Identifier: MIT */
/*
 * test_policy_lru.c - exact LRU (src/cache/policy_lru.c): eviction order on hand-made
 * sequences, can_evict refusals, remove, -ENOSPC, memory figures; and the same order
 * through a real cache (policy_engine.h), whose eviction unmaps the victim.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tiercache.h"
#include "policy.h"
#include "policy_engine.h"

#define NSLOTS 8

struct fixture {
	struct tc_line lines[NSLOTS];
	struct tc_repl *r;
};

/* can_evict callbacks: arg is a bitmap of refused slots (0..31; higher slots are never
 * refused); calls are counted. */
struct refuse {
	uint32_t mask;
	unsigned calls;
};

static bool refuse_some(void *arg, uint32_t slot)
{
	struct refuse *f = arg;

	f->calls++;
	return slot >= 32 || !(f->mask & (1u << slot));   /* the mask covers slots 0..31 */
}

static int setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	assert_non_null(f);
	for (uint32_t i = 0; i < NSLOTS; i++) {
		f->lines[i].vol = 1;
		f->lines[i].line_no = 100 + i;
	}
	assert_int_equal(tc_repl_lru.create(&f->r, f->lines, NSLOTS), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	tc_repl_lru.destroy(f->r);
	test_free(f);
	return 0;
}

static uint32_t victim_ok(struct tc_repl *r)
{
	struct refuse none = { 0, 0 };
	uint32_t slot = TC_SLOT_NONE;

	assert_int_equal(tc_repl_lru.victim(r, refuse_some, &none, &slot), 0);
	return slot;
}

static void assert_empty(struct tc_repl *r)
{
	struct refuse none = { 0, 0 };
	uint32_t slot = 1234;

	assert_int_equal(tc_repl_lru.victim(r, refuse_some, &none, &slot), -ENOSPC);
	assert_int_equal(slot, 1234);   /* untouched on failure */
	assert_int_equal(none.calls, 0);
}

/* Insertion order is eviction order without hits. */
static void test_fifo_without_hits(void **state)
{
	struct fixture *f = *state;

	for (uint32_t s = 0; s < 4; s++)
		tc_repl_lru.insert(f->r, s);
	for (uint32_t s = 0; s < 4; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_empty(f->r);
}

/* Hits reorder: insert 0 1 2 3, touch 1, 0, 1 (again), 3 -> LRU order 2 0 1 3. */
static void test_touch_reorders(void **state)
{
	struct fixture *f = *state;
	static const uint32_t expect[] = { 2, 0, 1, 3 };

	for (uint32_t s = 0; s < 4; s++)
		tc_repl_lru.insert(f->r, s);
	tc_repl_lru.touch(f->r, 1);
	tc_repl_lru.touch(f->r, 0);
	tc_repl_lru.touch(f->r, 1);
	tc_repl_lru.touch(f->r, 3);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(victim_ok(f->r), expect[i]);
	assert_empty(f->r);
}

/* Interleaved inserts, hits and evictions, as the engine drives them. */
static void test_mixed_sequence(void **state)
{
	struct fixture *f = *state;

	tc_repl_lru.insert(f->r, 5);
	tc_repl_lru.insert(f->r, 2);
	tc_repl_lru.touch(f->r, 5);          /* order (LRU first): 2 5 */
	tc_repl_lru.insert(f->r, 7);         /* 2 5 7 */
	assert_int_equal(victim_ok(f->r), 2);   /* 5 7 */
	tc_repl_lru.insert(f->r, 2);         /* 5 7 2 */
	tc_repl_lru.touch(f->r, 5);          /* 7 2 5 */
	tc_repl_lru.touch(f->r, 5);          /* touching the head changes nothing */
	assert_int_equal(victim_ok(f->r), 7);
	assert_int_equal(victim_ok(f->r), 2);
	assert_int_equal(victim_ok(f->r), 5);
	assert_empty(f->r);
}

/* Refused slots are skipped and keep their place; the walk is one pass. */
static void test_can_evict_skips(void **state)
{
	struct fixture *f = *state;
	struct refuse rf = { (1u << 0) | (1u << 1), 0 };
	uint32_t slot;

	for (uint32_t s = 0; s < 5; s++)
		tc_repl_lru.insert(f->r, s);        /* LRU first: 0 1 2 3 4 */
	assert_int_equal(tc_repl_lru.victim(f->r, refuse_some, &rf, &slot), 0);
	assert_int_equal(slot, 2);
	assert_int_equal(rf.calls, 3);              /* asked 0, 1, then 2 */
	/* 0 and 1 are still the least recently used once allowed. */
	assert_int_equal(victim_ok(f->r), 0);
	assert_int_equal(victim_ok(f->r), 1);
	assert_int_equal(victim_ok(f->r), 3);
	assert_int_equal(victim_ok(f->r), 4);
	assert_empty(f->r);
}

/* Everything refused: -ENOSPC after asking each resident slot exactly once, and the
 * list is intact afterwards. */
static void test_all_refused_enospc(void **state)
{
	struct fixture *f = *state;
	struct refuse rf = { 0xff, 0 };
	uint32_t slot = 99;

	for (uint32_t s = 0; s < NSLOTS; s++)
		tc_repl_lru.insert(f->r, s);
	assert_int_equal(tc_repl_lru.victim(f->r, refuse_some, &rf, &slot), -ENOSPC);
	assert_int_equal(rf.calls, NSLOTS);
	assert_int_equal(slot, 99);
	for (uint32_t s = 0; s < NSLOTS; s++)
		assert_int_equal(victim_ok(f->r), s);
	assert_empty(f->r);
}

/* remove() dequeues from the middle, the head and the tail; removing or touching an
 * unqueued slot is a no-op; a removed slot can be inserted again. */
static void test_remove(void **state)
{
	struct fixture *f = *state;

	for (uint32_t s = 0; s < 6; s++)
		tc_repl_lru.insert(f->r, s);        /* 0 1 2 3 4 5 */
	tc_repl_lru.remove(f->r, 2);                /* middle */
	tc_repl_lru.remove(f->r, 0);                /* LRU end */
	tc_repl_lru.remove(f->r, 5);                /* MRU end */
	tc_repl_lru.remove(f->r, 5);                /* again: nothing */
	tc_repl_lru.remove(f->r, 7);                /* never inserted */
	tc_repl_lru.touch(f->r, 2);                 /* hit racing a removal: ignored */
	assert_int_equal(victim_ok(f->r), 1);
	tc_repl_lru.insert(f->r, 2);                /* 3 4 2 */
	assert_int_equal(victim_ok(f->r), 3);
	assert_int_equal(victim_ok(f->r), 4);
	assert_int_equal(victim_ok(f->r), 2);
	assert_empty(f->r);
}

/* Re-inserting a queued slot moves it to the head instead of linking it twice. */
static void test_reinsert_queued(void **state)
{
	struct fixture *f = *state;

	tc_repl_lru.insert(f->r, 0);
	tc_repl_lru.insert(f->r, 1);
	tc_repl_lru.insert(f->r, 0);
	assert_int_equal(victim_ok(f->r), 1);
	assert_int_equal(victim_ok(f->r), 0);
	assert_empty(f->r);
}

/* A NULL can_evict accepts everything; lines[].flags is never written. */
static void test_null_can_evict_and_flags(void **state)
{
	struct fixture *f = *state;
	uint32_t slot;

	for (uint32_t s = 0; s < NSLOTS; s++)
		f->lines[s].flags = (uint8_t)(0xa5 ^ s);
	for (uint32_t s = 0; s < NSLOTS; s++)
		tc_repl_lru.insert(f->r, NSLOTS - 1 - s);
	tc_repl_lru.touch(f->r, 7);
	assert_int_equal(tc_repl_lru.victim(f->r, NULL, NULL, &slot), 0);
	assert_int_equal(slot, 6);
	tc_repl_lru.remove(f->r, 0);
	for (uint32_t s = 0; s < NSLOTS; s++)
		assert_int_equal(f->lines[s].flags, (uint8_t)(0xa5 ^ s));
}

static void test_mem_and_lookup(void **state)
{
	struct fixture *f = *state;
	size_t per_slot = 0, ghosts = 1;

	tc_repl_lru.mem(f->r, &per_slot, &ghosts);
	assert_int_equal(per_slot, 8);
	assert_int_equal(ghosts, 0);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_LRU), &tc_repl_lru);
	assert_string_equal(tc_repl_lru.name, "lru");
}

/* A real cache of 16 lines: a line read again before the cache overflows is the most
 * recently used, so the next misses evict the others, oldest first. */
static void test_engine_order(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_LRU, 16, 100, TC_WP_WT);
	for (uint32_t l = 0; l < 16; l++)
		pe_read(&e, l);
	pe_read(&e, 0);                  /* hit: 0 becomes the most recently used */
	for (uint32_t l = 16; l < 31; l++)
		pe_read(&e, l);          /* 15 misses evict 1..15 */
	assert_true(pe_resident(&e, 0));
	for (uint32_t l = 1; l < 16; l++)
		assert_false(pe_resident(&e, l));
	pe_read(&e, 31);                 /* and the next one 0 */
	assert_false(pe_resident(&e, 0));
	pe_down(&e);
}

/* Writes are hits too (request.c tells the policy of every use of a resident line): in
 * write-through, so that the line stays clean and evictable, a line rewritten (whole,
 * then partly) before the cache overflows outlives the lines read once, as a line read
 * again does. */
static void test_engine_write_hits(void **state)
{
	struct pe e;

	pe_up(&e, TC_REPL_LRU, 16, 100, TC_WP_WT);
	pe_write(&e, 0);                 /* miss: allocated */
	pe_read(&e, 1);
	for (uint32_t l = 2; l < 16; l++)
		pe_read(&e, l);
	pe_write(&e, 0);                 /* write hit */
	pe_write_part(&e, 1);            /* partial write hit */
	for (uint32_t l = 16; l < 30; l++)
		pe_read(&e, l);          /* 14 misses evict 2..15 */
	assert_true(pe_resident(&e, 0));
	assert_true(pe_resident(&e, 1));
	for (uint32_t l = 2; l < 16; l++)
		assert_false(pe_resident(&e, l));
	pe_down(&e);
}

/* A large cache full of dirty lines (can_evict refuses every slot but one, @allowed):
 * calls counted per victim() call. */
struct dirty_cache {
	uint32_t allowed;
	unsigned calls;
};

static bool refuse_dirty(void *arg, uint32_t slot)
{
	struct dirty_cache *d = arg;

	d->calls++;
	return slot == d->allowed;
}

/*
 * The work of one allocation is bounded: with 10000 dirty lines each victim() call
 * asks can_evict() TC_REPL_MAX_REFUSALS times, then gives up; the refused run moves to
 * the head in its order, so successive calls reach the one clean line 1000 lines from
 * the tail in ceil(1001 / 256) calls, and the rest keeps its LRU order.
 */
static void test_dirty_cache_bounded(void **state)
{
	const uint32_t n = 10000;
	struct tc_line *lines = test_calloc(n, sizeof(*lines));
	struct dirty_cache d = { .allowed = TC_SLOT_NONE };
	struct refuse none = { 0, 0 };
	struct tc_repl *r;
	uint32_t slot = TC_SLOT_NONE;
	int rc, calls = 0;

	assert_int_equal(tc_repl_lru.create(&r, lines, n), 0);
	for (uint32_t i = 0; i < n; i++) {
		lines[i].vol = 1;
		lines[i].line_no = i;
		tc_repl_lru.insert(r, i);           /* LRU first: 0 1 2 ... */
	}
	for (int round = 0; round < 3; round++) {
		d.calls = 0;
		assert_int_equal(tc_repl_lru.victim(r, refuse_dirty, &d, &slot), -ENOSPC);
		assert_int_equal(d.calls, TC_REPL_MAX_REFUSALS);
	}
	d.allowed = 1000;
	do {
		d.calls = 0;
		rc = tc_repl_lru.victim(r, refuse_dirty, &d, &slot);
		assert_true(d.calls <= TC_REPL_MAX_REFUSALS);
		calls++;
	} while (rc == -ENOSPC && calls < 100);
	assert_int_equal(rc, 0);
	assert_int_equal(slot, 1000);
	/* Three runs (0..767) went to the head; 768..999, refused fewer times than the
	 * bound, kept their place: LRU order is now 768..999, 1001..9999, 0..767. */
	assert_int_equal(calls, 1);
	for (uint32_t k = 0; k < n - 1; k++) {
		uint32_t want = k < 232 ? 768 + k : k < 232 + 8999 ? 1001 + (k - 232) :
				k - 232 - 8999;

		assert_int_equal(tc_repl_lru.victim(r, refuse_some, &none, &slot), 0);
		assert_int_equal(slot, want);
	}
	assert_int_equal(tc_repl_lru.victim(r, refuse_some, &none, &slot), -ENOSPC);
	tc_repl_lru.destroy(r);
	test_free(lines);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fifo_without_hits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_touch_reorders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_can_evict_skips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_refused_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reinsert_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_can_evict_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mem_and_lookup, setup, teardown),
		cmocka_unit_test(test_dirty_cache_bounded),
		cmocka_unit_test(test_engine_order),
		cmocka_unit_test(test_engine_write_hits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
