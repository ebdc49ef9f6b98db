/* SPDX-License-Identifier: MIT */
/*
 * test_dirty_index.c - the volume's dirty index (src/cache/dirty.c) against a plain
 * array of counts: random increments and decrements of groups' dirty units, dense
 * and sparse, through the table's growth, shrinking and back-shift deletions; the
 * full-group count; tc_dirty_any over line ranges; a count gone negative marks the
 * index lost.  The engine's use of it (the cleaner's candidates, the lines kept in
 * step) is checked by test_cache and by tc-stress at every restart.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cache_priv.h"

#define GROUPS 20000u
#define GL 4u        /* lines per group */
#define GU 16u       /* units per full group */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The index holds exactly the groups of @ref with a count, and @ref's full ones. */
static void expect_same(struct tc_dirty_index *d, const uint32_t *ref)
{
	uint64_t *keys;
	uint32_t nfull, want_full = 0, want_n = 0;
	int64_t n = tc_dirty_collect(d, &keys, &nfull);
	assert_true(n >= 0);
	if (n > 1)
		qsort(keys, (size_t)n, sizeof(*keys), cmp_u64);
	int64_t k = 0;
	for (uint32_t g = 0; g < GROUPS; g++) {
		if (!ref[g])
			continue;
		want_n++;
		want_full += ref[g] == GU;
		assert_true(k < n);
		assert_int_equal(keys[k] >> 32, g);
		assert_int_equal((uint32_t)keys[k], ref[g]);
		k++;
	}
	assert_int_equal(n, want_n);
	assert_int_equal(nfull, want_full);
	assert_int_equal(tc_dirty_full(d), want_full);
	free(keys);
}

static void test_random_against_array(void **state)
{
	(void)state;
	struct tc_dirty_index d;
	uint32_t *ref = calloc(GROUPS, sizeof(*ref));
	assert_int_equal(tc_dirty_init(&d, GL, GU, 0), 0);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	size_t peak = 0;
	/* Phases: fill densely, churn, drain sparsely to nothing. */
	for (int phase = 0; phase < 3; phase++) {
		for (int i = 0; i < 200000; i++) {
			uint32_t g = (uint32_t)(rng_next(&s) % (phase == 1 ? GROUPS : GROUPS / 4));
			bool add = phase == 0 ? rng_next(&s) % 4 != 0 :
				   phase == 1 ? rng_next(&s) % 2 == 0 : false;
			uint32_t line = g * GL + (uint32_t)(rng_next(&s) % GL);
			if (add && ref[g] < GU) {
				uint32_t u = 1 + (uint32_t)(rng_next(&s) % (GU - ref[g]));
				tc_dirty_add(&d, line, u);
				ref[g] += u;
			} else if (!add && ref[g]) {
				uint32_t u = 1 + (uint32_t)(rng_next(&s) % ref[g]);
				tc_dirty_add(&d, line, -(int64_t)u);
				ref[g] -= u;
			}
			if (i % 25000 == 0)
				expect_same(&d, ref);
		}
		expect_same(&d, ref);
		size_t mem = tc_dirty_mem(&d);
		peak = mem > peak ? mem : peak;
		if (phase == 2) {
			/* Whatever is left goes to 0: the table shrinks back. */
			for (uint32_t g = 0; g < GROUPS; g++)
				if (ref[g]) {
					tc_dirty_add(&d, g * GL, -(int64_t)ref[g]);
					ref[g] = 0;
				}
			expect_same(&d, ref);
			assert_true(tc_dirty_mem(&d) < peak / 8);
		}
	}
	assert_false(tc_dirty_lost(&d));
	/* tc_dirty_any over line ranges. */
	tc_dirty_add(&d, 10 * GL + 3, 2);
	assert_true(tc_dirty_any(&d, 10 * GL, 10 * GL));       /* same group, other line */
	assert_true(tc_dirty_any(&d, 0, 100 * GL));
	assert_false(tc_dirty_any(&d, 0, 10 * GL - 1));
	assert_false(tc_dirty_any(&d, 11 * GL, 50 * GL));
	/* Cleaning more than is dirty: the index is lost, and says so. */
	tc_dirty_add(&d, 10 * GL, -3);
	assert_true(tc_dirty_lost(&d));
	uint64_t *keys;
	uint32_t nfull;
	assert_int_equal(tc_dirty_collect(&d, &keys, &nfull), -ENOENT);
	assert_false(tc_dirty_any(&d, 0, 100 * GL));
	tc_dirty_reset(&d);
	assert_false(tc_dirty_lost(&d));
	memset(ref, 0, GROUPS * sizeof(*ref));
	expect_same(&d, ref);
	tc_dirty_fini(&d);
	free(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
