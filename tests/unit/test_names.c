/* SPDX-License-Identifier: MIT */
/*
 * test_names.c - enum names and parsers of src/names.c, and tc_repl_ops_get().
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tiercache.h"
#include "policy.h"

static void test_write_policy(void **state)
{
	static const char *const names[] = { "wt", "wb", "wa", "pt" };
	static const unsigned values[] = { TC_WP_WT, TC_WP_WB, TC_WP_WA, TC_WP_PT };

	for (unsigned i = 0; i < 4; i++) {
		assert_string_equal(tc_write_policy_name(values[i]), names[i]);
		assert_int_equal(tc_write_policy_parse(names[i]), (int)values[i]);
	}
	assert_string_equal(tc_write_policy_name(4), "unknown");
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
	assert_string_equal(tc_replacement_name(2), "unknown");
	assert_int_equal(tc_replacement_parse("lru"), TC_REPL_LRU);
	assert_int_equal(tc_replacement_parse("s3fifo"), TC_REPL_S3FIFO);
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
	assert_null(tc_repl_ops_get(2));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_policy),
		cmocka_unit_test(test_flush_rate),
		cmocka_unit_test(test_replacement),
		cmocka_unit_test(test_repl_ops_get),
		cmocka_unit_test(test_size_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
