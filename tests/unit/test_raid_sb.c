/* SPDX-License-Identifier: MIT */
/*
 * test_raid_sb.c - array member superblocks (src/raid/sb.c): the codec and its exact
 * refusals, one field corrupted at a time; tc_array_create's refusals (nothing
 * written); assembly in any order, stale members left out, dirty and degraded parity
 * arrays refused unless forced, and read-only assembly writing nothing.  Members are
 * sparse files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <xxhash.h>
#include <cmocka.h>

#include "raid/raid.h"
#include "tiercache-test.h"
#include "helpers.h"

/* ---- the codec --------------------------------------------------------------------- */

static void valid_sb(struct raid_sb *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->level = TC_RAID6;
	sb->chunk = 256 << 10;
	sb->copies = 1;
	sb->members = 6;
	sb->role = 2;
	sb->flags = RAID_SB_DIRTY;
	memset(sb->uuid, 0xa1, 16);
	snprintf(sb->name, sizeof(sb->name), "r6");
	sb->data_offset = RAID_SB_DATA_OFFSET;
	sb->member_size = 1024ull << 20;
	sb->events = 42;
	sb->rebuild_pos = 64 << 10;
	sb->ctime = 1000;
	sb->utime = 2000;
	sb->rebuild_min = 5000000;
	sb->rebuild_max = 80000000;
	sb->rebuild_priority = 30;
	sb->rebuild_depth = 4;
	for (unsigned i = 0; i < 6; i++) {
		memset(sb->slot[i].uuid, (int)(0x10 + i), 16);
		sb->slot[i].state = i == 4 ? TC_MEMBER_REBUILDING : TC_MEMBER_ACTIVE;
	}
	sb->slot[4].flags = RAID_SB_SLOT_READD;        /* a re-added member resyncing */
	memcpy(sb->member_uuid, sb->slot[2].uuid, 16);
}

