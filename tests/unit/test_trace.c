/* SPDX-License-Identifier: MIT */
/*
 * test_trace.c - the trace readers of src/replay/trace.c and rstream.c, and the layout
 * of src/replay/replay.c: every format read from a hand-written fixture
 * (tests/fixtures/traces/, made from the formats of traces/README.md) with every field of
 * every request checked; the same fixtures gzip-, bzip2-, xz- and zstd-compressed
 * here through the libraries (also as concatenated streams, and truncated); VSCSI v1
 * and v2 written here record by record; malformed lines reported with their number;
 * volume selection, --limit, unsorted SYSTOR times; the real traces of traces/ (or of
 * $TC_TRACES_DIR) against the figures of traces/README.md.
 */
#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <cmocka.h>

#include "replay/replay.h"
#include "replay/rstream.h"
#include "replay/trace.h"
#include "helpers.h"

static char fixtures[PATH_MAX];
static char tmpdir[PATH_MAX];

/* tests/fixtures/traces: $TC_FIXTURES_DIR, else beside this source file (__FILE__ is
 * relative to the build folder, where meson runs the compiler and the tests). */
static void find_fixtures(void)
{
	const char *env = getenv("TC_FIXTURES_DIR");

	if (env && *env) {
		snprintf(fixtures, sizeof(fixtures), "%s", env);
		return;
	}
	char src[PATH_MAX - 32];
	snprintf(src, sizeof(src), "%s", __FILE__);
	char *slash = strrchr(src, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(src, sizeof(src), ".");
	snprintf(fixtures, sizeof(fixtures), "%s/../fixtures/traces", src);
}

static const char *fixture(const char *name)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	return path;
}

static char *tmp_path(const char *name)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static int setup_all(void **state)
{
	find_fixtures();
	if (t_mkdtemp(tmpdir, sizeof(tmpdir), "tc-test-trace"))
		return -1;
	if (access(fixture("tencent.csv"), R_OK)) {
		fprintf(stderr, "test_trace: fixtures not found at %s (set TC_FIXTURES_DIR)\n",
			fixtures);
		return -1;
	}
	return 0;
}

