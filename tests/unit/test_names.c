/* SPDX-License-Identifier: MIT */
/*
 * test_names.c - enum names and parsers of src/names.c, the volume-name rule,
 * tc_repl_ops_get(), and the cache layout helpers tools size caches with.
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

static void test_write_policy(void **state)
{
	static const char *const names[] = { "wt", "wb", "wa", "pt", "instwb" };
	static const unsigned values[] = { TC_WP_WT, TC_WP_WB, TC_WP_WA, TC_WP_PT,
					   TC_WP_INSTWB };

	for (unsigned i = 0; i < 5; i++) {
		assert_string_equal(tc_write_policy_name(values[i]), names[i]);
		assert_int_equal(tc_write_policy_parse(names[i]), (int)values[i]);
		assert_int_equal(tc_write_policy_is_wb(values[i]),
				 values[i] == TC_WP_WB || values[i] == TC_WP_INSTWB);
	}
	assert_string_equal(tc_write_policy_name(5), "unknown");
	assert_string_equal(tc_write_policy_name(~0u), "unknown");
	assert_int_equal(tc_write_policy_parse("WB"), -EINVAL);
	assert_int_equal(tc_write_policy_parse("wb "), -EINVAL);
	assert_int_equal(tc_write_policy_parse("w"), -EINVAL);
	assert_int_equal(tc_write_policy_parse(""), -EINVAL);
	assert_int_equal(tc_write_policy_parse("unknown"), -EINVAL);
	assert_int_equal(tc_write_policy_parse("writeback"), -EINVAL);
	assert_int_equal(tc_write_policy_parse(NULL), -EINVAL);
}

static void test_flush_rate(void **state)
{
	static const char *const names[] = { "low", "medium", "high" };
	static const unsigned values[] = { TC_FLUSH_LOW, TC_FLUSH_MEDIUM, TC_FLUSH_HIGH };

	for (unsigned i = 0; i < 3; i++) {
		assert_string_equal(tc_flush_rate_name(values[i]), names[i]);
		assert_int_equal(tc_flush_rate_parse(names[i]), (int)values[i]);
	}
	assert_string_equal(tc_flush_rate_name(3), "unknown");
	assert_string_equal(tc_flush_rate_name(255), "unknown");
	assert_int_equal(tc_flush_rate_parse("med"), -EINVAL);
	assert_int_equal(tc_flush_rate_parse("High"), -EINVAL);
	assert_int_equal(tc_flush_rate_parse("wb"), -EINVAL);
	assert_int_equal(tc_flush_rate_parse(""), -EINVAL);
	assert_int_equal(tc_flush_rate_parse(NULL), -EINVAL);
}

static void test_replacement(void **state)
{
	assert_string_equal(tc_replacement_name(TC_REPL_LRU), "lru");
	assert_string_equal(tc_replacement_name(TC_REPL_S3FIFO), "s3fifo");
	assert_string_equal(tc_replacement_name(TC_REPL_ARC), "arc");
	assert_string_equal(tc_replacement_name(TC_REPL_2Q), "2q");
	assert_string_equal(tc_replacement_name(TC_REPL_SIEVE), "sieve");
	assert_string_equal(tc_replacement_name(TC_REPL_WTINYLFU), "wtinylfu");
	assert_string_equal(tc_replacement_name(TC_REPL_LIRS), "lirs");
	assert_string_equal(tc_replacement_name(TC_REPL_WTINYLFU_HC), "wtinylfu-hc");
	assert_string_equal(tc_replacement_name(8), "unknown");
	assert_int_equal(tc_replacement_parse("lru"), TC_REPL_LRU);
	assert_int_equal(tc_replacement_parse("s3fifo"), TC_REPL_S3FIFO);
	assert_int_equal(tc_replacement_parse("arc"), TC_REPL_ARC);
	assert_int_equal(tc_replacement_parse("2q"), TC_REPL_2Q);
	assert_int_equal(tc_replacement_parse("sieve"), TC_REPL_SIEVE);
	assert_int_equal(tc_replacement_parse("wtinylfu"), TC_REPL_WTINYLFU);
	assert_int_equal(tc_replacement_parse("lirs"), TC_REPL_LIRS);
	assert_int_equal(tc_replacement_parse("wtinylfu-hc"), TC_REPL_WTINYLFU_HC);
	assert_int_equal(tc_replacement_parse("w-tinylfu"), -EINVAL);
	assert_int_equal(tc_replacement_parse("s3-fifo"), -EINVAL);
	assert_int_equal(tc_replacement_parse("LRU"), -EINVAL);
	assert_int_equal(tc_replacement_parse(""), -EINVAL);
	assert_int_equal(tc_replacement_parse(NULL), -EINVAL);
}

/* Each replacement id maps to the ops table carrying the same name. */
static void test_size_parse(void **state)
{
	static const struct { const char *s; int ret; uint64_t v; } cases[] = {
		{ "0", 0, 0 }, { "4096", 0, 4096 }, { "64K", 0, 65536 }, { "64k", 0, 65536 },
		{ "1M", 0, 1ull << 20 }, { "2GiB", 0, 2ull << 30 }, { "3gb", 0, 3ull << 30 },
		{ "1T", 0, 1ull << 40 }, { "16777215T", 0, 16777215ull << 40 },
		{ "16777216T", -ERANGE, 0 }, { "18446744073709551616", -ERANGE, 0 },
		{ "", -EINVAL, 0 }, { "-1", -EINVAL, 0 }, { "+1", -EINVAL, 0 },
		{ "K", -EINVAL, 0 }, { "1X", -EINVAL, 0 }, { "1 K", -EINVAL, 0 },
		{ "1KiBx", -EINVAL, 0 }, { "12iB", -EINVAL, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int r = tc_size_parse(cases[i].s, &v);
		if (r != cases[i].ret)
			fail_msg("\"%s\": returned %d, expected %d", cases[i].s, r, cases[i].ret);
		assert_int_equal(v, cases[i].ret ? 12345 : cases[i].v);
	}
	assert_int_equal(tc_size_parse(NULL, &(uint64_t){0}), -EINVAL);
}

static void test_repl_ops_get(void **state)
{
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_LRU), &tc_repl_lru);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_S3FIFO), &tc_repl_s3fifo);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_ARC), &tc_repl_arc);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_2Q), &tc_repl_2q);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_SIEVE), &tc_repl_sieve);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_WTINYLFU), &tc_repl_wtinylfu);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_LIRS), &tc_repl_lirs);
	assert_ptr_equal(tc_repl_ops_get(TC_REPL_WTINYLFU_HC), &tc_repl_wtinylfu_hc);
	assert_null(tc_repl_ops_get(8));
	assert_null(tc_repl_ops_get(~0u));
	for (unsigned id = TC_REPL_LRU; id <= TC_REPL_S3FIFO; id++) {
		const struct tc_repl_ops *ops = tc_repl_ops_get(id);

		assert_string_equal(ops->name, tc_replacement_name(id));
		assert_int_equal(tc_replacement_parse(ops->name), (int)id);
		assert_non_null(ops->create);
		assert_non_null(ops->destroy);
		assert_non_null(ops->insert);
		assert_non_null(ops->touch);
		assert_non_null(ops->remove);
		assert_non_null(ops->victim);
		assert_non_null(ops->mem);
	}
}