static void reseal(uint8_t *b)
{
	uint64_t c = htole64(XXH64(b, RAID_SB_SIZE - 8, 0));
	memcpy(b + RAID_SB_SIZE - 8, &c, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static void test_roundtrip(void **state)
{
	struct raid_sb sb, back;
	uint8_t buf[RAID_SB_SIZE];
	char why[256];

	valid_sb(&sb);
	raid_sb_encode(&sb, buf);
	assert_int_equal(raid_sb_decode(buf, sizeof(buf), &back, why, sizeof(why)), RAID_SB_OK);
	assert_memory_equal(&sb, &back, sizeof(sb));
	/* A spare: no slot of its own. */
	sb.role = RAID_SB_ROLE_SPARE;
	memset(sb.member_uuid, 0x77, 16);
	raid_sb_encode(&sb, buf);
	assert_int_equal(raid_sb_decode(buf, sizeof(buf), &back, why, sizeof(why)), RAID_SB_OK);
	assert_int_equal(back.role, RAID_SB_ROLE_SPARE);
}

struct corruption {
	unsigned off, width;    /* width 4 or 8: a number; 1: a byte; 16: 16 zero bytes */
	uint64_t value;
	enum raid_sb_status st;
	const char *msg;        /* NULL: checked by its prefix below */
};

static const struct corruption corruptions[] = {
	{ 0, 4, 0x12345678, RAID_SB_BAD_MAGIC,
	  "array superblock: magic 0x12345678 is not 0x52414354" },
	{ 4, 4, 2, RAID_SB_BAD_VERSION,
	  "array superblock: version 2 is not the supported version 1" },
	{ 8, 4, 4, RAID_SB_BAD_FIELD,
	  "array superblock: level 4 is not raid0, raid1, raid5, raid6 or raid10" },
	{ 12, 4, 3 << 16, RAID_SB_BAD_FIELD,
	  "array superblock: chunk 196608 is not a power of two from 4096 to 67108864" },
	{ 12, 4, 2048, RAID_SB_BAD_FIELD,
	  "array superblock: chunk 2048 is not a power of two from 4096 to 67108864" },
	{ 16, 4, 2, RAID_SB_BAD_FIELD,
	  "array superblock: copies 2 for raid6 of 6 members (must be 1)" },
	{ 20, 4, 3, RAID_SB_BAD_FIELD, "array superblock: members 3: raid6 takes 4 to 32" },
	{ 20, 4, 33, RAID_SB_BAD_FIELD, "array superblock: members 33: raid6 takes 4 to 32" },
	{ 24, 4, 6, RAID_SB_BAD_FIELD,
	  "array superblock: role 6 is neither a slot below 6 nor spare (0xffffffff)" },
	{ 24, 4, 3, RAID_SB_BAD_FIELD,
	  "array superblock: slot 3 (this member's role) names another member" },
	{ 28, 4, 0x3, RAID_SB_BAD_FIELD, "array superblock: flags 0x00000003 has unknown bits" },
	{ 32, 16, 0, RAID_SB_BAD_FIELD, "array superblock: uuid is all zeros" },
	{ 48, 16, 0, RAID_SB_BAD_FIELD, "array superblock: member_uuid is all zeros" },
	{ 64, 1, '/', RAID_SB_BAD_FIELD,
	  "array superblock: name \"/6\" is not a valid array name" },
	{ 64, 1, 0, RAID_SB_BAD_FIELD,
	  "array superblock: name \"\" is not a valid array name" },
	{ 67, 1, 'x', RAID_SB_BAD_FIELD,
	  "array superblock: name \"r6\" has non-zero bytes after its terminator" },
	{ 96, 8, 4096, RAID_SB_BAD_FIELD,
	  "array superblock: data_offset 4096 is not a multiple of 4096 of at least 8192" },
	{ 96, 8, (8 << 20) + 512, RAID_SB_BAD_FIELD,
	  "array superblock: data_offset 8389120 is not a multiple of 4096 of at least 8192" },
	{ 104, 8, 0, RAID_SB_BAD_FIELD,
	  "array superblock: member_size 0 is not a positive multiple of the chunk (262144)" },
	{ 104, 8, (1ull << 30) + 4096, RAID_SB_BAD_FIELD,
	  "array superblock: member_size 1073745920 is not a positive multiple of the chunk "
	  "(262144)" },
	{ 112, 8, 0, RAID_SB_BAD_FIELD, "array superblock: events is 0 (the first write is 1)" },
	{ 120, 8, (1ull << 30) + 4096, RAID_SB_BAD_FIELD,
	  "array superblock: rebuild_pos 1073745920 is not a multiple of 4096 up to "
	  "member_size 1073741824" },
	{ 120, 8, 100, RAID_SB_BAD_FIELD,
	  "array superblock: rebuild_pos 100 is not a multiple of 4096 up to member_size "
	  "1073741824" },
	{ 136, 8, 999, RAID_SB_BAD_FIELD, "array superblock: utime 999 is before ctime 1000" },
	{ 144, 8, 90000000, RAID_SB_BAD_FIELD,
	  "array superblock: rebuild_min 90000000 is above rebuild_max 80000000" },
	{ 160, 4, 101, RAID_SB_BAD_FIELD,
	  "array superblock: rebuild_priority 101 is not 0 to 100" },
	{ 164, 4, 65, RAID_SB_BAD_FIELD,
	  "array superblock: rebuild_depth 65 is not 0 (the default) to 64" },
	{ 168, 8, 7, RAID_SB_BAD_FIELD,
	  "array superblock: keep_since 7 does not go with flags 0x1 and events 42" },
	{ 28, 4, RAID_SB_KEEPBITS | RAID_SB_BITMAP, RAID_SB_BAD_FIELD,
	  "array superblock: keep_since 0 does not go with flags 0x28 and events 42" },
	{ 200, 1, 1, RAID_SB_BAD_FIELD, "array superblock: reserved bytes 176..255 are not zero" },
	{ 256 + 5 * 32, 16, 0, RAID_SB_BAD_FIELD, "array superblock: slot 5 uuid is all zeros" },
	{ 256 + 1 * 32 + 16, 4, 2, RAID_SB_BAD_FIELD,
	  "array superblock: slot 1 state 2 is not active (0), faulty (1) or rebuilding (3)" },
	{ 256 + 1 * 32 + 20, 4, 9, RAID_SB_BAD_FIELD,
	  "array superblock: slot 1 flags 0x9: unknown bits" },
	{ 256 + 1 * 32 + 20, 4, 1, RAID_SB_BAD_FIELD,
	  "array superblock: slot 1 is marked re-added but is not rebuilding, or is "
	  "being replaced" },
	{ 256 + 1 * 32 + 24, 4, 9, RAID_SB_BAD_FIELD,
	  "array superblock: slot 1 reserved bytes are not zero" },
	{ 256 + 6 * 32, 1, 1, RAID_SB_BAD_FIELD,
	  "array superblock: slot 6 beyond the 6 members is not zero" },
	{ 1280 + 1 * 16, 1, 1, RAID_SB_BAD_FIELD, "array superblock: slot 1 names a member "
	  "being replaced but is not being rebuilt by another" },
	{ 2000, 1, 1, RAID_SB_BAD_FIELD,
	  "array superblock: reserved bytes 1792..4087 are not zero" },
	{ 500, 1, 1, RAID_SB_BAD_CHECKSUM, NULL },
};

/* Every field corrupted in turn (the checksum made right again, except where the
 * header is the point) gives its own refusal, word for word. */
static void test_refusals(void **state)
{
	struct raid_sb sb;
	uint8_t good[RAID_SB_SIZE], buf[RAID_SB_SIZE];
	char why[256];

	valid_sb(&sb);
	raid_sb_encode(&sb, good);
	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		const struct corruption *c = &corruptions[i];
		memcpy(buf, good, sizeof(buf));
		if (c->width == 4)
			put32(buf + c->off, (uint32_t)c->value);
		else if (c->width == 8)
			put64(buf + c->off, c->value);
		else if (c->width == 16)
			memset(buf + c->off, 0, 16);
		else
			buf[c->off] = (uint8_t)c->value;
		if (c->st == RAID_SB_BAD_FIELD)   /* the header checks are the point else */
			reseal(buf);
		why[0] = 0;
		enum raid_sb_status st = raid_sb_decode(buf, sizeof(buf), NULL, why, sizeof(why));
		if (st != c->st || (c->msg && strcmp(why, c->msg))) {
			print_error("corruption %zu (offset %u): status %d, \"%s\"; expected %d, "
				    "\"%s\"\n", i, c->off, st, why, c->st, c->msg ? c->msg : "");
			fail();
		}
		if (c->st == RAID_SB_BAD_CHECKSUM)
			assert_non_null(strstr(why, "array superblock: checksum 0x"));
	}
	assert_int_equal(raid_sb_decode(good, 100, NULL, why, sizeof(why)), RAID_SB_SHORT);
	assert_string_equal(why, "array superblock: 100 bytes, not 4096");
	/* RAID 10 and RAID 1 copies. */
	sb.level = TC_RAID10;
	sb.copies = 7;
	raid_sb_encode(&sb, buf);
	assert_int_equal(raid_sb_decode(buf, sizeof(buf), NULL, why, sizeof(why)),
			 RAID_SB_BAD_FIELD);
	assert_string_equal(why, "array superblock: members 6: raid10 takes 7 to 32");
	sb.copies = 1;
	raid_sb_encode(&sb, buf);
	assert_int_equal(raid_sb_decode(buf, sizeof(buf), NULL, why, sizeof(why)),
			 RAID_SB_BAD_FIELD);
	assert_string_equal(why, "array superblock: copies 1 for raid10 of 6 members (2 to "
			    "members)");
	sb.level = TC_RAID1;
	sb.copies = 5;
	raid_sb_encode(&sb, buf);
	assert_int_equal(raid_sb_decode(buf, sizeof(buf), NULL, why, sizeof(why)),
			 RAID_SB_BAD_FIELD);
	assert_string_equal(why, "array superblock: copies 5 for raid1 of 6 members (must "
			    "equal members)");
}

/* ---- create and assemble, on sparse files ------------------------------------------ */

#define NF 6
#define MEMBER_SIZE (RAID_SB_DATA_OFFSET + (4u << 20))

struct fx {
	char dir[256];
	char path[NF][300];
	tc_ctx *ctx;
	struct t_log log;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(t_mkdtemp(f->dir, sizeof(f->dir), "tc-raid-sb"), 0);
	for (unsigned i = 0; i < NF; i++) {
		snprintf(f->path[i], sizeof(f->path[i]), "%s/m%u", f->dir, i);
		int fd = open(f->path[i], O_CREAT | O_RDWR, 0600);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, MEMBER_SIZE), 0);
		close(fd);
	}
	f->ctx = t_ctx(TC_CTX_THREADED, 1, TC_LOG_INFO, &f->log);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	tc_ctx_free(f->ctx);
	t_rm_rf(f->dir);
	free(f);
	return 0;
}

