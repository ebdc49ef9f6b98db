/* SPDX-License-Identifier: MIT */
/*
 * model_test.c - checks the stress tests' reference model (model.c) on its own, with
 * no engine: an oracle nobody tested would let bugs through silently, or cry wolf.
 * Each case drives the model through a short history and asserts exactly which values
 * it allows under invariant 1 (current) and invariant 2 (recovered), and the words of
 * its failure messages.  Exits 0 when every case passes, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__,    \
				__LINE__, __func__, #cond);                           \
			return 1;                                                     \
		}                                                                     \
	} while (0)

/* A sector's worth of data, passed by value so helpers can return one. */
struct sector_buf {
	uint8_t b[TC_MODEL_SECTOR];
};

/* The 512 bytes of write @id (0: zeros) for sector @sector of volume @vol. */
static struct sector_buf value(unsigned vol, uint64_t sector, uint32_t id)
{
	struct sector_buf v;

	if (id == 0)
		memset(v.b, 0, sizeof(v.b));
	else
		tc_model_pattern(vol, sector, id, v.b);
	return v;
}

/* tc_model_check() with a message into @msg, on the value of write @id of @src_vol /
 * @src_sector read from @sector of volume @vol. */
static bool check_msg(const struct tc_model *m, unsigned vol, uint64_t sector,
		      unsigned src_vol, uint64_t src_sector, uint32_t id,
		      enum tc_model_rule rule, char *msg, size_t msglen)
{
	struct sector_buf v = value(src_vol, src_sector, id);

	return tc_model_check(m, vol, sector, v.b, rule, msg, msglen);
}

static bool allows(const struct tc_model *m, unsigned vol, uint64_t sector, uint32_t id,
		   enum tc_model_rule rule)
{
	return check_msg(m, vol, sector, vol, sector, id, rule, NULL, 0);
}

static void collapse(struct tc_model *m, unsigned vol, uint64_t sector, uint32_t id)
{
	struct sector_buf v = value(vol, sector, id);

	tc_model_collapse(m, vol, sector, v.b);
}

/* A whole write of one sector: submit, complete. */
static uint32_t write1(struct tc_model *m, unsigned vol, uint64_t sector, bool fua,
		       int result)
{
	uint32_t id = tc_model_new_write_id(m);

	tc_model_submit(m, vol, sector, 1, TC_MODEL_WRITE, id);
	tc_model_complete(m, vol, sector, 1, result, fua);
	return id;
}

static int test_pattern(void)
{
	uint8_t buf[TC_MODEL_SECTOR], other[TC_MODEL_SECTOR];
	struct tc_found f;

	tc_model_pattern(2, 77, 9, buf);
	tc_model_identify(buf, &f);
	CHECK(f.kind == TC_FOUND_WRITE && f.vol == 2 && f.sector == 77 && f.write_id == 9);
	tc_model_pattern(2, 78, 9, other);
	CHECK(memcmp(buf + 32, other + 32, TC_MODEL_SECTOR - 32) != 0);
	tc_model_pattern(2, 77, 10, other);
	CHECK(memcmp(buf + 32, other + 32, TC_MODEL_SECTOR - 32) != 0);
	buf[300] ^= 1;
	tc_model_identify(buf, &f);
	CHECK(f.kind == TC_FOUND_DAMAGED && f.write_id == 9);
	memset(buf, 0, sizeof(buf));
	tc_model_identify(buf, &f);
	CHECK(f.kind == TC_FOUND_ZEROES);
	buf[511] = 1;
	tc_model_identify(buf, &f);
	CHECK(f.kind == TC_FOUND_GARBAGE);
	return 0;
}