static int teardown_all(void **state)
{
	return t_rm_rf(tmpdir);
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static struct trace *load_ok(const char *path, enum trace_fmt fmt,
				const struct trace_opts *o)
{
	struct trace *t = NULL;
	char err[512];
	int r = trace_load(path, fmt, o, &t, err, sizeof(err));

	if (r)
		fail_msg("%s: %d: %s", path, r, err);
	assert_non_null(t);
	return t;
}

static void check_req(const struct trace *t, size_t i, uint64_t t_ns, const char *vol,
		      bool write, uint64_t off, uint32_t len)
{
	assert_true(i < t->n);
	const struct trace_req *r = &t->req[i];
	assert_int_equal(r->t_ns, t_ns);
	assert_string_equal(t->vols[r->vol].name, vol);
	assert_int_equal(r->write, write);
	assert_int_equal(r->offset, off);
	assert_int_equal(r->length, len);
}

/* ------------------------------------------------------------------------------------
 * Each text format, every field.
 */

static void check_libcachesim(const struct trace *t)
{
	assert_int_equal(t->fmt, TRACE_LCS_CSV);
	assert_int_equal(t->n, 4);
	assert_int_equal(t->records, 6);
	assert_int_equal(t->skipped_op, 1);       /* 0x35 SYNCHRONIZE CACHE */
	assert_int_equal(t->skipped_empty, 1);
	assert_int_equal(t->unaligned, 1);
	assert_int_equal(t->nvols, 1);
	check_req(t, 0, 0, "0", false, 8 * 512, 4096);
	check_req(t, 1, 0, "0", true, 9 * 512, 512);
	check_req(t, 2, 3000000000ull, "0", false, 3 * 512, 1024);   /* 1536 + 1000 -> 2560 */
	check_req(t, 3, 5000000000ull, "0", false, 2048 * 512, 65536);
	assert_int_equal(t->reads, 3);
	assert_int_equal(t->writes, 1);
	assert_int_equal(t->read_bytes, 4096 + 1024 + 65536);
	assert_int_equal(t->write_bytes, 512);
	assert_int_equal(t->duration_ns, 5000000000ull);
	assert_int_equal(t->t0_ns, 100000000000ull);
}

static void check_msr(const struct trace *t)
{
	assert_int_equal(t->n, 4);
	assert_int_equal(t->nvols, 2);
	assert_string_equal(t->vols[0].name, "hm_0");
	assert_string_equal(t->vols[1].name, "hm_1");
	/* FILETIME ticks of 100 ns */
	check_req(t, 0, 0, "hm_0", true, 3154153472ull, 4096);
	check_req(t, 1, 50732ull * 100, "hm_1", false, 1234567680ull, 8192);
	check_req(t, 2, 438371ull * 100, "hm_0", false, 3154153472ull, 4096);
	check_req(t, 3, 10000000ull * 100, "hm_0", true, 0, 1024);   /* [100, 700) -> [0, 1024) */
	assert_int_equal(t->unaligned, 1);
	assert_int_equal(t->vols[0].kept, 3);
	assert_int_equal(t->vols[0].max_end, 3154153472ull + 4096);
	assert_int_equal(t->vols[1].max_end, 1234567680ull + 8192);
}

static void check_systor(const struct trace *t)
{
	/* File order .133076 .126285 .127398 .135954 .2: sorted when read. */
	assert_true(t->sorted);
	assert_int_equal(t->out_of_order, 1);
	assert_int_equal(t->n, 5);
	assert_int_equal(t->records, 5);
	check_req(t, 0, 0, "0", false, 4256049987072ull, 122880);
	check_req(t, 1, 1113000, "1", true, 3772288305664ull, 58368);
	check_req(t, 2, 6791000, "0", false, 899056122368ull, 131072);
	check_req(t, 3, 9669000, "0", false, 4256050519552ull, 21504);
	check_req(t, 4, 73715000, "1", true, 4096, 4096);
	for (size_t i = 1; i < t->n; i++)
		assert_true(t->req[i].t_ns >= t->req[i - 1].t_ns);
	assert_int_equal(t->t0_ns, 1456095145126285000ull);
	assert_int_equal(t->duration_ns, 73715000);
}

static void check_tencent(const struct trace *t)
{
	assert_int_equal(t->n, 4);
	assert_int_equal(t->records, 5);
	assert_int_equal(t->skipped_empty, 1);
	assert_int_equal(t->nvols, 2);                /* "0017" is volume 17 */
	check_req(t, 0, 0, "1063", true, 12058624ull * 512, 4096);
	check_req(t, 1, 0, "17", false, 2048ull * 512, 8192);
	check_req(t, 2, 1000000000ull, "1063", true, 12058632ull * 512, 4096);
	check_req(t, 3, 7000000000ull, "17", false, 4096ull * 512, 65536);
	assert_int_equal(t->vols[1].records, 3);      /* the empty one counts as a record */
	assert_int_equal(t->vols[1].kept, 2);
}

static void check_mqsim(const struct trace *t)
{
	assert_int_equal(t->n, 3);
	assert_int_equal(t->skipped_op, 1);
	assert_int_equal(t->nvols, 2);
	check_req(t, 0, 0, "4", true, 264719034ull * 512, 8192);
	check_req(t, 1, 315000, "3", false, 197570570ull * 512, 8192);
	check_req(t, 2, 431000, "4", false, 93230992ull * 512, 16384);
}

static void check_alibaba(const struct trace *t)
{
	assert_int_equal(t->n, 3);
	assert_int_equal(t->nvols, 2);
	check_req(t, 0, 0, "0", false, 126703644672ull, 4096);
	check_req(t, 1, 103000, "0", true, 126703648768ull, 8192);
	check_req(t, 2, 1000000, "3", false, 512, 1536);            /* [1000, 2000) */
	assert_int_equal(t->unaligned, 1);
}

struct fmt_case {
	const char *file;
	enum trace_fmt fmt;
	void (*check)(const struct trace *t);
};

static const struct fmt_case cases[] = {
	{ "libcachesim.csv", TRACE_LCS_CSV, check_libcachesim },
	{ "msr.csv", TRACE_MSR, check_msr },
	{ "systor.csv", TRACE_SYSTOR, check_systor },
	{ "tencent.csv", TRACE_TENCENT, check_tencent },
	{ "mqsim.trace", TRACE_MQSIM, check_mqsim },
	{ "alibaba.csv", TRACE_ALIBABA, check_alibaba },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void test_text_formats(void **state)
{
	for (size_t i = 0; i < NCASES; i++) {
		struct trace *t = load_ok(fixture(cases[i].file), cases[i].fmt, NULL);
		assert_int_equal(t->comp, RSTREAM_COMP_NONE);
		assert_int_equal(t->bad, 0);
		cases[i].check(t);
		trace_free(t);
	}
}

static void test_format_names(void **state)
{
	static const char *names[] = { "vscsi", "libcachesim-csv", "msr", "systor", "tencent",
				       "mqsim", "alibaba" };
	for (int i = 0; i < TRACE__COUNT; i++) {
		assert_int_equal(trace_fmt_parse(names[i]), i);
		assert_string_equal(trace_fmt_name((enum trace_fmt)i), names[i]);
		assert_non_null(strstr(trace_fmt_list(), names[i]));
	}
	assert_int_equal(trace_fmt_parse("csv"), -EINVAL);
	assert_int_equal(trace_fmt_parse("VSCSI"), -EINVAL);
	assert_int_equal(trace_fmt_parse(""), -EINVAL);
}

/* ------------------------------------------------------------------------------------
 * Compressed variants, made here through the libraries.
 */

static void gzip_file(const char *path, const void *buf, size_t len, int members)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	size_t part = len / (size_t)members;
	for (int m = 0; m < members; m++) {
		size_t off = part * (size_t)m, n = m == members - 1 ? len - off : part;
		z_stream z = { 0 };
		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		size_t cap = deflateBound(&z, (uLong)n) + 64;
		unsigned char *out = malloc(cap);
		z.next_in = (unsigned char *)buf + off;
		z.avail_in = (uInt)n;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(fwrite(out, 1, cap - z.avail_out, f), cap - z.avail_out);
		deflateEnd(&z);
		free(out);
	}
	assert_int_equal(fclose(f), 0);
}

static void bzip2_file(const char *path, const void *buf, size_t len, int streams)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	size_t part = len / (size_t)streams;
	for (int m = 0; m < streams; m++) {
		size_t off = part * (size_t)m, n = m == streams - 1 ? len - off : part;
		unsigned cap = (unsigned)(n + n / 100 + 700);
		char *out = malloc(cap);
		assert_int_equal(BZ2_bzBuffToBuffCompress(out, &cap, (char *)buf + off,
							  (unsigned)n, 1, 0, 0), BZ_OK);
		assert_int_equal(fwrite(out, 1, cap, f), cap);
		free(out);
	}
	assert_int_equal(fclose(f), 0);
}