static tc_dev *open_m(struct fx *f, unsigned i, unsigned flags)
{
	tc_dev *d;
	assert_int_equal(tc_dev_open_file(f->ctx, f->path[i], flags | TC_DEV_BUFFERED, 0, &d), 0);
	return d;
}

/* Create an array of @level over members @idx[0..n-1]. */
static int create(struct fx *f, const char *name, enum tc_raid_level_id level, uint32_t chunk,
		  const unsigned *idx, unsigned n, const unsigned *sp, unsigned ns,
		  unsigned flags, tc_dev **out)
{
	tc_dev *m[NF], *s[NF];
	struct tc_array_opts o = { .level = level, .chunk = chunk };
	for (unsigned i = 0; i < n; i++)
		m[i] = open_m(f, idx[i], 0);
	for (unsigned i = 0; i < ns; i++)
		s[i] = open_m(f, sp[i], 0);
	return tc_array_create(f->ctx, name, &o, m, n, s, ns, flags, out);
}

static int assemble(struct fx *f, const unsigned *idx, unsigned n, unsigned flags,
		    tc_dev **out)
{
	tc_dev *m[NF];
	for (unsigned i = 0; i < n; i++)
		m[i] = open_m(f, idx[i], flags & TC_ARRAY_READONLY ? TC_DEV_READONLY : 0);
	return tc_array_assemble(f->ctx, m, n, flags, out);
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
}

