/*
 * Two volumes, "a" and "b", on one small cache of 16 KiB lines, all on memory devices
 * (a 2 MiB cache, 64 MiB backings): the rig of the partition and range tests, which
 * watch what one volume's traffic does to the other's lines.
 *
 * t2_up() formats and opens it; t2_down() closes and frees everything.  Line numbers
 * below are volume line indexes (byte offset = line * T2_LINE); each request is 4 KiB.
 */
#ifndef TC_TEST_TWO_VOLUMES_H
#define TC_TEST_TWO_VOLUMES_H

#include "helpers.h"

#define T2_MIB (1024u * 1024u)
#define T2_LINE 16384u

struct t2_env {
	tc_ctx *ctx;
	tc_dev *cd, *ad, *bd;
	tc_cache *c;
	tc_volume *a, *b;
	uint64_t lines;            /* of the cache */
	struct t_log log;
};

/* Open the formatted cache and attach both volumes; e->lines is the cache's size. */
static inline void t2_open(struct t2_env *e)
{
	assert_int_equal(tc_cache_open(e->ctx, e->cd, &e->c), 0);
	assert_int_equal(tc_cache_attach(e->c, e->ad, NULL, 0, &e->a), 0);
	assert_int_equal(tc_cache_attach(e->c, e->bd, NULL, 0, &e->b), 0);
	struct tc_cache_stats cs;
	tc_cache_stats(e->c, &cs);
	e->lines = cs.lines;
}

/* Format and open: a context in @mode with @seed; "a" with write policy @a_wp, "b" with
 * @b_wp and flush rate @b_flush; sequential cutoff 0 for both; the write-back override
 * on (single memory devices). */
static inline void t2_up(struct t2_env *e, enum tc_ctx_mode mode, uint64_t seed,
			 uint8_t a_wp, uint8_t b_wp, uint8_t b_flush)
{
	memset(e, 0, sizeof(*e));
	e->ctx = t_ctx(mode, seed, TC_LOG_ERROR, &e->log);
	assert_int_equal(tc_dev_new_memory(e->ctx, 2 * T2_MIB, &e->cd), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, 64 * T2_MIB, &e->ad), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, 64 * T2_MIB, &e->bd), 0);
	struct tc_cache_opts co;
	tc_cache_opts_default(&co);
	co.line_size = T2_LINE;
	co.unprotected_writeback = true;
	struct tc_volume_settings s;
	tc_volume_settings_default(&s);
	s.seq_cutoff = 0;
	s.write_policy = a_wp;
	assert_int_equal(tc_cache_format(e->ctx, e->cd, &co), 0);
	assert_int_equal(tc_backing_format(e->ctx, e->ad, "a", &s), 0);
	s.write_policy = b_wp;
	s.flush_rate = b_flush;
	assert_int_equal(tc_backing_format(e->ctx, e->bd, "b", &s), 0);
	t2_open(e);
}

static inline void t2_close(struct t2_env *e)
{
	assert_int_equal(tc_cache_close(e->c), 0);
}

static inline void t2_down(struct t2_env *e)
{
	t2_close(e);
	tc_dev_close(e->cd);
	tc_dev_close(e->ad);
	tc_dev_close(e->bd);
	tc_ctx_free(e->ctx);
}

/* Read 4 KiB at the start of volume line @line. */
static inline void t2_rd(tc_volume *v, uint64_t line)
{
	uint8_t buf[4096];
	assert_int_equal(tc_volume_pread(v, buf, sizeof(buf), line * T2_LINE), 0);
}

/* Write 4 KiB of the byte (line & 0xff) at the start of volume line @line. */
static inline void t2_wr(tc_volume *v, uint64_t line)
{
	uint8_t buf[4096];
	memset(buf, (int)(line & 0xff), sizeof(buf));
	assert_int_equal(tc_volume_pwrite(v, buf, sizeof(buf), line * T2_LINE, 0), 0);
}

#endif