static void xz_file(const char *path, const void *buf, size_t len, int streams)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	size_t part = len / (size_t)streams;
	for (int m = 0; m < streams; m++) {
		size_t off = part * (size_t)m, n = m == streams - 1 ? len - off : part;
		size_t cap = lzma_stream_buffer_bound(n), pos = 0;
		uint8_t *out = malloc(cap);
		assert_int_equal(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, NULL,
							 (const uint8_t *)buf + off, n, out, &pos,
							 cap), LZMA_OK);
		assert_int_equal(fwrite(out, 1, pos, f), pos);
		free(out);
	}
	assert_int_equal(fclose(f), 0);
}

static void zstd_file(const char *path, const void *buf, size_t len, int frames)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	size_t part = len / (size_t)frames;
	for (int m = 0; m < frames; m++) {
		size_t off = part * (size_t)m, n = m == frames - 1 ? len - off : part;
		size_t cap = ZSTD_compressBound(n);
		void *out = malloc(cap);
		size_t got = ZSTD_compress(out, cap, (const char *)buf + off, n, 3);
		assert_false(ZSTD_isError(got));
		assert_int_equal(fwrite(out, 1, got, f), got);
		free(out);
	}
	assert_int_equal(fclose(f), 0);
}

typedef void (*compress_fn)(const char *path, const void *buf, size_t len, int parts);