static void file_head(struct fx *f, unsigned i, uint8_t *buf, size_t len)
{
	int fd = open(f->path[i], O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

/* A RAID 0 with a chunk that is not a power of two (12 KiB) is made, recorded and
 * assembled back (members given in the other order), its data where it was. */
static void test_raid0_odd_chunk(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1 }, rev[] = { 1, 0 };
	tc_dev *a;
	size_t len = 1u << 20;
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(create(f, "odd0", TC_RAID0, 12 << 10, idx, 2, NULL, 0, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.chunk, 12 << 10);
	assert_int_equal(st.member_size % (12 << 10), 0);
	fill(w, len, 3);
	assert_int_equal(tc_dev_pwrite(a, w, len, 36 << 10, 0), 0);
	tc_dev_close(a);
	assert_int_equal(assemble(f, rev, 2, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.chunk, 12 << 10);
	assert_int_equal(tc_dev_pread(a, r, len, 36 << 10), 0);
	assert_memory_equal(w, r, len);
	tc_dev_close(a);
	free(w);
	free(r);
}

static void test_create_assemble_shuffled(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2, 3, 4 }, sp[] = { 5 };
	tc_dev *a;
	size_t len = 3u << 20;
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(create(f, "data6", TC_RAID6, 64 << 10, idx, 5, sp, 1, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member_size, 4u << 20);
	assert_int_equal(st.size, 3 * (4u << 20));
	fill(w, len, 1);
	assert_int_equal(tc_dev_pwrite(a, w, len, 1 << 20, 0), 0);
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_string_equal(id.name, "data6");
	assert_int_equal(id.nspares, 1);
	tc_dev_close(a);

	/* Clean on every member after the close, spare included. */
	struct tc_array_member_info mi;
	tc_dev *d = open_m(f, 5, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, d, &mi), 1);
	assert_int_equal(mi.role, -1);
	assert_false(mi.dirty);
	assert_int_equal(mi.copies_ok, 2);
	tc_dev_close(d);

	const unsigned shuffled[] = { 5, 3, 0, 4, 2, 1 };
	assert_int_equal(assemble(f, shuffled, 6, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_false(st.degraded);
	for (unsigned i = 0; i < 5; i++)
		assert_string_equal(st.member[i].name, f->path[i]);
	assert_int_equal(tc_dev_pread(a, r, len, 1 << 20), 0);
	assert_memory_equal(w, r, len);
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_true(id.dirty);
	assert_int_equal(id.nspares, 1);
	assert_string_equal(id.spare[0], f->path[5]);
	tc_dev_close(a);
	free(w);
	free(r);
}

/* The rebuild rates set live are kept in the superblocks: a restart keeps them, a
 * refused setting changes nothing, and going back to the defaults is kept too. */
static void test_rebuild_rates_kept(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2, 3 };
	struct tc_array_status st;
	tc_dev *a;

	assert_int_equal(create(f, "rates", TC_RAID5, 64 << 10, idx, 4, NULL, 0, 0, &a), 0);
	struct tc_array_rebuild_opts o = { .min_rate = 3000000, .max_rate = 40000000,
					   .priority = 25, .depth = 2 };
	assert_int_equal(tc_array_set_rebuild(a, &o), 0);
	struct tc_array_rebuild_opts bad = { .min_rate = 1, .max_rate = 2, .depth = 65 };
	assert_int_equal(tc_array_set_rebuild(a, &bad), -EINVAL);
	tc_dev_close(a);
	assert_int_equal(assemble(f, idx, 4, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.rebuild.min_rate, 3000000);
	assert_int_equal(st.rebuild.max_rate, 40000000);
	assert_int_equal(st.rebuild.priority, 25);
	assert_int_equal(st.rebuild.depth, 2);
	struct tc_array_rebuild_opts dflt = { 0 };
	assert_int_equal(tc_array_set_rebuild(a, &dflt), 0);
	tc_dev_close(a);
	assert_int_equal(assemble(f, idx, 4, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.rebuild.min_rate, TC_ARRAY_REBUILD_MIN_DEFAULT);
	assert_int_equal(st.rebuild.max_rate, TC_ARRAY_REBUILD_MAX_DEFAULT);
	assert_int_equal(st.rebuild.priority, 0);
	tc_dev_close(a);
}

static void test_stale_member(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2, 3 };
	tc_dev *a;
	size_t len = 1u << 20;
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(create(f, "r5", TC_RAID5, 64 << 10, idx, 4, NULL, 0, 0, &a), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	fill(w, len, 3);
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	tc_dev_close(a);

	const unsigned order[] = { 3, 1, 2, 0 };
	f->log.count = 0;
	assert_int_equal(assemble(f, order, 4, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	assert_int_equal(st.member[1].state, TC_MEMBER_FAULTY);
	assert_string_equal(st.member[1].name, "missing:slot1");
	/* Its place is no device to remove, by name or by slot. */
	assert_int_equal(tc_array_remove(a, "missing:slot1"), -EINVAL);
	assert_non_null(strstr(f->log.last, "array r5: missing:slot1 stands for a member "
				"missing since the assembly, not a device"));
	assert_int_equal(tc_array_remove(a, "1"), -EINVAL);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_string_equal(st.member[1].name, "missing:slot1");
	/* The stale member is named in the status, with its slot and why. */
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nleft, 1);
	assert_string_equal(id.left[0].device, f->path[1]);
	assert_int_equal(id.left[0].slot, 1);
	assert_true(id.left[0].events < id.events);
	assert_string_equal(id.left[0].why, "stale");
	assert_int_equal(tc_dev_pread(a, r, len, 0), 0);
	assert_memory_equal(w, r, len);
	/* Added back (a spare that takes its slot and rebuilds), it is not "left out"
	 * any more. */
	assert_int_equal(tc_array_add_spare(a, open_m(f, 1, 0)), 0);
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nleft, 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_false(st.degraded);
	assert_string_equal(st.member[1].name, f->path[1]);
	tc_dev_close(a);
	free(w);
	free(r);
}

/* A log that keeps every message. */
struct all_log {
	char text[16384];
};

static void all_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	struct all_log *l = opaque;
	size_t n = strlen(l->text);
	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", msg);
}

/*
 * Two members of a RAID 5 lost one after the other (md's classic: a cable or a
 * controller drops them): the array failed and no longer assembles.  Forced, the
 * freshest of them (the last to fail, which holds every write the array completed)
 * is taken back, the older one stays out, and the data written while the array ran
 * degraded reads back.  A forced assembly that can start without them takes none.
 */
static void test_force_takes_stale_back(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 };
	tc_dev *a;
	size_t len = 1u << 20;
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(create(f, "r5", TC_RAID5, 64 << 10, idx, 3, NULL, 0, 0, &a), 0);
	fill(w, len, 1);
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	assert_int_equal(tc_array_fail_member(a, 0), 0);
	fill(w, len, 2);   /* written degraded: member 0 never sees it */
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	assert_int_equal(tc_dev_flush(a), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.failed);
	tc_dev_close(a);

	/* Unforced: refused as too few (said so, not as dirty and degraded, with what
	 * --force would do), nothing written. */
	uint8_t before[3][8192], after[8192];
	for (unsigned i = 0; i < 3; i++)
		file_head(f, i, before[i], sizeof(before[i]));
	assert_int_equal(assemble(f, idx, 3, 0, &a), -ENODEV);
	assert_non_null(strstr(f->log.last, "array r5: too few members: 1 of 3 present (slot "
				"0, 1 missing), raid5 survives 1 missing; `tiercache array "
				"assemble --force` takes back the freshest of the 2 left out"));
	/* An inspection shows it failed, its slots and the members left out. */
	assert_int_equal(assemble(f, idx, 3, TC_ARRAY_READONLY | TC_ARRAY_INSPECT, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.failed);
	assert_string_equal(st.member[0].name, "missing:slot0");
	assert_string_equal(st.member[2].name, f->path[2]);
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nleft, 2);
	tc_dev_close(a);
	/* Without TC_ARRAY_INSPECT a read-only assembly is refused as any other. */
	assert_int_equal(assemble(f, idx, 3, TC_ARRAY_READONLY, &a), -ENODEV);
	for (unsigned i = 0; i < 3; i++) {
		file_head(f, i, after, sizeof(after));
		assert_memory_equal(before[i], after, sizeof(after));
	}

	/* Forced: member 1 back, member 0 left out, the degraded writes there. */
	struct all_log *l = calloc(1, sizeof(*l));
	tc_ctx_set_log(f->ctx, all_sink, l, TC_LOG_INFO);
	assert_int_equal(assemble(f, idx, 3, TC_ARRAY_FORCE, &a), 0);
	tc_ctx_set_log(f->ctx, t_log_sink, &f->log, TC_LOG_INFO);
	char expect[512];
	snprintf(expect, sizeof(expect), "array r5: forced: member %s (slot 1, event count",
		 f->path[1]);
	if (!strstr(l->text, expect) ||
	    !strstr(l->text, "lacks every write made after it left")) {
		print_error("log:\n%s\nexpected: %s\n", l->text, expect);
		fail();
	}
	free(l);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	assert_false(st.failed);
	assert_int_equal(st.member[0].state, TC_MEMBER_FAULTY);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	assert_string_equal(st.member[1].name, f->path[1]);
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nleft, 1);
	assert_string_equal(id.left[0].device, f->path[0]);
	assert_int_equal(tc_dev_pread(a, r, len, 0), 0);
	assert_memory_equal(w, r, len);
	tc_dev_close(a);

	/* Recorded: it assembles unforced now, degraded, member 1 in its slot. */
	assert_int_equal(assemble(f, idx, 3, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	assert_int_equal(tc_dev_pread(a, r, len, 0), 0);
	assert_memory_equal(w, r, len);
	tc_dev_close(a);

	/* Forced again, with enough members: member 0 stays out. */
	assert_int_equal(assemble(f, idx, 3, TC_ARRAY_FORCE, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member[0].state, TC_MEMBER_FAULTY);
	tc_dev_close(a);
	free(w);
	free(r);
}

/* RAID 10 of 4 (copy sets {0, 1} and {2, 3}): member 2 fails first, then 0 (writes
 * in between), then 1, which fails the array.  Unforced: too few members, said with
 * the copy-set rule and the hint.  Forced: member 1 is taken back (the freshest of
 * set {0, 1}, left without any member); member 2, the oldest, stays out although
 * stale, since its set keeps member 3; the data reads back. */
static void test_force_raid10(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2, 3 };
	tc_dev *a;
	size_t len = 1u << 20;
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(create(f, "r10", TC_RAID10, 64 << 10, idx, 4, NULL, 0, 0, &a), 0);
	fill(w, len, 5);
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	assert_int_equal(tc_array_fail_member(a, 2), 0);
	/* Which member fails the array depends on its copy set. */
	assert_int_equal(tc_array_fail_survives(a, 0), 1);
	assert_int_equal(tc_array_fail_survives(a, 3), 0);
	assert_int_equal(tc_array_fail_survives(a, 4), -EINVAL);
	fill(w, len, 6);
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	assert_int_equal(tc_array_fail_member(a, 0), 0);
	assert_int_equal(tc_array_fail_survives(a, 1), 0);
	fill(w, len, 7);   /* member 1 and 3 alone hold it */
	assert_int_equal(tc_dev_pwrite(a, w, len, 0, 0), 0);
	assert_int_equal(tc_dev_flush(a), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.failed);
	tc_dev_close(a);

	assert_int_equal(assemble(f, idx, 4, 0, &a), -ENODEV);
	assert_non_null(strstr(f->log.last, "array r10: too few members: 1 of 4 present "
				"(slot 0, 1, 2 missing), raid10 needs a member of every copy "
				"set (2 copies of each chunk); `tiercache array assemble "
				"--force` takes back"));
	assert_int_equal(assemble(f, idx, 4, TC_ARRAY_FORCE, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_false(st.failed);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[3].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[0].state, TC_MEMBER_FAULTY);
	assert_int_equal(st.member[2].state, TC_MEMBER_FAULTY);
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nleft, 2);
	assert_int_equal(tc_dev_pread(a, r, len, 0), 0);
	assert_memory_equal(w, r, len);
	tc_dev_close(a);
	free(w);
	free(r);
}

static void test_stale_named(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 };
	struct all_log *l = calloc(1, sizeof(*l));
	tc_dev *a;

	assert_int_equal(create(f, "m1", TC_RAID1, 0, idx, 3, NULL, 0, 0, &a), 0);
	assert_int_equal(tc_array_fail_member(a, 2), 0);
	tc_dev_close(a);
	tc_ctx_set_log(f->ctx, all_sink, l, TC_LOG_INFO);
	assert_int_equal(assemble(f, idx, 3, 0, &a), 0);
	char expect[512];
	snprintf(expect, sizeof(expect), "array m1: member %s (slot 2) is stale: its event "
		 "count 2 is older than the array's 4; it is left out and the array runs "
		 "without it", f->path[2]);
	if (!strstr(l->text, expect)) {
		print_error("log:\n%s\nexpected: %s\n", l->text, expect);
		fail();
	}
	tc_dev_close(a);
	tc_ctx_set_log(f->ctx, t_log_sink, &f->log, TC_LOG_INFO);
	free(l);
	/* One event behind (an update cut between members): still a member. */
	tc_dev *d = open_m(f, 1, 0);
	struct raid_sb sb;
	assert_int_equal(raid_sb_read(d, &sb, NULL, NULL, 0), 1);
	sb.events--;
	assert_int_equal(raid_sb_write(d, &sb), 0);
	tc_dev_close(d);
	const unsigned two[] = { 1, 0 };
	assert_int_equal(assemble(f, two, 2, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[2].state, TC_MEMBER_FAULTY);
	tc_dev_close(a);
}

/* Make the superblocks of members @idx dirty, as after a crash. */
static void make_dirty(struct fx *f, const unsigned *idx, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		tc_dev *d = open_m(f, idx[i], 0);
		struct raid_sb sb;
		assert_int_equal(raid_sb_read(d, &sb, NULL, NULL, 0), 1);
		sb.flags |= RAID_SB_DIRTY;
		assert_int_equal(raid_sb_write(d, &sb), 0);
		tc_dev_close(d);
	}
}

static void test_dirty_degraded(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 }, two[] = { 2, 0 };
	tc_dev *a;

	assert_int_equal(create(f, "r5d", TC_RAID5, 0, idx, 3, NULL, 0, 0, &a), 0);
	tc_dev_close(a);
	make_dirty(f, idx, 3);
	/* Dirty but complete: starts (a resync's business, not a refusal). */
	assert_int_equal(assemble(f, idx, 3, 0, &a), 0);
	tc_dev_close(a);
	make_dirty(f, idx, 3);
	assert_int_equal(assemble(f, two, 2, 0, &a), -EUCLEAN);
	assert_null(a);
	assert_non_null(strstr(f->log.last, "array r5d: dirty and degraded (slot 1 missing)"));
	assert_non_null(strstr(f->log.last, "`tiercache array assemble --force` starts it "
				"anyway"));
	/* Nothing was written: still dirty on disk. */
	struct tc_array_member_info mi;
	tc_dev *d = open_m(f, 0, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, d, &mi), 1);
	assert_true(mi.dirty);
	uint64_t events = mi.events;
	tc_dev_close(d);
	assert_int_equal(assemble(f, two, 2, TC_ARRAY_FORCE, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	tc_dev_close(a);
	d = open_m(f, 0, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, d, &mi), 1);
	assert_false(mi.dirty);
	assert_true(mi.events > events);
	assert_int_equal(mi.slot_state[1], TC_MEMBER_FAULTY);
	tc_dev_close(d);
	/* RAID 1 has no parity to be wrong: dirty and degraded starts. */
}

/* A clean array assembled without a member it last ran with (a typo in a member
 * list): refused with nothing written, as mdadm --assemble without --run; forced,
 * it starts degraded and records the member faulty, after which an assembly
 * without it goes on unforced (found by a new user's trial: `create backing` on
 * such a spec made the member stale for good). */
static void test_absent_member(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 }, two[] = { 0, 2 };
	struct tc_array_member_info mi;
	tc_dev *a, *d;

	assert_int_equal(create(f, "r5a", TC_RAID5, 0, idx, 3, NULL, 0, 0, &a), 0);
	tc_dev_close(a);
	d = open_m(f, 0, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, d, &mi), 1);
	uint64_t events = mi.events;
	tc_dev_close(d);
	assert_int_equal(assemble(f, two, 2, 0, &a), -ENODEV);
	assert_null(a);
	assert_non_null(strstr(f->log.last, "array r5a: slot 1, a member the array last ran "
				"with, is not among the devices given"));
	assert_non_null(strstr(f->log.last, "tiercache array assemble --force"));
	d = open_m(f, 0, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, d, &mi), 1);
	assert_int_equal(mi.events, events);            /* nothing written */
	assert_false(mi.dirty);
	tc_dev_close(d);
	assert_int_equal(assemble(f, two, 2, TC_ARRAY_FORCE, &a), 0);
	tc_dev_close(a);
	assert_int_equal(assemble(f, two, 2, 0, &a), 0); /* recorded faulty now */
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	tc_dev_close(a);
	/* Read-only (an inspection) never refuses. */
	assert_int_equal(assemble(f, idx, 3, TC_ARRAY_READONLY, &a), 0);
	tc_dev_close(a);
}

