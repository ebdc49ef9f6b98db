/* SPDX-License-Identifier: MIT */
/*
 * policy_engine.h - a real cache for the replacement policies' tests: memory devices,
 * a deterministic context, 4 KiB lines, one volume with sequential cutoff 0 and
 * admission always, so every access is one line and every miss fills it.  A policy
 * tested here runs behind the engine's own allocation and eviction (alloc.c:
 * can_evict() unmaps the victim before the policy returns), and its hits come from the
 * request paths (request.c), so what the tests see is what a volume does.
 *
 * Static functions only (pe_ prefix, unused ones allowed); include after cmocka.h.
 */
#ifndef TC_TEST_POLICY_ENGINE_H
#define TC_TEST_POLICY_ENGINE_H

#include <stdlib.h>
#include <string.h>
#include "tiercache.h"

#define PE_LINE 4096u

struct pe {
	tc_ctx *ctx;
	tc_dev *cd, *bd;
	tc_cache *c;
	tc_volume *v;
	uint8_t buf[PE_LINE];
};

static __attribute__((unused)) void pe_quiet(void *o, enum tc_log_level l, const char *m)
{
	(void)o;
	(void)l;
	(void)m;
}

/* pe_up - a cache of exactly @lines lines with replacement @repl (enum tc_replacement)
 * and one volume of @backing_lines lines in write policy @wp (enum tc_write_policy). */
static __attribute__((unused)) void pe_up(struct pe *e, unsigned repl, uint32_t lines, uint32_t backing_lines,
		  uint8_t wp)
{
	struct tc_ctx_opts o = { .mode = TC_CTX_DETERMINISTIC, .seed = 7 };
	struct tc_cache_opts co;
	struct tc_volume_settings set;
	struct tc_cache_stats cs;
	uint64_t size;

	memset(e, 0, sizeof(*e));
	assert_int_equal(tc_ctx_new(&o, &e->ctx), 0);
	tc_ctx_set_log(e->ctx, pe_quiet, NULL, TC_LOG_ERROR);
	assert_int_equal(tc_cache_size_for(lines, PE_LINE, &size), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, size, &e->cd), 0);
	assert_int_equal(tc_dev_new_memory(e->ctx, (uint64_t)(backing_lines + 256) * PE_LINE,
					   &e->bd), 0);
	tc_cache_opts_default(&co);
	co.line_size = PE_LINE;
	co.replacement = (uint8_t)repl;
	co.unprotected_writeback = true;
	tc_volume_settings_default(&set);
	set.seq_cutoff = 0;
	set.admission = TC_ADMIT_ALWAYS;
	set.write_policy = wp;
	assert_int_equal(tc_cache_format(e->ctx, e->cd, &co), 0);
	assert_int_equal(tc_backing_format(e->ctx, e->bd, "vol", &set), 0);
	assert_int_equal(tc_cache_open(e->ctx, e->cd, &e->c), 0);
	assert_int_equal(tc_cache_attach(e->c, e->bd, &set, 0, &e->v), 0);
	tc_cache_stats(e->c, &cs);
	assert_int_equal(cs.lines, lines);
}

static __attribute__((unused)) void pe_down(struct pe *e)
{
	assert_int_equal(tc_cache_close(e->c), 0);
	tc_dev_close(e->cd);
	tc_dev_close(e->bd);
	tc_ctx_free(e->ctx);
}

static __attribute__((unused)) void pe_read(struct pe *e, uint32_t line)
{
	assert_int_equal(tc_volume_pread(e->v, e->buf, PE_LINE, (uint64_t)line * PE_LINE), 0);
}

static __attribute__((unused)) void pe_write(struct pe *e, uint32_t line)
{
	memset(e->buf, (int)(line & 0xff), PE_LINE);
	assert_int_equal(tc_volume_pwrite(e->v, e->buf, PE_LINE, (uint64_t)line * PE_LINE, 0),
			 0);
}

/* pe_write_part - a 512-byte write into @line: a partial write of its one unit. */
static __attribute__((unused)) void pe_write_part(struct pe *e, uint32_t line)
{
	memset(e->buf, (int)(line & 0xff), 512);
	assert_int_equal(tc_volume_pwrite(e->v, e->buf, 512, (uint64_t)line * PE_LINE + 1024,
					  0), 0);
}

/* pe_resident - whether @line is in the cache (its one unit valid). */
static __attribute__((unused)) bool pe_resident(struct pe *e, uint32_t line)
{
	return tc_volume_valid_bytes(e->v, (uint64_t)line * PE_LINE, PE_LINE) == PE_LINE;
}

#endif /* TC_TEST_POLICY_ENGINE_H */