static void test_admission_and_fill(void **state)
{
	assert_string_equal(tc_admission_name(TC_ADMIT_ALWAYS), "always");
	assert_string_equal(tc_admission_name(TC_ADMIT_NHIT), "nhit");
	assert_string_equal(tc_admission_name(2), "unknown");
	assert_int_equal(tc_admission_parse("always"), TC_ADMIT_ALWAYS);
	assert_int_equal(tc_admission_parse("nhit"), TC_ADMIT_NHIT);
	assert_int_equal(tc_admission_parse("NHIT"), -EINVAL);
	assert_int_equal(tc_admission_parse(NULL), -EINVAL);
	assert_string_equal(tc_fill_name(TC_FILL_SECTORS), "sectors");
	assert_string_equal(tc_fill_name(TC_FILL_LINE), "line");
	assert_string_equal(tc_fill_name(7), "unknown");
	assert_int_equal(tc_fill_parse("line"), TC_FILL_LINE);
	assert_int_equal(tc_fill_parse("sectors"), TC_FILL_SECTORS);
	assert_int_equal(tc_fill_parse("lines"), -EINVAL);
}

static void test_volume_name_valid(void **state)
{
	char longest[TC_NAME_MAX], too_long[TC_NAME_MAX + 1];

	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = 0;
	memset(too_long, 'a', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = 0;
	assert_true(tc_volume_name_valid("db"));
	assert_true(tc_volume_name_valid("a.b_c-9"));
	assert_true(tc_volume_name_valid("..."));
	assert_true(tc_volume_name_valid(longest));
	assert_false(tc_volume_name_valid(too_long));
	assert_false(tc_volume_name_valid(""));
	assert_false(tc_volume_name_valid(NULL));
	assert_false(tc_volume_name_valid("."));
	assert_false(tc_volume_name_valid(".."));
	assert_false(tc_volume_name_valid("-db"));
	assert_false(tc_volume_name_valid("a/b"));
	assert_false(tc_volume_name_valid("a b"));
	assert_false(tc_volume_name_valid("d\xc3\xa9"));
}

/* tc_cache_size_for is the smallest device tc_cache_layout_for gives the lines on. */
static void test_cache_size_for(void **state)
{
	static const uint32_t line_sizes[] = { 4096, 16384, 65536 };
	static const uint64_t counts[] = { 16, 17, 1000, 4096, 123457, 1u << 20 };
	struct tc_cache_layout lay;
	uint64_t dev;

	for (unsigned i = 0; i < 3; i++)
		for (unsigned j = 0; j < 6; j++) {
			uint32_t ls = line_sizes[i];
			assert_int_equal(tc_cache_size_for(counts[j], ls, &dev), 0);
			assert_int_equal(dev % ls, 0);
			assert_int_equal(tc_cache_layout_for(dev, ls, &lay), 0);
			assert_true(lay.lines >= counts[j]);
			assert_true(lay.data_offset + lay.lines * ls <= dev);
			assert_true(lay.data_offset % 4096 == 0);
			/* one line less of device holds fewer lines (or none) */
			int r = tc_cache_layout_for(dev - ls, ls, &lay);
			assert_true(r == -ENOSPC || (r == 0 && lay.lines < counts[j]));
		}
	assert_int_equal(tc_cache_size_for(15, 4096, &dev), -ENOSPC);
	assert_int_equal(tc_cache_size_for(100, 3000, &dev), -EINVAL);
	assert_int_equal(tc_cache_size_for(1ull << 33, 4096, &dev), -EINVAL);
	assert_int_equal(tc_cache_layout_for(1 << 20, 8192 * 16, &lay), -EINVAL);
	assert_int_equal(tc_cache_layout_for(4096, 4096, &lay), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_policy),
		cmocka_unit_test(test_flush_rate),
		cmocka_unit_test(test_replacement),
		cmocka_unit_test(test_repl_ops_get),
		cmocka_unit_test(test_size_parse),
		cmocka_unit_test(test_admission_and_fill),
		cmocka_unit_test(test_volume_name_valid),
		cmocka_unit_test(test_cache_size_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