static void test_readonly_writes_nothing(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2, 3 };
	uint8_t before[NF][8192], after[8192];
	tc_dev *a;

	assert_int_equal(create(f, "ro", TC_RAID10, 0, idx, 4, NULL, 0, 0, &a), 0);
	tc_dev_close(a);
	for (unsigned i = 0; i < 4; i++)
		file_head(f, i, before[i], sizeof(before[i]));
	const unsigned three[] = { 3, 1, 0 };
	assert_int_equal(assemble(f, three, 3, TC_ARRAY_READONLY, &a), 0);
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_true(id.readonly);
	uint8_t buf[4096];
	assert_int_equal(tc_dev_pread(a, buf, sizeof(buf), 0), 0);
	tc_dev_close(a);
	for (unsigned i = 0; i < 4; i++) {
		file_head(f, i, after, sizeof(after));
		assert_memory_equal(before[i], after, sizeof(after));
	}
}

static void test_create_refusals(void **state)
{
	struct fx *f = *state;
	tc_dev *a;
	char expect[700];
	uint8_t head[8192], zero[8192] = { 0 };

	const unsigned dup[] = { 0, 1, 1 };
	assert_int_equal(create(f, "x", TC_RAID5, 0, dup, 3, NULL, 0, 0, &a), -EINVAL);
	snprintf(expect, sizeof(expect), "array x: device %s is given twice", f->path[1]);
	assert_string_equal(f->log.last, expect);
	const unsigned three[] = { 0, 1, 2 }, two[] = { 0, 1 };
	struct tc_array_opts o = { .level = TC_RAID5, .chunk = 3 << 12 };
	tc_dev *m[3] = { open_m(f, 0, 0), open_m(f, 1, 0), open_m(f, 2, 0) };
	assert_int_equal(tc_array_create(f->ctx, "x", &o, m, 3, NULL, 0, 0, &a), -EINVAL);
	assert_string_equal(f->log.last, "array: chunk 12288 bytes is not a power of two from "
			    "4096 to 67108864 (raid5; RAID 0 takes any multiple of 4096)");
	o.level = TC_RAID0;
	o.chunk = 5000;
	m[0] = open_m(f, 0, 0), m[1] = open_m(f, 1, 0);
	assert_int_equal(tc_array_create(f->ctx, "x", &o, m, 2, NULL, 0, 0, &a), -EINVAL);
	assert_string_equal(f->log.last, "array: chunk 5000 bytes is not a multiple of 4096 from "
			    "4096 to 67108864");
	assert_int_equal(create(f, "x", TC_RAID5, 0, two, 2, NULL, 0, 0, &a), -EINVAL);
	assert_string_equal(f->log.last, "array: 2 members for raid5 (it needs 3 to 32)");
	assert_int_equal(create(f, "bad/name", TC_RAID5, 0, three, 3, NULL, 0, 0, &a), -EINVAL);
	assert_non_null(strstr(f->log.last, "array: name \"bad/name\" is not valid"));
	/* A member holding a backing superblock, then one of another array. */
	tc_dev *d = open_m(f, 2, 0);
	struct tc_volume_settings set;
	tc_volume_settings_default(&set);
	assert_int_equal(tc_backing_format(f->ctx, d, "vol", &set), 0);
	tc_dev_close(d);
	assert_int_equal(create(f, "x", TC_RAID5, 0, three, 3, NULL, 0, 0, &a), -EBUSY);
	snprintf(expect, sizeof(expect), "array: member %s holds the tiercache backing of "
		 "volume \"vol\"; give --force to reuse it", f->path[2]);
	assert_string_equal(f->log.last, expect);
	for (unsigned i = 0; i < 2; i++) {
		file_head(f, i, head, sizeof(head));
		assert_memory_equal(head, zero, sizeof(head));   /* nothing written */
	}
	const unsigned other[] = { 3, 4, 5 };
	assert_int_equal(create(f, "other", TC_RAID5, 0, other, 3, NULL, 0, 0, &a), 0);
	tc_dev_close(a);
	const unsigned mix[] = { 0, 1, 4 };
	assert_int_equal(create(f, "x", TC_RAID5, 0, mix, 3, NULL, 0, 0, &a), -EBUSY);
	snprintf(expect, sizeof(expect), "array: member %s belongs to array \"other\"",
		 f->path[4]);
	assert_non_null(strstr(f->log.last, expect));
	/* Forced: it goes. */
	assert_int_equal(create(f, "x", TC_RAID5, 0, mix, 3, NULL, 0, TC_ARRAY_FORCE, &a), 0);
	tc_dev_close(a);
	/* A member of array x given to assemble "other": another array. */
	const unsigned foreign[] = { 3, 5, 0 };
	assert_int_equal(assemble(f, foreign, 3, 0, &a), -EINVAL);
	assert_non_null(strstr(f->log.last, "belongs to another array, \"x\""));
	/* The odd one out is named, whatever the event counts: x's made the higher by
	 * two more runs (the newest member was the reference once). */
	for (unsigned k = 0; k < 2; k++) {
		assert_int_equal(assemble(f, mix, 3, 0, &a), 0);
		tc_dev_close(a);
	}
	const unsigned odd[] = { 3, 0, 5 };
	snprintf(expect, sizeof(expect), "device %s belongs to another array, \"x\"",
		 f->path[0]);
	assert_int_equal(assemble(f, odd, 3, 0, &a), -EINVAL);
	assert_non_null(strstr(f->log.last, expect));
	const unsigned odd2[] = { 0, 3, 1 };
	snprintf(expect, sizeof(expect), "device %s belongs to another array, \"other\"",
		 f->path[3]);
	assert_int_equal(assemble(f, odd2, 3, 0, &a), -EINVAL);
	assert_non_null(strstr(f->log.last, expect));
	/* Too few: one of three members of a RAID 5 whose other member 4 is now x's. */
	const unsigned alone[] = { 3 };
	assert_int_equal(assemble(f, alone, 1, 0, &a), -ENODEV);
	assert_non_null(strstr(f->log.last, "array other: too few members: 1 of 3 present "
			       "(slot 1, 2 missing), raid5 survives 1 missing"));
	/* No superblock at all. */
	int fd = open(f->path[2], O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, zero, sizeof(zero), 0), (ssize_t)sizeof(zero));
	close(fd);
	const unsigned none[] = { 2 };
	assert_int_equal(assemble(f, none, 1, 0, &a), -EINVAL);
	snprintf(expect, sizeof(expect), "array: device %s holds no array member superblock",
		 f->path[2]);
	assert_string_equal(f->log.last, expect);
}