static const struct {
	const char *ext;
	enum rstream_comp comp;
	compress_fn fn;
} comps[] = {
	{ "gz", RSTREAM_COMP_GZIP, gzip_file },
	{ "bz2", RSTREAM_COMP_BZIP2, bzip2_file },
	{ "xz", RSTREAM_COMP_XZ, xz_file },
	{ "zst", RSTREAM_COMP_ZSTD, zstd_file },
};
#define NCOMPS (sizeof(comps) / sizeof(comps[0]))

static void test_compressed(void **state)
{
	for (size_t i = 0; i < NCASES; i++) {
		size_t len;
		void *plain = slurp(fixture(cases[i].file), &len);
		for (size_t c = 0; c < NCOMPS; c++) {
			for (int parts = 1; parts <= 2; parts++) {
				/* A name that says nothing: detection is by magic bytes. */
				char *path = tmp_path("trace.dat");
				comps[c].fn(path, plain, len, parts);
				struct trace *t = load_ok(path, cases[i].fmt, NULL);
				assert_int_equal(t->comp, comps[c].comp);
				cases[i].check(t);
				trace_free(t);
			}
		}
		free(plain);
	}
}

/* A compressed file cut short fails with -EBADMSG and says so; a corrupt one too. */
static void test_truncated(void **state)
{
	size_t len;
	void *plain = slurp(fixture("systor.csv"), &len);

	for (size_t c = 0; c < NCOMPS; c++) {
		char *path = tmp_path("cut.dat");
		comps[c].fn(path, plain, len, 1);
		size_t clen;
		unsigned char *cbuf = slurp(path, &clen);
		spit(path, cbuf, clen - 8);               /* drop the trailer / checksum */
		struct trace *t = NULL;
		char err[512] = "";
		int r = trace_load(path, TRACE_SYSTOR, NULL, &t, err, sizeof(err));
		assert_true(r == -EBADMSG);
		assert_null(t);
		assert_non_null(strstr(err, path));
		/* Flip bytes in the middle of the data. */
		for (size_t k = clen / 2; k < clen / 2 + 8 && k < clen; k++)
			cbuf[k] ^= 0x5a;
		spit(path, cbuf, clen);
		r = trace_load(path, TRACE_SYSTOR, NULL, &t, err, sizeof(err));
		assert_true(r == -EBADMSG || r == -EINVAL);  /* or a mangled line */
		assert_null(t);
		free(cbuf);
	}
	free(plain);
}

static void test_comp_detect(void **state)
{
	static const unsigned char gz[] = { 0x1f, 0x8b, 8, 0 };
	static const unsigned char bz[] = { 'B', 'Z', 'h', '9' };
	static const unsigned char bz_bad[] = { 'B', 'Z', 'h', 'x' };
	static const unsigned char xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	static const unsigned char zs[] = { 0x28, 0xb5, 0x2f, 0xfd };
	static const unsigned char txt[] = "1,2,3";

	assert_int_equal(rstream_comp_detect(gz, sizeof(gz)), RSTREAM_COMP_GZIP);
	assert_int_equal(rstream_comp_detect(bz, sizeof(bz)), RSTREAM_COMP_BZIP2);
	assert_int_equal(rstream_comp_detect(bz_bad, sizeof(bz_bad)), RSTREAM_COMP_NONE);
	assert_int_equal(rstream_comp_detect(xz, sizeof(xz)), RSTREAM_COMP_XZ);
	assert_int_equal(rstream_comp_detect(xz, 5), RSTREAM_COMP_NONE);
	assert_int_equal(rstream_comp_detect(zs, sizeof(zs)), RSTREAM_COMP_ZSTD);
	assert_int_equal(rstream_comp_detect(txt, 5), RSTREAM_COMP_NONE);
	assert_int_equal(rstream_comp_detect(gz, 1), RSTREAM_COMP_NONE);
	assert_string_equal(rstream_comp_name(RSTREAM_COMP_ZSTD), "zstd");
}

