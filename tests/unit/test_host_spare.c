/* SPDX-License-Identifier: MIT */
/*
 * test_host_spare.c - global hot spares of a host (src/host_spare.c): a host serving a
 * RAID 5 of three files gets two global spares, one too small; a member fails: the
 * spare that fits takes its slot (the host's thread, on the array's event) and the
 * rebuild brings back what was written; the small one stays in the pool; refusals
 * (a device in the pool, a member) change nothing; removal; a spare added while the
 * array is degraded is taken before the call returns.  Runs under ThreadSanitizer too
 * (the spare thread, the array's event and the caller meet there).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tiercache.h"
#include "helpers.h"

#define MIB (1024u * 1024u)

struct fx {
	struct t_host_fx *h;
	char m[3][320], small[320], big[320], big2[320];
};

static void make_file(const char *path, uint64_t size)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)size), 0);
	fclose(f);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	t_host_setup((void **)&f->h, "tc-hspare", TC_LOG_ERROR);
	tc_ctx *ctx = f->h->ctx;
	tc_dev *m[3], *arr;
	for (int i = 0; i < 3; i++) {
		snprintf(f->m[i], sizeof(f->m[i]), "%s/m%d", f->h->dir, i);
		make_file(f->m[i], 16 * MIB);
		assert_int_equal(tc_dev_open_spec(ctx, f->m[i], 0, 0, 0, &m[i]), 0);
	}
	snprintf(f->small, sizeof(f->small), "%s/small", f->h->dir);
	snprintf(f->big, sizeof(f->big), "%s/big", f->h->dir);
	snprintf(f->big2, sizeof(f->big2), "%s/big2", f->h->dir);
	make_file(f->small, 4 * MIB);
	make_file(f->big, 16 * MIB);
	make_file(f->big2, 16 * MIB);
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = 64 * 1024 };
	assert_int_equal(tc_array_create(ctx, "r5", &o, m, 3, NULL, 0, 0, &arr), 0);
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	assert_int_equal(tc_backing_format(ctx, arr, "v5", &s), 0);
	tc_dev_close(arr);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	void *h = f->h;
	free(f);
	return t_host_teardown(&h);
}

/* The device in slot @slot of @a (its name), "" if none. */
static const char *slot_dev(tc_dev *a, unsigned slot, struct tc_array_status *st)
{
	assert_int_equal(tc_array_status(a, st), 0);
	return st->member[slot].name ? st->member[slot].name : "";
}

/* Wait up to 10 s for @spec to hold slot @slot of @a and the rebuild to end. */
static void wait_rebuilt(tc_dev *a, unsigned slot, const char *spec)
{
	struct tc_array_status *st = malloc(sizeof(*st));
	assert_non_null(st);
	for (int i = 0; i < 1000; i++) {
		if (!strcmp(slot_dev(a, slot, st), spec) && !st->degraded &&
		    st->sync == TC_ARRAY_SYNC_IDLE)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	assert_string_equal(slot_dev(a, slot, st), spec);
	assert_false(st->degraded);
	assert_int_equal(st->sync, TC_ARRAY_SYNC_IDLE);
	free(st);
}

static void test_global_spares(void **state)
{
	struct fx *f = *state;
	tc_host *h;
	const char *specs[] = { f->m[0], f->m[1], f->m[2] };
	assert_int_equal(tc_host_assemble(f->h->ctx, specs, 3, NULL, &h), 0);
	tc_export *e = tc_host_find(h, "v5");
	assert_non_null(e);
	tc_dev *a = tc_host_array_at(h, 0, NULL);
	assert_non_null(a);
	uint8_t *buf = aligned_alloc(4096, 4 * MIB), *chk = aligned_alloc(4096, 4 * MIB);
	for (size_t i = 0; i < 4 * MIB; i++)
		buf[i] = (uint8_t)(i * 7 + i / 4096);
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, 4 * MIB, MIB), 0);

	/* The pool, in order; refusals leave it as it was. */
	char spec[400];
	uint64_t size;
	assert_int_equal(tc_host_add_global_spare(h, f->small, false), 0);
	assert_int_equal(tc_host_add_global_spare(h, f->big, false), 0);
	assert_int_equal(tc_host_add_global_spare(h, f->big, false), -EEXIST);
	assert_int_equal(tc_host_add_global_spare(h, f->m[1], false), -EEXIST);
	tc_dev *d;
	assert_int_equal(tc_host_open_spare(h, f->big, false, &d), -EEXIST);
	assert_int_equal(tc_host_global_spare_at(h, 0, spec, sizeof(spec), &size), 0);
	assert_string_equal(spec, f->small);
	assert_int_equal(size, 4 * MIB);
	assert_int_equal(tc_host_global_spare_at(h, 1, spec, sizeof(spec), NULL), 0);
	assert_string_equal(spec, f->big);
	assert_int_equal(tc_host_global_spare_at(h, 2, spec, sizeof(spec), NULL), -ENOENT);

	/* A member fails: the spare that fits takes its slot and rebuilds it. */
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	wait_rebuilt(a, 1, f->big);
	assert_int_equal(tc_host_global_spare_at(h, 0, spec, sizeof(spec), NULL), 0);
	assert_string_equal(spec, f->small);
	assert_int_equal(tc_host_global_spare_at(h, 1, spec, sizeof(spec), NULL), -ENOENT);
	/* What was written reads back with the failed member's chunks on the spare: fail
	 * another member, so that reads need the rebuilt one. */
	assert_int_equal(tc_array_fail_member(a, 0), 0);
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, chk, 4 * MIB, MIB), 0);
	assert_memory_equal(chk, buf, 4 * MIB);

	/* Degraded with only the small one in the pool: nothing fits, nothing moves. */
	nanosleep(&(struct timespec){ .tv_nsec = 300000000 }, NULL);
	assert_int_equal(tc_host_global_spare_at(h, 0, spec, sizeof(spec), NULL), 0);
	assert_string_equal(spec, f->small);
	/* A spare added now is taken before the call returns. */
	assert_int_equal(tc_host_add_global_spare(h, f->big2, false), 0);
	struct tc_array_status *st = malloc(sizeof(*st));
	assert_non_null(st);
	assert_string_equal(slot_dev(a, 0, st), f->big2);
	assert_int_equal(st->member[0].state, TC_MEMBER_REBUILDING);
	free(st);
	wait_rebuilt(a, 0, f->big2);
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, chk, 4 * MIB, MIB), 0);
	assert_memory_equal(chk, buf, 4 * MIB);

	assert_int_equal(tc_host_remove_global_spare(h, f->small), 0);
	assert_int_equal(tc_host_remove_global_spare(h, f->small), -ENOENT);
	assert_int_equal(tc_host_global_spare_at(h, 0, spec, sizeof(spec), NULL), -ENOENT);
	assert_int_equal(tc_host_close(h), 0);
	free(buf);
	free(chk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_global_spares, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