/* A member that held a cache (superblock copies at 0 and 8 KiB), forced: afterwards
 * it probes as an array member, not as the cache whose copy 1 would have survived. */
static void test_force_over_cache(void **state)
{
	struct fx *f = *state;
	tc_dev *d = open_m(f, 1, 0), *a;
	struct tc_cache_opts co;
	struct tc_probe p;

	tc_cache_opts_default(&co);
	assert_int_equal(tc_cache_format(f->ctx, d, &co), 0);
	tc_dev_close(d);
	const unsigned idx[] = { 0, 1, 2 };
	assert_int_equal(create(f, "fc", TC_RAID5, 0, idx, 3, NULL, 0, 0, &a), -EBUSY);
	assert_non_null(strstr(f->log.last, "holds tiercache cache"));
	assert_int_equal(create(f, "fc", TC_RAID5, 0, idx, 3, NULL, 0, TC_ARRAY_FORCE, &a), 0);
	tc_dev_close(a);
	d = open_m(f, 1, TC_DEV_READONLY);
	assert_int_equal(tc_dev_probe(f->ctx, d, &p), 0);
	assert_int_equal(p.kind, TC_PROBE_ARRAY);
	assert_string_equal(p.name, "fc");
	tc_dev_close(d);
}

/* "array:M1,M2,..." through tc_dev_open_spec: any order, a missing file skipped,
 * TC_DEV_ARRAY_FORCE for a dirty degraded RAID 5, TC_DEV_READONLY writing nothing. */