/* Lines through rstream: CRLF, no final newline, an over-long line. */
static void test_rstream_lines(void **state)
{
	static const char text[] = "a,b\r\n\nlast";
	char *path = tmp_path("lines.txt");
	struct rstream *s;
	char err[256], *line;

	spit(path, text, sizeof(text) - 1);
	assert_int_equal(rstream_open(path, &s, err, sizeof(err)), 0);
	assert_int_equal(rstream_getline(s, &line), 3);
	assert_string_equal(line, "a,b");
	assert_int_equal(rstream_getline(s, &line), 0);
	assert_int_equal(rstream_getline(s, &line), 4);
	assert_string_equal(line, "last");
	assert_int_equal(rstream_getline(s, &line), -1);
	assert_int_equal(rstream_offset(s), sizeof(text) - 1);
	rstream_close(s);

	size_t big = RSTREAM_LINE_MAX + 10;
	char *buf = malloc(big);
	memset(buf, 'x', big);
	spit(path, buf, big);
	free(buf);
	assert_int_equal(rstream_open(path, &s, err, sizeof(err)), 0);
	assert_int_equal(rstream_getline(s, &line), -E2BIG);
	assert_non_null(strstr(rstream_error(s), "longer than"));
	rstream_close(s);

	assert_int_equal(rstream_open(tmp_path("missing"), &s, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "missing"));
}

/* ------------------------------------------------------------------------------------
 * VSCSI, written here record by record.
 */

static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

struct vrec {
	uint16_t cmd;
	uint32_t len;
	uint64_t lbn, ts;
};

static const struct vrec vrecs[] = {
	{ 0x28, 4096, 100, 5000000 },     /* READ(10) */
	{ 0x2a, 512, 108, 5000010 },      /* WRITE(10) */
	{ 0x35, 0, 0, 5000020 },          /* SYNCHRONIZE CACHE: skipped */
	{ 0x88, 65536, 1ull << 33, 6000000 }, /* READ(16) */
	{ 0x0a, 1024, 7, 7500000 },       /* WRITE(6) */
};
#define NVRECS (sizeof(vrecs) / sizeof(vrecs[0]))

/* A VSCSI file of version @ver (1: 32-byte records, 2: 40-byte). */
static size_t vscsi_make(unsigned char *buf, int ver)
{
	size_t rs = ver == 1 ? 32 : 40, pos = 0;

	memset(buf, 0, NVRECS * rs);
	for (size_t i = 0; i < NVRECS; i++, pos += rs) {
		unsigned char *p = buf + pos;
		const struct vrec *v = &vrecs[i];
		if (ver == 1) {
			put_le(p + 0, i, 4);             /* sn */
			put_le(p + 4, v->len, 4);
			put_le(p + 8, 1, 4);             /* nSG */
			put_le(p + 12, v->cmd, 2);
			put_le(p + 14, 0x0100, 2);       /* ver */
			put_le(p + 16, v->lbn, 8);
			put_le(p + 24, v->ts, 8);
		} else {
			put_le(p + 0, v->cmd, 2);
			put_le(p + 2, 0x0200, 2);
			put_le(p + 4, i, 4);
			put_le(p + 8, v->len, 4);
			put_le(p + 12, 1, 4);
			put_le(p + 16, v->lbn, 8);
			put_le(p + 24, v->ts, 8);
			put_le(p + 32, 250, 8);          /* rt */
		}
	}
	return pos;
}

static void check_vscsi(const struct trace *t, int ver)
{
	assert_int_equal(t->vscsi_version, ver);
	assert_int_equal(t->records, NVRECS);
	assert_int_equal(t->skipped_op, 1);
	assert_int_equal(t->n, 4);
	check_req(t, 0, 0, "0", false, 100 * 512, 4096);
	check_req(t, 1, 10000, "0", true, 108 * 512, 512);
	check_req(t, 2, 1000000000ull, "0", false, (1ull << 33) * 512, 65536);
	check_req(t, 3, 2500000000ull, "0", true, 7 * 512, 1024);
}