static int test_write_and_flush(void)
{
	uint64_t sizes[1] = { 8 * 512 };
	struct tc_model *m = tc_model_new(1, sizes);
	uint32_t w1, w2;
	uint64_t token;
	char msg[512];

	CHECK(m);
	CHECK(allows(m, 0, 3, 0, TC_MODEL_CURRENT));
	CHECK(!check_msg(m, 0, 3, 0, 3, 1, TC_MODEL_CURRENT, msg, sizeof(msg)));
	CHECK(strcmp(msg, "found write 1 (never issued), allowed zeros") == 0);

	w1 = write1(m, 0, 3, false, 0);
	CHECK(allows(m, 0, 3, w1, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 3, 0, TC_MODEL_CURRENT));
	CHECK(allows(m, 0, 3, 0, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 3, w1, TC_MODEL_RECOVERED));

	/* A flush submitted before w2 completed covers w1 only. */
	w2 = tc_model_new_write_id(m);
	tc_model_submit(m, 0, 3, 1, TC_MODEL_WRITE, w2);
	CHECK(tc_model_busy(m, 0, 3, 1));
	CHECK(!tc_model_busy(m, 0, 4, 4));
	token = tc_model_flush_begin(m, 0);
	tc_model_complete(m, 0, 3, 1, 0, false);
	tc_model_flush_end(m, 0, token, 0);
	CHECK(!allows(m, 0, 3, 0, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 3, w1, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 3, w2, TC_MODEL_RECOVERED));
	CHECK(tc_model_history_len(m, 0, 3) == 2);
	CHECK(!check_msg(m, 0, 3, 0, 3, w1, TC_MODEL_CURRENT, msg, sizeof(msg)));
	CHECK(strcmp(msg, "found write 1 (stale: an older value of this sector), "
		     "allowed write 2") == 0);

	/* A failed flush changes nothing; a later good one covers w2. */
	token = tc_model_flush_begin(m, 0);
	tc_model_flush_end(m, 0, token, -5);
	CHECK(allows(m, 0, 3, w1, TC_MODEL_RECOVERED));
	token = tc_model_flush_begin(m, 0);
	tc_model_flush_end(m, 0, token, 0);
	CHECK(!allows(m, 0, 3, w1, TC_MODEL_RECOVERED));
	CHECK(tc_model_history_len(m, 0, 3) == 1);
	tc_model_free(m);
	return 0;
}

static int test_fua_discard_zeroes(void)
{
	uint64_t sizes[1] = { 8 * 512 };
	struct tc_model *m = tc_model_new(1, sizes);
	uint32_t w1, w2;
	char list[256];

	CHECK(m);
	write1(m, 0, 0, false, 0);
	w1 = write1(m, 0, 0, true, 0);
	CHECK(tc_model_history_len(m, 0, 0) == 1);
	CHECK(!allows(m, 0, 0, 0, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 0, w1, TC_MODEL_RECOVERED));

	/* Discard: previous value or zeros, now and after a crash. */
	tc_model_submit(m, 0, 0, 2, TC_MODEL_DISCARD, 0);
	tc_model_complete(m, 0, 0, 2, 0, false);
	CHECK(allows(m, 0, 0, w1, TC_MODEL_CURRENT));
	CHECK(allows(m, 0, 0, 0, TC_MODEL_CURRENT));
	CHECK(allows(m, 0, 1, 0, TC_MODEL_CURRENT));
	tc_model_allowed(m, 0, 0, TC_MODEL_CURRENT, list, sizeof(list));
	CHECK(strcmp(list, "zeros, write 2") == 0);

	/* A flush with the discard as base keeps the value behind it. */
	tc_model_flush_end(m, 0, tc_model_flush_begin(m, 0), 0);
	CHECK(allows(m, 0, 0, w1, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 0, 0, TC_MODEL_RECOVERED));

	/* Write-zeroes is a write: the old value is gone. */
	w2 = write1(m, 0, 0, false, 0);
	tc_model_submit(m, 0, 0, 1, TC_MODEL_ZEROES, 0);
	tc_model_complete(m, 0, 0, 1, 0, true);
	CHECK(allows(m, 0, 0, 0, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 0, w2, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 0, w1, TC_MODEL_RECOVERED));
	CHECK(tc_model_history_len(m, 0, 0) == 1);
	tc_model_free(m);
	return 0;
}

static int test_failed_write(void)
{
	uint64_t sizes[1] = { 4 * 512 };
	struct tc_model *m = tc_model_new(1, sizes);
	uint32_t w1, w2, w3;

	CHECK(m);
	w1 = write1(m, 0, 1, false, 0);
	w2 = write1(m, 0, 1, false, -5);
	CHECK(allows(m, 0, 1, w1, TC_MODEL_CURRENT));
	CHECK(allows(m, 0, 1, w2, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 1, 0, TC_MODEL_CURRENT));
	/* A good write ends the doubt. */
	w3 = write1(m, 0, 1, false, 0);
	CHECK(allows(m, 0, 1, w3, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 1, w2, TC_MODEL_CURRENT));
	/* A failed FUA write does not become durable. */
	tc_model_flush_end(m, 0, tc_model_flush_begin(m, 0), 0);
	write1(m, 0, 1, true, -5);
	CHECK(allows(m, 0, 1, w3, TC_MODEL_RECOVERED));
	tc_model_free(m);
	return 0;
}

