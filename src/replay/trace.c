/* SPDX-License-Identifier: MIT */
/*
 * trace.c - block trace readers (formats: see trace.h and traces/README.md).
 *
 * Every format goes through the same path: a parser turns one record into (time in
 * ns of the format's clock, source volume name, operation, offset and length in
 * bytes), and loader_add() normalises it, counts what it drops and appends it to the
 * request array.  Numbers are parsed by hand, strictly (no locale, no sign, no junk),
 * so that a wrong --format fails on the first line with a message that names the
 * file, the line and the field.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace.h"

#define SECTOR 512u

static const char *const fmt_names[TRACE__COUNT] = {
	[TRACE_VSCSI] = "vscsi",
	[TRACE_LCS_CSV] = "libcachesim-csv",
	[TRACE_MSR] = "msr",
	[TRACE_SYSTOR] = "systor",
	[TRACE_TENCENT] = "tencent",
	[TRACE_MQSIM] = "mqsim",
	[TRACE_ALIBABA] = "alibaba",
};

int trace_fmt_parse(const char *name)
{
	for (int i = 0; i < TRACE__COUNT; i++)
		if (!strcmp(name, fmt_names[i]))
			return i;
	return -EINVAL;
}

const char *trace_fmt_name(enum trace_fmt f)
{
	return (unsigned)f < TRACE__COUNT ? fmt_names[f] : "?";
}

const char *trace_fmt_list(void)
{
	return "vscsi, libcachesim-csv, msr, systor, tencent, mqsim, alibaba";
}

/* ------------------------------------------------------------------------------------
 * Numbers.
 */

/* Decimal digits only, no sign; -ERANGE above UINT64_MAX, -EINVAL otherwise. */
static int parse_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -ERANGE;
	}
	*out = v;
	return 0;
}

/* Hexadecimal, optional "0x". */
static int parse_hex(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -EINVAL;
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Seconds with an optional fraction ("1456095145.133076000") to ns, exactly: digits
 * beyond the ninth decimal are dropped. */
static int parse_secs(const char *s, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0;
	unsigned fd = 0;
	const char *p = s;

	if (!*p || *p == '.')
		return -EINVAL;
	for (; *p && *p != '.'; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(sec, 10, &sec) || __builtin_add_overflow(sec, (uint64_t)(*p - '0'), &sec))
			return -ERANGE;
	}
	if (*p == '.') {
		p++;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			if (fd < 9) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				fd++;
			}
		}
	}
	for (; fd < 9; fd++)
		frac *= 10;
	if (__builtin_mul_overflow(sec, 1000000000ull, &sec) || __builtin_add_overflow(sec, frac, &sec))
		return -ERANGE;
	*ns = sec;
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Loading.
 */

struct loader {
	struct trace *t;
	const struct trace_opts *o;
	char *err;
	size_t errlen;
	size_t cap;
	uint32_t vcap;
	uint32_t *vhash;           /* open addressing: vol index + 1, 0 = empty */
	uint32_t vhash_mask;
	int32_t sel;               /* index of opts.volume once seen, -1 before */
	uint64_t prev_raw;
	bool have_prev;
	uint64_t where;            /* line (text) or record (binary) number, 1-based */
	bool binary;
};

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;                  /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* The index of source volume @name (@n bytes), added if new; -ENOMEM. */
static int64_t vol_index(struct loader *l, const char *name, size_t n)
{
	struct trace *t = l->t;

	if (t->nvols * 2 >= l->vhash_mask + 1 || !l->vhash) {
		uint32_t size = l->vhash ? (l->vhash_mask + 1) * 2 : 64;
		uint32_t *h = calloc(size, sizeof(*h));
		if (!h)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->nvols; i++) {
			uint32_t k = name_hash(t->vols[i].name, strlen(t->vols[i].name)) & (size - 1);
			while (h[k])
				k = (k + 1) & (size - 1);
			h[k] = i + 1;
		}
		free(l->vhash);
		l->vhash = h;
		l->vhash_mask = size - 1;
	}
	uint32_t k = name_hash(name, n) & l->vhash_mask;
	while (l->vhash[k]) {
		const char *vn = t->vols[l->vhash[k] - 1].name;
		if (strlen(vn) == n && !memcmp(vn, name, n))
			return l->vhash[k] - 1;
		k = (k + 1) & l->vhash_mask;
	}
	if (t->nvols == l->vcap) {
		uint32_t nc = l->vcap ? l->vcap * 2 : 16;
		struct trace_vol *v = realloc(t->vols, nc * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->vols = v;
		l->vcap = nc;
	}
	char *copy = strndup(name, n);
	if (!copy)
		return -ENOMEM;
	t->vols[t->nvols] = (struct trace_vol){ .name = copy };
	l->vhash[k] = t->nvols + 1;
	return t->nvols++;
}