static void test_vscsi(void **state)
{
	unsigned char buf[NVRECS * 40 + 64];

	for (int ver = 1; ver <= 2; ver++) {
		size_t len = vscsi_make(buf, ver);
		char *path = tmp_path("v.vscsi");
		spit(path, buf, len);
		struct trace *t = load_ok(path, TRACE_VSCSI, NULL);
		check_vscsi(t, ver);
		trace_free(t);
		for (size_t c = 0; c < NCOMPS; c++) {
			comps[c].fn(path, buf, len, 2);
			t = load_ok(path, TRACE_VSCSI, NULL);
			assert_int_equal(t->comp, comps[c].comp);
			check_vscsi(t, ver);
			trace_free(t);
		}

		/* A record of the other version in the middle: record 3 is bad. */
		size_t rs = ver == 1 ? 32 : 40;
		put_le(buf + 2 * rs + (ver == 1 ? 14 : 2), 0x0300, 2);
		spit(path, buf, len);
		char err[512];
		int r = trace_load(path, TRACE_VSCSI, NULL, &t, err, sizeof(err));
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, "record 3"));
		assert_non_null(strstr(err, "0x0300"));
		struct trace_opts o = { .max_bad = 1 };
		t = load_ok(path, TRACE_VSCSI, &o);
		assert_int_equal(t->bad, 1);
		assert_int_equal(t->n, 4);      /* the bad one was the skipped SYNCHRONIZE */
		trace_free(t);
		vscsi_make(buf, ver);

		/* Cut inside the last record. */
		spit(path, buf, len - 5);
		r = trace_load(path, TRACE_VSCSI, NULL, &t, err, sizeof(err));
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, "record 5"));
		assert_non_null(strstr(err, "ends inside"));
	}

	/* Not VSCSI at all. */
	char *path = tmp_path("not.vscsi");
	spit(path, "this is text, not a binary trace\n", 33);
	struct trace *t = NULL;
	char err[512];
	assert_int_equal(trace_load(path, TRACE_VSCSI, NULL, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a VSCSI trace"));
}

/* ------------------------------------------------------------------------------------
 * Errors, selection, limits.
 */

static void test_bad_lines(void **state)
{
	struct trace *t = NULL;
	char err[512];
	int r = trace_load(fixture("tencent_bad.csv"), TRACE_TENCENT, NULL, &t, err,
			      sizeof(err));

	assert_int_equal(r, -EINVAL);
	assert_null(t);
	assert_non_null(strstr(err, "tencent_bad.csv:3: "));
	assert_non_null(strstr(err, "Offset \"abc\" is not a number"));

	struct trace_opts o = { .max_bad = 1 };
	r = trace_load(fixture("tencent_bad.csv"), TRACE_TENCENT, &o, &t, err, sizeof(err));
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, "tencent_bad.csv:4: "));
	assert_non_null(strstr(err, "IOType \"2\""));

	o.max_bad = 10;
	t = load_ok(fixture("tencent_bad.csv"), TRACE_TENCENT, &o);
	assert_int_equal(t->bad, 2);
	assert_int_equal(t->n, 3);
	assert_non_null(strstr(t->first_bad, "tencent_bad.csv:3: "));
	check_req(t, 2, 3000000000ull, "17", false, 2048 * 512, 8192);
	trace_free(t);

	/* The wrong format fails on the first line and says which field. */
	r = trace_load(fixture("msr.csv"), TRACE_ALIBABA, NULL, &t, err, sizeof(err));
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, "msr.csv:1: 7 fields"));
	r = trace_load(fixture("tencent.csv"), TRACE_MQSIM, NULL, &t, err, sizeof(err));
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, "tencent.csv:1: "));

	/* Only a header: no request. */
	char *path = tmp_path("header.csv");
	spit(path, "Timestamp,Response,IOType,LUN,Offset,Size\n", 42);
	r = trace_load(path, TRACE_SYSTOR, NULL, &t, err, sizeof(err));
	assert_int_equal(r, -ENODATA);
	assert_non_null(strstr(err, "no read or write request"));

	r = trace_load(tmp_path("absent.csv"), TRACE_MSR, NULL, &t, err, sizeof(err));
	assert_int_equal(r, -ENOENT);
	assert_non_null(strstr(err, "absent.csv"));
}