static void test_spec(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 };
	char spec[2048];
	tc_dev *a;

	assert_int_equal(create(f, "sp", TC_RAID5, 0, idx, 3, NULL, 0, 0, &a), 0);
	tc_dev_close(a);
	assert_null(tc_dev_spec_path("array:/x,/y"));
	snprintf(spec, sizeof(spec), "array:%s,%s,%s", f->path[2], f->path[0], f->path[1]);
	assert_int_equal(tc_dev_open_spec(f->ctx, spec, 0, 0, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_false(st.degraded);
	assert_string_equal(st.member[0].name, f->path[0]);
	tc_dev_close(a);
	make_dirty(f, idx, 3);
	snprintf(spec, sizeof(spec), "array:%s,%s/gone,%s", f->path[2], f->dir, f->path[0]);
	assert_int_equal(tc_dev_open_spec(f->ctx, spec, 0, 0, 0, &a), -EUCLEAN);
	uint8_t before[8192], after[8192];
	file_head(f, 0, before, sizeof(before));
	assert_int_equal(tc_dev_open_spec(f->ctx, spec, TC_DEV_READONLY, 0, 0, &a), 0);
	tc_dev_close(a);
	file_head(f, 0, after, sizeof(after));
	assert_memory_equal(before, after, sizeof(after));
	assert_int_equal(tc_dev_open_spec(f->ctx, spec, TC_DEV_ARRAY_FORCE, 0, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_true(st.degraded);
	tc_dev_close(a);
	assert_int_equal(tc_dev_open_spec(f->ctx, "array:", 0, 0, 0, &a), -EINVAL);
	assert_string_equal(f->log.last, "device spec \"array:\": no member after \"array:\"");
}

/* The superblocks and the rebuild code together: a member rebuilding at a checkpoint
 * is persisted, comes back in that state and the rebuild resumes from there; a spare
 * added online gets its superblock; a spare that takes a failed member's slot is
 * recorded in that slot. */
static void test_rebuild_checkpoint_spares(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 }, sp[] = { 3 };
	tc_dev *a;

	assert_int_equal(create(f, "rb", TC_RAID5, 0, idx, 3, sp, 1, 0, &a), 0);
	struct tc_array *ta = (struct tc_array *)a;
	atomic_store(&ta->m[1].state, TC_MEMBER_REBUILDING);
	atomic_store(&ta->rebuild_pos, 1u << 20);
	assert_int_equal(ta->persist(ta), 0);
	tc_dev_close(a);

	const unsigned all[] = { 3, 2, 1, 0 };
	assert_int_equal(assemble(f, all, 4, 0, &a), 0);
	ta = (struct tc_array *)a;
	/* The rebuild resumed from the checkpoint (never before it) and completes. */
	int st1 = atomic_load(&ta->m[1].state);
	assert_true(st1 == TC_MEMBER_REBUILDING || st1 == TC_MEMBER_ACTIVE);
	assert_true(st1 == TC_MEMBER_ACTIVE || atomic_load(&ta->rebuild_pos) >= 1u << 20);
	struct tc_array_identity id;
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nspares, 1);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(atomic_load(&ta->m[1].state), TC_MEMBER_ACTIVE);
	/* add-spare: its superblock says spare of this array after the next persist. */
	tc_dev *d = open_m(f, 4, 0);
	assert_int_equal(tc_array_add_spare(a, d), 0);
	assert_int_equal(ta->persist(ta), 0);
	tc_dev *r = open_m(f, 4, TC_DEV_READONLY);
	struct tc_array_member_info mi;
	assert_int_equal(tc_array_examine(f->ctx, r, &mi), 1);
	assert_int_equal(mi.role, -1);
	assert_string_equal(mi.uuid, id.uuid);
	tc_dev_close(r);
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nspares, 2);
	/* Takeover: a member fails, a spare takes its slot and the superblocks say so. */
	assert_int_equal(tc_array_fail_member(a, 2), 0);
	assert_int_equal(tc_array_identity(a, &id), 0);
	assert_int_equal(id.nspares, 1);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(ta->persist(ta), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member[2].state, TC_MEMBER_ACTIVE);
	assert_int_equal(st.member[1].state, TC_MEMBER_ACTIVE);
	tc_dev_close(a);
	/* On the devices: the spare given at create (device 3) took slot 2, the one
	 * added later (device 4) is still a spare; the failed member's device (2) was
	 * left behind. */
	tc_dev *x = open_m(f, 3, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, x, &mi), 1);
	assert_int_equal(mi.role, 2);
	tc_dev_close(x);
	x = open_m(f, 4, TC_DEV_READONLY);
	assert_int_equal(tc_array_examine(f->ctx, x, &mi), 1);
	assert_int_equal(mi.role, -1);
	tc_dev_close(x);
	/* And the array assembles from slots 0, 1 and the former spare, whole. */
	const unsigned now[] = { 3, 0, 1, 4 };
	assert_int_equal(assemble(f, now, 4, 0, &a), 0);
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.faulty, 0);
	assert_int_equal(st.redundancy, 1);
	tc_dev_close(a);
}

/* A write completed after a member failure completes only once the other members'
 * superblocks record the failure: a crash right after it cannot bring the failed
 * member back as current. */