static int bad(struct loader *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A malformed record: skipped while opts.max_bad allows (returns 0), else -EINVAL with
 * the message in the caller's buffer. */
static int bad(struct loader *l, const char *fmt, ...)
{
	char msg[192], full[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->binary)
		snprintf(full, sizeof(full), "%s: record %" PRIu64 ": %s", l->t->path, l->where,
			 msg);
	else
		snprintf(full, sizeof(full), "%s:%" PRIu64 ": %s", l->t->path, l->where, msg);
	if (!l->t->bad)
		snprintf(l->t->first_bad, sizeof(l->t->first_bad), "%s", full);
	if (l->o->max_bad > l->t->bad) {
		l->t->bad++;
		return 0;
	}
	snprintf(l->err, l->errlen, "%s", full);
	return -EINVAL;
}

enum { OP_READ = 0, OP_WRITE = 1, OP_OTHER = 2 };

/* Whether the request array is full (opts.limit): 1 = stop reading. */
static bool loader_full(const struct loader *l)
{
	return l->o->limit && l->t->n >= l->o->limit;
}

/*
 * One parsed record: @raw_ns in the format's clock, volume @vname (@vn bytes), @op,
 * @off and @len in bytes.  Returns 0 or -ENOMEM.
 */
static int loader_add(struct loader *l, uint64_t raw_ns, const char *vname, size_t vn,
		      int op, uint64_t off, uint64_t len)
{
	struct trace *t = l->t;

	if (op == OP_OTHER) {
		t->skipped_op++;
		return 0;
	}
	int64_t vi = vol_index(l, vname, vn);
	if (vi < 0)
		return (int)vi;
	struct trace_vol *v = &t->vols[vi];
	v->records++;
	if (l->o->volume && l->sel != vi) {
		if (l->sel >= 0 || strcmp(v->name, l->o->volume)) {
			t->skipped_volume++;
			return 0;
		}
		l->sel = (int32_t)vi;
	}
	if (len == 0) {
		t->skipped_empty++;
		return 0;
	}
	uint64_t start = off / SECTOR * SECTOR;
	uint64_t end;
	if (__builtin_add_overflow(off, len, &end) || end > UINT64_MAX - SECTOR) {
		t->skipped_empty++;      /* cannot be addressed: treat as empty */
		return 0;
	}
	end = (end + SECTOR - 1) / SECTOR * SECTOR;
	if (start != off || end != off + len)
		t->unaligned++;
	if (end - start > TRACE_MAX_LEN) {
		t->clipped++;
		end = start + TRACE_MAX_LEN;
	}
	if (t->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 4096;
		struct trace_req *r = realloc(t->req, nc * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->req = r;
		l->cap = nc;
	}
	if (l->have_prev && raw_ns < l->prev_raw)
		t->out_of_order++;
	l->prev_raw = raw_ns;
	l->have_prev = true;
	t->req[t->n++] = (struct trace_req){ .t_ns = raw_ns, .offset = start,
						 .length = (uint32_t)(end - start),
						 .vol = (uint32_t)vi, .write = op == OP_WRITE };
	v->kept++;
	if (end > v->max_end)
		v->max_end = end;
	if (op == OP_WRITE) {
		t->writes++;
		t->write_bytes += end - start;
	} else {
		t->reads++;
		t->read_bytes += end - start;
	}
	return 0;
}

/* SCSI opcodes: READ(6/10/12/16), WRITE(6/10/12/16). */
static int scsi_op(uint64_t cmd)
{
	switch (cmd) {
	case 0x08: case 0x28: case 0xa8: case 0x88:
		return OP_READ;
	case 0x0a: case 0x2a: case 0xaa: case 0x8a:
		return OP_WRITE;
	}
	return OP_OTHER;
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int load_vscsi(struct loader *l, struct rstream *s)
{
	unsigned char rec[40];
	struct trace *t = l->t;
	size_t rsize = 0;
	int r;

	l->binary = true;
	for (;;) {
		if (loader_full(l)) {
			t->limited = true;
			return 0;
		}
		size_t want = rsize ? rsize : 16;
		ssize_t got = rstream_read(s, rec, want);
		if (got < 0) {
			snprintf(l->err, l->errlen, "%s", rstream_error(s));
			return (int)got;
		}
		l->where = t->records + 1;
		if (got == 0)
			return 0;
		if (!rsize) {
			/* The first record decides the version (libCacheSim reads it the
			 * same way): v1 has ver at byte 14, v2 at byte 2. */
			if ((size_t)got < want) {
				return bad(l, "the file ends after %zd bytes, inside the first record",
					   got) ? -EINVAL : 0;
			}
			if (le(rec + 14, 2) >> 8 == 1) {
				t->vscsi_version = 1;
				rsize = 32;
			} else if (le(rec + 2, 2) >> 8 == 2) {
				t->vscsi_version = 2;
				rsize = 40;
			} else {
				snprintf(l->err, l->errlen, "%s: not a VSCSI trace: the first record "
					 "has version field 0x%04" PRIx64 " at byte 14 (v1 needs 0x01xx) "
					 "and 0x%04" PRIx64 " at byte 2 (v2 needs 0x02xx)", t->path,
					 le(rec + 14, 2), le(rec + 2, 2));
				return -EINVAL;
			}
			ssize_t more = rstream_read(s, rec + 16, rsize - 16);
			if (more < 0) {
				snprintf(l->err, l->errlen, "%s", rstream_error(s));
				return (int)more;
			}
			got += more;
		}
		t->records++;
		if ((size_t)got < rsize) {
			r = bad(l, "the file ends inside the record (%zd of %zu bytes)", got, rsize);
			return r;
		}
		uint64_t cmd, ver, len, lbn, ts;
		if (rsize == 32) {
			len = le(rec + 4, 4);
			cmd = le(rec + 12, 2);
			ver = le(rec + 14, 2);
		} else {
			cmd = le(rec + 0, 2);
			ver = le(rec + 2, 2);
			len = le(rec + 8, 4);
		}
		lbn = le(rec + 16, 8);
		ts = le(rec + 24, 8);
		if (ver >> 8 != (uint64_t)t->vscsi_version) {
			r = bad(l, "version field 0x%04" PRIx64 " is not VSCSI v%d (0x0%dxx) like "
				"the first record", ver, t->vscsi_version, t->vscsi_version);
			if (r)
				return r;
			continue;
		}
		if (lbn > UINT64_MAX / SECTOR || ts > UINT64_MAX / 1000) {
			r = bad(l, "lbn %" PRIu64 " or timestamp %" PRIu64 " out of range", lbn, ts);
			if (r)
				return r;
			continue;
		}
		r = loader_add(l, ts * 1000, "0", 1, scsi_op(cmd), lbn * SECTOR, len);
		if (r)
			return r;
	}
}

#define MAX_FIELDS 12

/* Split @line at @sep (',' or 0 for runs of blanks), trimming blanks around fields.
 * Returns the field count (at most MAX_FIELDS; more fields count as MAX_FIELDS + 1). */
static int split(char *line, char sep, char **f)
{
	int n = 0;
	char *p = line;

	if (!sep) {
		while (*p) {
			while (*p == ' ' || *p == '\t')
				p++;
			if (!*p)
				break;
			if (n == MAX_FIELDS)
				return MAX_FIELDS + 1;
			f[n++] = p;
			while (*p && *p != ' ' && *p != '\t')
				p++;
			if (*p)
				*p++ = '\0';
		}
		return n;
	}
	for (;;) {
		char *end = strchr(p, sep);
		if (end)
			*end = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (n == MAX_FIELDS)
			return MAX_FIELDS + 1;
		f[n++] = p;
		if (!end)
			return n;
		p = end + 1;
	}
}

/* A field that should be a number: the message for bad(). */
#define NUM(call, name, fieldv)                                                           \
	do {                                                                              \
		int rc_ = (call);                                                         \
		if (rc_)                                                                  \
			return bad(l, "%s \"%s\" is %s", name, fieldv,                    \
				   rc_ == -ERANGE ? "out of range" : "not a number");     \
	} while (0)

/* Read/write from "R"/"W", "Read"/"Write" (any case). */
static int rw_word(const char *s)
{
	if (!strcasecmp(s, "r") || !strcasecmp(s, "read"))
		return OP_READ;
	if (!strcasecmp(s, "w") || !strcasecmp(s, "write"))
		return OP_WRITE;
	return -1;
}

/* A numeric volume id printed without leading zeros; any other id as it is.  Returns
 * its length, or 0 when it does not fit in @len bytes (snprintf's count of what it
 * would have written is not what is in @buf). */
static size_t vol_name(const char *field, char *buf, size_t len)
{
	uint64_t v;
	int n;

	if (parse_dec(field, &v) == 0)
		n = snprintf(buf, len, "%" PRIu64, v);
	else
		n = snprintf(buf, len, "%s", field);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/* The source volume named by field @field (called @what in messages) into vbuf/vn; a
 * name too long for vbuf is a malformed record. */
#define VOL(field, what)                                                                   \
	do {                                                                              \
		vn = vol_name((field), vbuf, sizeof(vbuf));                               \
		if (!vn)                                                                  \
			return bad(l, "%s \"%.32s...\" is longer than %zu bytes", (what),     \
				   (field), sizeof(vbuf) - 1);                            \
	} while (0)

static int mul_ok(struct loader *l, uint64_t a, uint64_t b, uint64_t *out, const char *what)
{
	if (__builtin_mul_overflow(a, b, out))
		return bad(l, "%s %" PRIu64 " out of range", what, a) ? -EINVAL : 1;
	return 0;
}

/* One text record.  Returns 0 (added or skipped), or a negative errno. */
static int parse_line(struct loader *l, char *line)
{
	struct trace *t = l->t;
	char *f[MAX_FIELDS];
	char vbuf[96];                  /* a source volume's name: MSR's fits whole */
	size_t vn;
	uint64_t ts, a, b, c;
	int nf, op, r;
	static const int want[TRACE__COUNT] = {
		[TRACE_LCS_CSV] = 5, [TRACE_MSR] = 7, [TRACE_SYSTOR] = 6,
		[TRACE_TENCENT] = 5, [TRACE_MQSIM] = 5, [TRACE_ALIBABA] = 5,
	};
	static const char *const layout[TRACE__COUNT] = {
		[TRACE_LCS_CSV] = "version,time,op,size,lbn",
		[TRACE_MSR] = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
		[TRACE_SYSTOR] = "Timestamp,Response,IOType,LUN,Offset,Size",
		[TRACE_TENCENT] = "Timestamp,Offset,Size,IOType,VolumeID",
		[TRACE_MQSIM] = "arrival_time device lba size type",
		[TRACE_ALIBABA] = "device_id,opcode,offset,length,timestamp",
	};

	nf = split(line, t->fmt == TRACE_MQSIM ? 0 : ',', f);
	if (nf != want[t->fmt])
		return bad(l, "%d fields where \"%s\" has %d", nf > MAX_FIELDS ? MAX_FIELDS + 1 : nf,
			   layout[t->fmt], want[t->fmt]);
	switch (t->fmt) {
	case TRACE_LCS_CSV:
		NUM(parse_secs(f[1], &ts), "time", f[1]);
		NUM(parse_hex(f[2], &a), "op", f[2]);
		NUM(parse_dec(f[3], &b), "size", f[3]);
		NUM(parse_dec(f[4], &c), "lbn", f[4]);
		if ((r = mul_ok(l, c, SECTOR, &c, "lbn")))
			return r < 0 ? r : 0;
		return loader_add(l, ts, "0", 1, scsi_op(a), c, b);
	case TRACE_MSR: {
		NUM(parse_dec(f[0], &ts), "Timestamp", f[0]);
		NUM(parse_dec(f[2], &c), "DiskNumber", f[2]);
		op = rw_word(f[3]);
		if (op < 0)
			return bad(l, "Type \"%s\" is neither Read nor Write", f[3]);
		NUM(parse_dec(f[4], &a), "Offset", f[4]);
		NUM(parse_dec(f[5], &b), "Size", f[5]);
		if ((r = mul_ok(l, ts, 100, &ts, "Timestamp")))  /* FILETIME: 100 ns ticks */
			return r < 0 ? r : 0;
		vn = (size_t)snprintf(vbuf, sizeof(vbuf), "%.60s_%" PRIu64, f[1], c);  /* < 96 */
		return loader_add(l, ts, vbuf, vn, op, a, b);
	}
	case TRACE_SYSTOR: {
		NUM(parse_secs(f[0], &ts), "Timestamp", f[0]);
		op = rw_word(f[2]);
		if (op < 0)
			return bad(l, "IOType \"%s\" is neither R nor W", f[2]);
		NUM(parse_dec(f[4], &a), "Offset", f[4]);
		NUM(parse_dec(f[5], &b), "Size", f[5]);
		if (!*f[3])
			return bad(l, "LUN is empty");
		VOL(f[3], "LUN");
		return loader_add(l, ts, vbuf, vn, op, a, b);
	}
	case TRACE_TENCENT: {
		NUM(parse_secs(f[0], &ts), "Timestamp", f[0]);
		NUM(parse_dec(f[1], &a), "Offset", f[1]);
		NUM(parse_dec(f[2], &b), "Size", f[2]);
		if (strcmp(f[3], "0") && strcmp(f[3], "1"))
			return bad(l, "IOType \"%s\" is neither 0 (read) nor 1 (write)", f[3]);
		op = f[3][0] == '1' ? OP_WRITE : OP_READ;
		if (!*f[4])
			return bad(l, "VolumeID is empty");
		if ((r = mul_ok(l, a, SECTOR, &a, "Offset")) || (r = mul_ok(l, b, SECTOR, &b, "Size")))
			return r < 0 ? r : 0;
		VOL(f[4], "VolumeID");
		return loader_add(l, ts, vbuf, vn, op, a, b);
	}
	case TRACE_MQSIM: {
		NUM(parse_dec(f[0], &ts), "arrival_time", f[0]);
		NUM(parse_dec(f[2], &a), "lba", f[2]);
		NUM(parse_dec(f[3], &b), "size", f[3]);
		NUM(parse_dec(f[4], &c), "type", f[4]);
		op = c == 0 ? OP_WRITE : c == 1 ? OP_READ : OP_OTHER;
		if ((r = mul_ok(l, a, SECTOR, &a, "lba")) || (r = mul_ok(l, b, SECTOR, &b, "size")))
			return r < 0 ? r : 0;
		VOL(f[1], "device");
		return loader_add(l, ts, vbuf, vn, op, a, b);
	}
	case TRACE_ALIBABA: {
		op = rw_word(f[1]);
		if (op < 0)
			return bad(l, "opcode \"%s\" is neither R nor W", f[1]);
		NUM(parse_dec(f[2], &a), "offset", f[2]);
		NUM(parse_dec(f[3], &b), "length", f[3]);
		NUM(parse_dec(f[4], &ts), "timestamp", f[4]);
		if ((r = mul_ok(l, ts, 1000, &ts, "timestamp")))   /* microseconds */
			return r < 0 ? r : 0;
		if (!*f[0])
			return bad(l, "device_id is empty");
		VOL(f[0], "device_id");
		return loader_add(l, ts, vbuf, vn, op, a, b);
	}
	default:
		return -EINVAL;
	}
}

/* A header line: its first field does not start with a digit. */
static bool is_header(const char *line, enum trace_fmt fmt)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return !(*line >= '0' && *line <= '9');
}

static int load_text(struct loader *l, struct rstream *s)
{
	struct trace *t = l->t;
	uint64_t lineno = 0;
	bool first = true;
	char *line;

	for (;;) {
		if (loader_full(l)) {
			t->limited = true;
			return 0;
		}
		ssize_t n = rstream_getline(s, &line);
		if (n == -1)
			return 0;
		lineno++;
		l->where = lineno;
		if (n < 0) {
			if (n == -E2BIG)
				snprintf(l->err, l->errlen, "%s:%" PRIu64 ": line longer than %u bytes "
					 "(binary data? wrong --format?)", t->path, lineno,
					 RSTREAM_LINE_MAX);
			else
				snprintf(l->err, l->errlen, "%s", rstream_error(s));
			return (int)n;
		}
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		if (first) {
			first = false;
			if (is_header(line, t->fmt))
				continue;
		}
		t->records++;
		int r = parse_line(l, line);
		if (r)
			return r;
	}
}

/* Stable bottom-up merge sort of @n requests by time; -ENOMEM. */
static int sort_by_time(struct trace_req *a, size_t n)
{
	struct trace_req *tmp = malloc((n ? n : 1) * sizeof(*tmp));
	struct trace_req *src = a, *dst = tmp;

	if (!tmp)
		return -ENOMEM;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				dst[k++] = src[j].t_ns < src[i].t_ns ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		struct trace_req *x = src;
		src = dst;
		dst = x;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	return 0;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nvols; i++)
		free(t->vols[i].name);
	free(t->vols);
	free(t->req);
	free(t->path);
	free(t);
}

int trace_load(const char *path, enum trace_fmt fmt, const struct trace_opts *o,
		  struct trace **out, char *err, size_t errlen)
{
	static const struct trace_opts defaults;
	struct rstream *s = NULL;
	struct trace *t;
	int r;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if ((unsigned)fmt >= TRACE__COUNT) {
		snprintf(err, errlen, "%s: unknown trace format %d", path, (int)fmt);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->path = strdup(path))) {
		free(t);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	t->fmt = fmt;
	struct loader l = { .t = t, .o = o ? o : &defaults, .err = err, .errlen = errlen,
			    .sel = -1 };

	r = rstream_open(path, &s, err, errlen);
	if (r)
		goto fail;
	t->comp = rstream_comp(s);
	r = fmt == TRACE_VSCSI ? load_vscsi(&l, s) : load_text(&l, s);
	rstream_close(s);
	if (r == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory after %zu requests", path, t->n);
	if (r)
		goto fail;
	if (t->n == 0) {
		r = -ENODATA;
		if (l.o->volume && l.sel < 0) {
			int len = snprintf(err, errlen, "%s: no request of volume \"%s\"; the "
					   "trace's volumes:", path, l.o->volume);
			for (uint32_t i = 0; i < t->nvols && len > 0 && (size_t)len < errlen; i++)
				len += snprintf(err + len, errlen - (size_t)len, "%s %s",
						i ? "," : "", t->vols[i].name);
			if (!t->nvols && len > 0 && (size_t)len < errlen)
				snprintf(err + len, errlen - (size_t)len, " none");
		} else {
			snprintf(err, errlen, "%s: no read or write request in %" PRIu64
				 " records (wrong --format?)", path, t->records);
		}
		goto fail;
	}
	if (fmt == TRACE_SYSTOR && t->out_of_order) {
		r = sort_by_time(t->req, t->n);
		if (r) {
			snprintf(err, errlen, "%s: out of memory sorting %zu requests", path, t->n);
			goto fail;
		}
		t->sorted = true;
	}
	uint64_t t0 = UINT64_MAX, tmax = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->req[i].t_ns < t0)
			t0 = t->req[i].t_ns;
	for (size_t i = 0; i < t->n; i++) {
		t->req[i].t_ns -= t0;
		if (t->req[i].t_ns > tmax)
			tmax = t->req[i].t_ns;
	}
	t->t0_ns = t0;
	t->duration_ns = tmax;
	free(l.vhash);
	*out = t;
	return 0;
fail:
	free(l.vhash);
	trace_free(t);
	return r;
}