static void test_volume_and_limit(void **state)
{
	struct trace_opts o = { .volume = "17" };
	struct trace *t = load_ok(fixture("tencent.csv"), TRACE_TENCENT, &o);

	assert_int_equal(t->n, 2);
	assert_int_equal(t->skipped_volume, 2);
	check_req(t, 0, 0, "17", false, 2048 * 512, 8192);
	check_req(t, 1, 7000000000ull, "17", false, 4096ull * 512, 65536);
	trace_free(t);

	o.volume = "hm_1";
	t = load_ok(fixture("msr.csv"), TRACE_MSR, &o);
	assert_int_equal(t->n, 1);
	check_req(t, 0, 0, "hm_1", false, 1234567680ull, 8192);
	trace_free(t);

	char err[512];
	o.volume = "99";
	assert_int_equal(trace_load(fixture("tencent.csv"), TRACE_TENCENT, &o, &t, err,
				       sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "no request of volume \"99\""));
	assert_non_null(strstr(err, "1063, 17"));

	struct trace_opts l = { .limit = 2 };
	t = load_ok(fixture("systor.csv"), TRACE_SYSTOR, &l);
	assert_int_equal(t->n, 2);
	assert_true(t->limited);
	/* The first two in file order, then sorted. */
	check_req(t, 0, 0, "0", false, 4256049987072ull, 122880);
	check_req(t, 1, 6791000, "0", false, 899056122368ull, 131072);
	trace_free(t);
}

/* ------------------------------------------------------------------------------------
 * Layout.
 */

static void test_map(void **state)
{
	struct trace *t = load_ok(fixture("tencent.csv"), TRACE_TENCENT, NULL);
	struct replay_map m;
	char err[256];

	/* Room for everything: regions are the extents rounded up to 1 MiB, in order of
	 * first appearance (1063, then 17). */
	assert_int_equal(replay_map_build(t, 1ull << 40, &m, err, sizeof(err)), 0);
	uint64_t ext1063 = (12058632ull * 512 + 4096 + (1u << 20) - 1) / (1u << 20) * (1u << 20);
	assert_int_equal(m.regions, 2);
	assert_int_equal(m.base[0], 0);
	assert_int_equal(m.size[0], ext1063);
	assert_int_equal(m.base[1], ext1063);
	assert_int_equal(m.size[1], 3u << 20);         /* 2 MiB + 64 KiB -> 3 MiB */
	assert_int_equal(m.total, ext1063 + (3u << 20));
	assert_int_equal(m.folded, 0);
	assert_int_equal(m.max_len, 65536);
	/* 1 + 2 + 1 + 16 distinct pages */
	assert_int_equal(m.footprint, 20 * 4096);
	uint64_t off;
	uint32_t len;
	replay_map_req(&m, &t->req[3], &off, &len);
	assert_int_equal(off, ext1063 + 4096ull * 512);
	assert_int_equal(len, 65536);
	replay_map_free(&m);

	/* 7 MiB for both: a fair share is 3 MiB; volume 17 keeps its 3 MiB extent, 1063
	 * gets the remaining 4 MiB and is folded into it. */
	assert_int_equal(replay_map_build(t, 7u << 20, &m, err, sizeof(err)), 0);
	assert_int_equal(m.size[1], 3u << 20);
	assert_int_equal(m.size[0], 4u << 20);
	assert_int_equal(m.base[1], 4u << 20);
	assert_int_equal(m.total, 7u << 20);
	assert_int_equal(m.folded, 2);
	replay_map_req(&m, &t->req[0], &off, &len);
	assert_int_equal(off, (12058624ull * 512) % (4u << 20));
	assert_int_equal(len, 4096);
	for (size_t i = 0; i < t->n; i++) {
		replay_map_req(&m, &t->req[i], &off, &len);
		uint32_t v = t->req[i].vol;
		assert_true(off >= m.base[v] && off + len <= m.base[v] + m.size[v]);
	}
	replay_map_free(&m);

	assert_int_equal(replay_map_build(t, 1u << 20, &m, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "2 source volumes"));
	trace_free(t);
}