static int test_crash_rules(void)
{
	uint64_t sizes[2] = { 4 * 512, 4 * 512 };
	struct tc_model *m = tc_model_new(2, sizes);
	uint32_t w1, w2;
	char msg[512];

	CHECK(m);
	w1 = write1(m, 0, 2, false, 0);
	tc_model_flush_end(m, 1, tc_model_flush_begin(m, 1), 0);   /* other volume */
	CHECK(allows(m, 0, 2, 0, TC_MODEL_RECOVERED));
	tc_model_flush_end(m, 0, tc_model_flush_begin(m, 0), 0);
	CHECK(!allows(m, 0, 2, 0, TC_MODEL_RECOVERED));

	/* A write in flight at the crash may or may not have landed. */
	w2 = tc_model_new_write_id(m);
	tc_model_submit(m, 0, 2, 2, TC_MODEL_WRITE, w2);
	CHECK(allows(m, 0, 2, w1, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 2, w2, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 3, w2, TC_MODEL_RECOVERED));
	CHECK(!check_msg(m, 0, 2, 0, 2, w2, TC_MODEL_CURRENT, msg, sizeof(msg)));

	/* Another sector's and another volume's data are named as such. */
	CHECK(!check_msg(m, 0, 2, 0, 3, w2, TC_MODEL_RECOVERED, msg, sizeof(msg)));
	CHECK(strstr(msg, "found write 2 of sector 3 (another sector's data)") == msg);
	CHECK(!check_msg(m, 0, 2, 1, 2, w2, TC_MODEL_RECOVERED, msg, sizeof(msg)));
	CHECK(strstr(msg, "of volume 1 (another volume's data)") != NULL);

	/* Collapse: the value found becomes the only one. */
	collapse(m, 0, 2, w2);
	collapse(m, 0, 3, 0);
	CHECK(!tc_model_busy(m, 0, 2, 2));
	CHECK(tc_model_history_len(m, 0, 2) == 1);
	CHECK(allows(m, 0, 2, w2, TC_MODEL_CURRENT));
	CHECK(!allows(m, 0, 2, w1, TC_MODEL_RECOVERED));
	CHECK(allows(m, 0, 3, 0, TC_MODEL_CURRENT));
	tc_model_free(m);
	return 0;
}

static int test_long_history(void)
{
	uint64_t sizes[1] = { 512 };
	struct tc_model *m = tc_model_new(1, sizes);
	uint32_t first = 0, last = 0;
	char list[64];

	CHECK(m);
	for (int i = 0; i < 1000; i++) {
		last = write1(m, 0, 0, false, 0);
		if (i == 0)
			first = last;
	}
	CHECK(tc_model_history_len(m, 0, 0) == 1001);
	CHECK(allows(m, 0, 0, first, TC_MODEL_RECOVERED));
	CHECK(!allows(m, 0, 0, first, TC_MODEL_CURRENT));
	tc_model_allowed(m, 0, 0, TC_MODEL_RECOVERED, list, sizeof(list));
	CHECK(strlen(list) < sizeof(list));
	tc_model_flush_end(m, 0, tc_model_flush_begin(m, 0), 0);
	CHECK(tc_model_history_len(m, 0, 0) == 1);
	CHECK(allows(m, 0, 0, last, TC_MODEL_RECOVERED));
	tc_model_free(m);
	return 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cases[] = {
		{ "pattern", test_pattern },
		{ "write_and_flush", test_write_and_flush },
		{ "fua_discard_zeroes", test_fua_discard_zeroes },
		{ "failed_write", test_failed_write },
		{ "crash_rules", test_crash_rules },
		{ "long_history", test_long_history },
	};
	unsigned passed = 0, failed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].fn() == 0) {
			passed++;
		} else {
			failed++;
			fprintf(stderr, "case %s failed\n", cases[i].name);
		}
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
