/* SPDX-License-Identifier: MIT */
/*
 * test_raid_parity.c - the parity maths of RAID 5 and RAID 6 (src/raid/parity.c)
 * against a plain GF(2^8) implementation (polynomial 0x11d) written here: P and Q of
 * full stripes, read-modify-write updates of P and Q, and the recovery of every single
 * lost block and every pair (data, P, Q in any combination), for several stripe
 * widths; refusals of impossible geometries and of too many lost blocks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "raid/parity.h"
#include "raid_common.h"

#define LEN 4096u

struct stripe {
	unsigned k, m;
	uint8_t *mem;
	uint8_t *b[PARITY_MAX_SLOTS];
};

static void stripe_new(struct stripe *s, unsigned k, unsigned m, uint64_t seed)
{
	s->k = k;
	s->m = m;
	s->mem = aligned_alloc(PARITY_ALIGN, (size_t)LEN * (k + m));
	assert_non_null(s->mem);
	for (unsigned i = 0; i < k + m; i++)
		s->b[i] = s->mem + (size_t)LEN * i;
	raid_fill(s->mem, (size_t)LEN * k, &seed);
}

static void check_against_ref(const struct stripe *s)
{
	uint8_t p[LEN], q[LEN];

	ref_pq(s->k, LEN, s->b, p, q);
	assert_memory_equal(s->b[s->k], p, LEN);
	if (s->m == 2)
		assert_memory_equal(s->b[s->k + 1], q, LEN);
}

static void test_encode(void **state)
{
	static const unsigned ks[] = { 2, 3, 4, 6, 13 };

	for (unsigned m = 1; m <= 2; m++)
		for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
			struct stripe s;
			struct parity *par;
			stripe_new(&s, ks[t], m, 7 + t);
			assert_int_equal(parity_new(ks[t], m, &par), 0);
			parity_encode(par, LEN, s.b);
			check_against_ref(&s);
			assert_int_equal(parity_check(par, LEN, s.b), 0);
			s.b[0][17] ^= 1;
			assert_int_equal(parity_check(par, LEN, s.b), 1);
			parity_free(par);
			free(s.mem);
		}
}

static void test_update(void **state)
{
	uint64_t seed = 99;

	for (unsigned m = 1; m <= 2; m++) {
		struct stripe s;
		struct parity *par;
		uint8_t *delta = aligned_alloc(PARITY_ALIGN, LEN), *nd = malloc(LEN);
		stripe_new(&s, 5, m, 3);
		assert_int_equal(parity_new(5, m, &par), 0);
		parity_encode(par, LEN, s.b);
		for (unsigned round = 0; round < 10; round++) {
			unsigned i = (unsigned)(raid_rand(&seed) % 5);
			raid_fill(nd, LEN, &seed);
			for (unsigned x = 0; x < LEN; x++)
				delta[x] = s.b[i][x] ^ nd[x];
			memcpy(s.b[i], nd, LEN);
			parity_update(par, LEN, i, delta, &s.b[5]);
			check_against_ref(&s);
		}
		parity_free(par);
		free(s.mem);
		free(delta);
		free(nd);
	}
}

/* Every pattern of up to m lost blocks is rebuilt exactly, twice (the second time from
 * the cached decode tables). */
static void test_recover_all_patterns(void **state)
{
	static const unsigned ks[] = { 2, 3, 4, 6, 10 };

	for (unsigned m = 1; m <= 2; m++)
		for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
			unsigned k = ks[t], n = k + m;
			struct stripe s;
			struct parity *par;
			uint8_t *good = malloc((size_t)LEN * n);
			stripe_new(&s, k, m, 11 + t);
			assert_int_equal(parity_new(k, m, &par), 0);
			parity_encode(par, LEN, s.b);
			memcpy(good, s.mem, (size_t)LEN * n);
			for (unsigned pass = 0; pass < 2; pass++)
				for (unsigned a = 0; a < n; a++)
					for (unsigned b = a; b < n; b++) {
						uint32_t lost = (1u << a) | (1u << b);
						if (a != b && m < 2)
							continue;
						memset(s.b[a], 0xa5, LEN);
						memset(s.b[b], 0x5a, LEN);
						assert_int_equal(parity_recover(par, LEN, s.b, lost), 0);
						assert_memory_equal(s.mem, good, (size_t)LEN * n);
					}
			/* One more than the parity can cover is refused. */
			uint32_t too_many = (1u << (m + 1)) - 1;
			assert_int_equal(parity_recover(par, LEN, s.b, too_many), -EINVAL);
			assert_int_equal(parity_recover(par, LEN, s.b, 0), 0);
			parity_free(par);
			free(s.mem);
			free(good);
		}
}

static void test_bad_geometry(void **state)
{
	struct parity *par = (struct parity *)1;

	assert_int_equal(parity_new(1, 2, &par), -EINVAL);
	assert_null(par);
	assert_int_equal(parity_new(4, 3, &par), -EINVAL);
	assert_int_equal(parity_new(4, 0, &par), -EINVAL);
	assert_int_equal(parity_new(31, 2, &par), -EINVAL);
	assert_int_equal(parity_new(30, 2, &par), 0);
	parity_free(par);
}

static void test_gf(void **state)
{
	for (unsigned a = 0; a < 256; a += 7)
		for (unsigned b = 0; b < 256; b += 3)
			assert_int_equal(parity_gf_mul((uint8_t)a, (uint8_t)b),
					 ref_gf_mul((uint8_t)a, (uint8_t)b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gf),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_recover_all_patterns),
		cmocka_unit_test(test_bad_geometry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