static void test_failure_recorded_before_ack(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 };
	uint8_t *buf = aligned_alloc(4096, 65536);
	tc_dev *a;

	fill(buf, 65536, 9);
	assert_int_equal(create(f, "ack", TC_RAID1, 0, idx, 3, NULL, 0, 0, &a), 0);
	for (unsigned round = 0; round < 20; round++) {
		unsigned m = round % 2 ? 2 : 1;
		assert_int_equal(tc_array_fail_member(a, m), 0);
		assert_int_equal(tc_dev_pwrite(a, buf, 65536, (uint64_t)round << 16, 0), 0);
		tc_dev *d = open_m(f, 0, TC_DEV_READONLY);
		struct raid_sb sb;
		assert_int_equal(raid_sb_read(d, &sb, NULL, NULL, 0), 1);
		tc_dev_close(d);
		assert_int_equal(sb.slot[m].state, TC_MEMBER_FAULTY);
		tc_dev_close(a);
		/* Back to three members for the next round. */
		assert_int_equal(create(f, "ack", TC_RAID1, 0, idx, 3, NULL, 0, TC_ARRAY_FORCE |
					TC_ARRAY_ASSUME_CLEAN, &a), 0);
	}
	tc_dev_close(a);
	free(buf);
}

/* Re-creating an array over its own members in their order, as mdadm --create
 * --assume-clean recovers one whose superblocks were lost: with TC_ARRAY_ASSUME_CLEAN
 * and TC_ARRAY_ALL_WRITTEN (the command's --assume-clean) the data areas are left as
 * they were, the start included (a backing's superblock lives there), and a rebuild
 * afterwards reconstructs them instead of writing zeros. */
static void test_recreate_keeps_data(void **state)
{
	struct fx *f = *state;
	const unsigned idx[] = { 0, 1, 2 }, sp[] = { 3 };
	size_t len = 1u << 20;
	uint8_t *buf = aligned_alloc(4096, len), *back = aligned_alloc(4096, len);
	tc_dev *a;

	fill(buf, len, 17);
	assert_int_equal(create(f, "rc", TC_RAID5, 64 << 10, idx, 3, NULL, 0, 0, &a), 0);
	assert_int_equal(tc_dev_pwrite(a, buf, len, 0, 0), 0);
	tc_dev_close(a);
	assert_int_equal(create(f, "rc", TC_RAID5, 64 << 10, idx, 3, sp, 1, TC_ARRAY_FORCE |
				TC_ARRAY_ASSUME_CLEAN | TC_ARRAY_ALL_WRITTEN, &a), 0);
	assert_int_equal(tc_dev_pread(a, back, len, 0), 0);
	assert_memory_equal(back, buf, len);
	/* A member lost: the spare is rebuilt from the data, and then holds it. */
	assert_int_equal(tc_array_fail_member(a, 0), 0);
	assert_int_equal(tc_array_wait(a), 0);
	assert_int_equal(tc_array_fail_member(a, 1), 0);
	memset(back, 0, len);
	assert_int_equal(tc_dev_pread(a, back, len, 0), 0);
	assert_memory_equal(back, buf, len);
	tc_dev_close(a);
	free(buf);
	free(back);
}

static void test_sizes(void **state)
{
	struct fx *f = *state;
	tc_dev *a;

	assert_int_equal(truncate(f->path[0], MEMBER_SIZE + (1u << 20)), 0);
	const unsigned idx[] = { 0, 1, 2 };
	assert_int_equal(create(f, "sz", TC_RAID5, 0, idx, 3, NULL, 0, 0, &a), 0);
	struct tc_array_status st;
	assert_int_equal(tc_array_status(a, &st), 0);
	assert_int_equal(st.member_size, 4u << 20);
	tc_dev_close(a);
	assert_int_equal(truncate(f->path[3], RAID_SB_DATA_OFFSET + 4096), 0);
	const unsigned small[] = { 3, 4, 5 };
	assert_int_equal(create(f, "sm", TC_RAID5, 0, small, 3, NULL, 0, 0, &a), -EINVAL);
	assert_non_null(strstr(f->log.last, "is too small"));
}

/*
 * RAID 0 over parity arrays (RAID 50), created with member superblocks: its data
 * starts on the legs' stripe grid (16 MiB stripes of a RAID 5 of three with 8 MiB
 * chunks: 16 MiB into each leg, not TC_ARRAY_DATA_OFFSET's 8), so with an outer chunk
 * of one leg stripe the array says partial stripes are expensive, with the legs'
 * stripe and chunk, and a cache in front of it writes whole leg stripes.
 */
static void test_create_nested_on_leg_grid(void **state)
{
	struct fx *f = *state;
	const uint64_t size = 48ull << 20, leg_chunk = 8u << 20;
	tc_dev *leg[2], *m[3], *a;
	char path[300];
	for (unsigned l = 0; l < 2; l++) {
		for (unsigned i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s/leg%u-%u", f->dir, l, i);
			assert_int_equal(tc_dev_open_file(f->ctx, path, TC_DEV_CREATE |
							  TC_DEV_BUFFERED, size, &m[i]), 0);
		}
		struct tc_array_opts lo = { .level = TC_RAID5, .chunk = (uint32_t)leg_chunk };
		assert_int_equal(tc_dev_new_array(f->ctx, &lo, m, 3, &leg[l]), 0);
	}
	struct tc_array_opts o = { .level = TC_RAID0, .chunk = (uint32_t)(2 * leg_chunk) };
	assert_int_equal(tc_array_create(f->ctx, "r50", &o, leg, 2, NULL, 0, 0, &a), 0);
	struct tc_dev_limits lim;
	tc_dev_limits(a, &lim);
	assert_true(lim.partial_stripe_expensive);
	assert_int_equal(lim.io_opt, 2 * leg_chunk);
	assert_int_equal(lim.io_min, leg_chunk);
	struct tc_array_member_info info;
	assert_int_equal(tc_array_examine(f->ctx, leg[0], &info), 1);
	assert_int_equal(info.data_offset, 2 * leg_chunk);
	/* Data written through reads back. */
	uint8_t *w = malloc(1u << 20), *r = malloc(1u << 20);
	fill(w, 1u << 20, 9);
	assert_int_equal(tc_dev_pwrite(a, w, 1u << 20, 2 * leg_chunk - 4096, 0), 0);
	assert_int_equal(tc_dev_pread(a, r, 1u << 20, 2 * leg_chunk - 4096), 0);
	assert_memory_equal(r, w, 1u << 20);
	free(w);
	free(r);
	tc_dev_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test_setup_teardown(test_raid0_odd_chunk, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_create_assemble_shuffled, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_rates_kept, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_stale_member, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_stale_named, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_force_takes_stale_back, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_force_raid10, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_dirty_degraded, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_absent_member, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readonly_writes_nothing, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_create_nested_on_leg_grid, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_create_refusals, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_force_over_cache, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_spec, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_checkpoint_spares, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_recreate_keeps_data, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_failure_recorded_before_ack, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_sizes, fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