/* ------------------------------------------------------------------------------------
 * The repository's real traces (traces/README.md figures).
 */

#ifndef TC_SOURCE_ROOT
#error "TC_SOURCE_ROOT (the source tree's root) must be defined by the build"
#endif

/* real_trace - @path = $TC_TRACES_DIR (else <source root>/traces) / @rel; the file must
 * be readable: the repository carries it. */
static void real_trace(const char *rel, char *path, size_t len)
{
	const char *dir = getenv("TC_TRACES_DIR");
	int n;

	if (!dir || !*dir)
		dir = TC_SOURCE_ROOT "/traces";
	n = snprintf(path, len, "%s/%s", dir, rel);
	assert_true(n > 0 && (size_t)n < len);
	if (access(path, R_OK))
		fail_msg("trace %s: %s", path, strerror(errno));
}

static void test_real_traces(void **state)
{
	char path[PATH_MAX + 64];

	real_trace("libcachesim/cloudPhysicsIO.vscsi.xz", path, sizeof(path));
	{
		struct trace *v = load_ok(path, TRACE_VSCSI, NULL);
		assert_int_equal(v->comp, RSTREAM_COMP_XZ);
		assert_int_equal(v->n, 113872);
		assert_int_equal(v->vscsi_version, 1);
		assert_int_equal(v->reads, 46974);          /* 41.3 % */
		assert_true(v->duration_ns > 7200000000000ull && v->duration_ns < 7201000000000ull);
		struct replay_map m;
		char err[256];
		assert_int_equal(replay_map_build(v, 1ull << 40, &m, err, sizeof(err)), 0);
		assert_int_equal(m.footprint / 4096, 269210);   /* distinct 4 KiB pages */
		replay_map_free(&m);
		/* The text form: the same requests, times at 1 s resolution. */
		real_trace("libcachesim/cloudPhysicsIO.csv.xz", path, sizeof(path));
		struct trace *c = load_ok(path, TRACE_LCS_CSV, NULL);
		assert_int_equal(c->n, v->n);
		for (size_t i = 0; i < c->n; i++) {
			assert_int_equal(c->req[i].offset, v->req[i].offset);
			assert_int_equal(c->req[i].length, v->req[i].length);
			assert_int_equal(c->req[i].write, v->req[i].write);
		}
		trace_free(c);
		trace_free(v);
	}
	real_trace("caffeine/msr-cambridge1-sample.csv.xz", path, sizeof(path));
	{
		struct trace *t = load_ok(path, TRACE_MSR, NULL);
		assert_int_equal(t->n, 1000);
		assert_int_equal(t->nvols, 1);
		assert_string_equal(t->vols[0].name, "hm_0");
		assert_true(t->reads >= 500 && t->reads <= 520);   /* 51 % */
		trace_free(t);
	}
	real_trace("caffeine/systor17-traces-sample.csv.gz", path, sizeof(path));
	{
		struct trace *t = load_ok(path, TRACE_SYSTOR, NULL);
		assert_int_equal(t->comp, RSTREAM_COMP_GZIP);
		assert_int_equal(t->n, 999);
		assert_true(t->sorted);
		for (size_t i = 1; i < t->n; i++)
			assert_true(t->req[i].t_ns >= t->req[i - 1].t_ns);
		assert_true(t->reads >= 820 && t->reads <= 840);   /* 83 % */
		trace_free(t);
	}
	real_trace("mqsim/tpcc-small.trace.xz", path, sizeof(path));
	{
		struct trace *t = load_ok(path, TRACE_MQSIM, NULL);
		assert_int_equal(t->n, 6999);
		assert_int_equal(t->nvols, 16);
		assert_int_equal(t->reads, 4381);
		trace_free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_text_formats),
		cmocka_unit_test(test_comp_detect),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_rstream_lines),
		cmocka_unit_test(test_vscsi),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_volume_and_limit),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_real_traces),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
