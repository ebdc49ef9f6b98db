/* SPDX-License-Identifier: MIT */
/*
 * rstream.c - a byte and line reader over plain or compressed files.
 *
 * The compressed input goes through one buffer (in[]); each decoder takes what it
 * needs from there, so detecting the magic number is a peek at the buffer's start and
 * costs no seek (standard input works too).  Decoders run until the caller's buffer is
 * full or the data ends; a member/stream/frame that ends with more input behind it is
 * followed by the next one (the way gzip -d, bzip2 -d, xz -d and zstd -d read
 * concatenated files).
 */
#include <bzlib.h>
#include <errno.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "rstream.h"

#define IN_SIZE (256u * 1024)   /* compressed input buffer, bytes */
#define OUT_SIZE (256u * 1024)  /* decompressed buffer behind getline, bytes */

struct rstream {
	FILE *f;
	bool is_stdin;
	char *path;
	enum rstream_comp comp;
	unsigned char *in;
	size_t in_pos, in_len;
	bool in_eof;              /* the file has no more bytes beyond in[] */
	bool dec_live;            /* a decoder state is initialised */
	bool member_end;          /* the current gzip member / bzip2 stream ended */
	bool zstd_open;           /* zstd: inside a frame (last return value != 0) */
	bool done;                /* no more decompressed bytes */
	int err_no;               /* sticky error, negative errno */
	z_stream z;
	bz_stream bz;
	lzma_stream lz;
	ZSTD_DCtx *zs;
	char *obuf;               /* getline: decompressed bytes not yet returned */
	size_t o_pos, o_len;
	char *line;               /* getline's result, RSTREAM_LINE_MAX + 1 bytes */
	uint64_t offset;
	char err[320];
};

const char *rstream_comp_name(enum rstream_comp c)
{
	switch (c) {
	case RSTREAM_COMP_NONE: return "none";
	case RSTREAM_COMP_GZIP: return "gzip";
	case RSTREAM_COMP_BZIP2: return "bzip2";
	case RSTREAM_COMP_XZ: return "xz";
	case RSTREAM_COMP_ZSTD: return "zstd";
	}
	return "?";
}

enum rstream_comp rstream_comp_detect(const unsigned char *b, size_t len)
{
	static const unsigned char xz_magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };

	if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return RSTREAM_COMP_GZIP;
	/* "BZh" then the block size digit '1'..'9' */
	if (len >= 4 && b[0] == 'B' && b[1] == 'Z' && b[2] == 'h' && b[3] >= '1' && b[3] <= '9')
		return RSTREAM_COMP_BZIP2;
	if (len >= 6 && !memcmp(b, xz_magic, 6))
		return RSTREAM_COMP_XZ;
	if (len >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd)
		return RSTREAM_COMP_ZSTD;
	return RSTREAM_COMP_NONE;
}

static int fail(struct rstream *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record a sticky error: "PATH: message". */
static int fail(struct rstream *s, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(s->err, sizeof(s->err), "%s: %s", s->path, msg);
	s->err_no = err;
	return err;
}

/* Refill in[] once it is empty.  Returns 0 or -EIO. */
static int fill_in(struct rstream *s)
{
	if (s->in_pos < s->in_len || s->in_eof)
		return 0;
	s->in_pos = 0;
	s->in_len = fread(s->in, 1, IN_SIZE, s->f);
	if (s->in_len == 0) {
		if (ferror(s->f))
			return fail(s, -EIO, "read error: %s", strerror(errno ? errno : EIO));
		s->in_eof = true;
	}
	return 0;
}

static void dec_end(struct rstream *s)
{
	if (!s->dec_live)
		return;
	switch (s->comp) {
	case RSTREAM_COMP_GZIP: inflateEnd(&s->z); break;
	case RSTREAM_COMP_BZIP2: BZ2_bzDecompressEnd(&s->bz); break;
	case RSTREAM_COMP_XZ: lzma_end(&s->lz); break;
	case RSTREAM_COMP_ZSTD: ZSTD_freeDCtx(s->zs); s->zs = NULL; break;
	case RSTREAM_COMP_NONE: break;
	}
	s->dec_live = false;
}

static int dec_start(struct rstream *s)
{
	int r;

	switch (s->comp) {
	case RSTREAM_COMP_NONE:
		return 0;
	case RSTREAM_COMP_GZIP:
		memset(&s->z, 0, sizeof(s->z));
		r = inflateInit2(&s->z, 15 + 32);    /* zlib or gzip header, 32 KiB window */
		if (r != Z_OK)
			return fail(s, r == Z_MEM_ERROR ? -ENOMEM : -EINVAL,
				    "zlib cannot start: %s", s->z.msg ? s->z.msg : "error");
		break;
	case RSTREAM_COMP_BZIP2:
		memset(&s->bz, 0, sizeof(s->bz));
		r = BZ2_bzDecompressInit(&s->bz, 0, 0);
		if (r != BZ_OK)
			return fail(s, r == BZ_MEM_ERROR ? -ENOMEM : -EINVAL,
				    "libbz2 cannot start (error %d)", r);
		break;
	case RSTREAM_COMP_XZ: {
		lzma_stream init = LZMA_STREAM_INIT;
		s->lz = init;
		r = (int)lzma_stream_decoder(&s->lz, UINT64_MAX, LZMA_CONCATENATED);
		if (r != LZMA_OK)
			return fail(s, r == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL,
				    "liblzma cannot start (error %d)", r);
		break;
	}
	case RSTREAM_COMP_ZSTD:
		s->zs = ZSTD_createDCtx();
		if (!s->zs)
			return fail(s, -ENOMEM, "libzstd cannot start: out of memory");
		break;
	}
	s->dec_live = true;
	return 0;
}

/* One decoder step into @buf: returns bytes produced (maybe 0 while headers are read
 * or a new member starts), or a negative errno; sets s->done at the end. */
static ssize_t dec_step(struct rstream *s, unsigned char *buf, size_t len)
{
	int r = fill_in(s);
	if (r < 0)
		return r;
	size_t avail = s->in_len - s->in_pos;
	bool eof = s->in_eof && avail == 0;
	unsigned char *in = s->in + s->in_pos;

	switch (s->comp) {
	case RSTREAM_COMP_NONE:
		if (eof) {
			s->done = true;
			return 0;
		}
		if (avail > len)
			avail = len;
		memcpy(buf, in, avail);
		s->in_pos += avail;
		return (ssize_t)avail;

	case RSTREAM_COMP_GZIP: {
		if (s->member_end) {
			if (eof) {
				s->done = true;
				return 0;
			}
			inflateReset(&s->z);         /* another member follows */
			s->member_end = false;
		}
		if (eof)
			return fail(s, -EBADMSG, "gzip data ends in the middle of a member "
				    "(truncated file?)");
		s->z.next_in = in;
		s->z.avail_in = (uInt)avail;
		s->z.next_out = buf;
		s->z.avail_out = (uInt)(len > (1u << 30) ? (1u << 30) : len);
		uInt out0 = s->z.avail_out;
		r = inflate(&s->z, Z_NO_FLUSH);
		s->in_pos += avail - s->z.avail_in;
		size_t got = out0 - s->z.avail_out;
		if (r == Z_STREAM_END)
			s->member_end = true;
		else if (r != Z_OK && r != Z_BUF_ERROR)
			return fail(s, -EBADMSG, "corrupt gzip data at compressed byte %lu: %s",
				    s->z.total_in, s->z.msg ? s->z.msg : "error");
		return (ssize_t)got;
	}

	case RSTREAM_COMP_BZIP2: {
		if (s->member_end) {
			if (eof) {
				s->done = true;
				return 0;
			}
			BZ2_bzDecompressEnd(&s->bz);  /* another stream follows */
			memset(&s->bz, 0, sizeof(s->bz));
			r = BZ2_bzDecompressInit(&s->bz, 0, 0);
			if (r != BZ_OK) {
				s->dec_live = false;
				return fail(s, -ENOMEM, "libbz2 cannot restart (error %d)", r);
			}
			s->member_end = false;
		}
		if (eof)
			return fail(s, -EBADMSG, "bzip2 data ends in the middle of a stream "
				    "(truncated file?)");
		s->bz.next_in = (char *)in;
		s->bz.avail_in = (unsigned)avail;
		s->bz.next_out = (char *)buf;
		s->bz.avail_out = (unsigned)(len > (1u << 30) ? (1u << 30) : len);
		unsigned out0 = s->bz.avail_out;
		r = BZ2_bzDecompress(&s->bz);
		s->in_pos += avail - s->bz.avail_in;
		size_t got = out0 - s->bz.avail_out;
		if (r == BZ_STREAM_END)
			s->member_end = true;
		else if (r != BZ_OK)
			return fail(s, -EBADMSG, "corrupt bzip2 data (libbz2 error %d)", r);
		return (ssize_t)got;
	}

	case RSTREAM_COMP_XZ: {
		s->lz.next_in = in;
		s->lz.avail_in = avail;
		s->lz.next_out = buf;
		s->lz.avail_out = len;
		lzma_ret lr = lzma_code(&s->lz, eof ? LZMA_FINISH : LZMA_RUN);
		s->in_pos += avail - s->lz.avail_in;
		size_t got = len - s->lz.avail_out;
		if (lr == LZMA_STREAM_END) {
			s->done = true;
			return (ssize_t)got;
		}
		if (lr == LZMA_BUF_ERROR)
			return fail(s, -EBADMSG, "xz data ends in the middle of a stream "
				    "(truncated file?)");
		if (lr != LZMA_OK)
			return fail(s, -EBADMSG, "corrupt xz data (liblzma error %d)", (int)lr);
		return (ssize_t)got;
	}

	case RSTREAM_COMP_ZSTD: {
		if (eof && !s->zstd_open) {
			s->done = true;             /* the last frame ended with the input */
			return 0;
		}
		ZSTD_inBuffer zin = { in, avail, 0 };
		ZSTD_outBuffer zout = { buf, len, 0 };
		size_t zr = ZSTD_decompressStream(s->zs, &zout, &zin);
		s->in_pos += zin.pos;
		if (ZSTD_isError(zr))
			return fail(s, -EBADMSG, "corrupt zstd data: %s", ZSTD_getErrorName(zr));
		if (eof && zout.pos == 0)
			return fail(s, -EBADMSG, "zstd data ends in the middle of a frame "
				    "(truncated file?)");
		/* 0: a frame ended and everything is flushed */
		s->zstd_open = zr != 0;
		return (ssize_t)zout.pos;
	}
	}
	return -EINVAL;
}

/* Decompress up to @len bytes (fewer only at the end). */
static ssize_t dec_read(struct rstream *s, unsigned char *buf, size_t len)
{
	size_t got = 0;

	if (s->err_no)
		return s->err_no;
	while (got < len && !s->done) {
		ssize_t n = dec_step(s, buf + got, len - got);
		if (n < 0)
			return n;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int rstream_open(const char *path, struct rstream **out, char *err, size_t errlen)
{
	struct rstream *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s || !(s->path = strdup(path)) || !(s->in = malloc(IN_SIZE))) {
		snprintf(err, errlen, "%s: out of memory", path);
		r = -ENOMEM;
		goto fail;
	}
	if (!strcmp(path, "-")) {
		s->f = stdin;
		s->is_stdin = true;
	} else {
		s->f = fopen(path, "rb");
		if (!s->f) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
	}
	r = fill_in(s);
	if (r == 0) {
		s->comp = rstream_comp_detect(s->in, s->in_len);
		r = dec_start(s);
	}
	if (r < 0) {
		snprintf(err, errlen, "%s", s->err);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	rstream_close(s);
	return r;
}

enum rstream_comp rstream_comp(const struct rstream *s)
{
	return s->comp;
}

const char *rstream_error(const struct rstream *s)
{
	return s->err;
}

uint64_t rstream_offset(const struct rstream *s)
{
	return s->offset;
}

ssize_t rstream_read(struct rstream *s, void *buf, size_t len)
{
	size_t got = 0;

	/* Bytes getline already decompressed come first. */
	if (s->o_pos < s->o_len) {
		size_t n = s->o_len - s->o_pos < len ? s->o_len - s->o_pos : len;
		memcpy(buf, s->obuf + s->o_pos, n);
		s->o_pos += n;
		got = n;
	}
	if (got < len) {
		ssize_t n = dec_read(s, (unsigned char *)buf + got, len - got);
		if (n < 0)
			return n;
		got += (size_t)n;
	}
	s->offset += got;
	return (ssize_t)got;
}

ssize_t rstream_getline(struct rstream *s, char **line)
{
	size_t n = 0;
	bool any = false;

	if (!s->obuf) {
		s->obuf = malloc(OUT_SIZE);
		s->line = malloc(RSTREAM_LINE_MAX + 2);
		if (!s->obuf || !s->line)
			return fail(s, -ENOMEM, "out of memory");
	}
	for (;;) {
		if (s->o_pos == s->o_len) {
			ssize_t got = dec_read(s, (unsigned char *)s->obuf, OUT_SIZE);
			if (got < 0)
				return got;
			s->o_pos = 0;
			s->o_len = (size_t)got;
			if (got == 0) {
				if (!any)
					return -1;
				break;                  /* a last line without newline */
			}
		}
		any = true;
		char *start = s->obuf + s->o_pos;
		size_t avail = s->o_len - s->o_pos;
		char *nl = memchr(start, '\n', avail);
		size_t take = nl ? (size_t)(nl - start) : avail;
		if (n + take > RSTREAM_LINE_MAX)
			return fail(s, -E2BIG, "a line at decompressed byte %llu is longer than "
				    "%u bytes (binary data? wrong --format?)",
				    (unsigned long long)s->offset, RSTREAM_LINE_MAX);
		memcpy(s->line + n, start, take);
		n += take;
		s->o_pos += take + (nl ? 1 : 0);
		s->offset += take + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (n > 0 && s->line[n - 1] == '\r')
		n--;
	s->line[n] = '\0';
	*line = s->line;
	return (ssize_t)n;
}

void rstream_close(struct rstream *s)
{
	if (!s)
		return;
	dec_end(s);
	if (s->f && !s->is_stdin)
		fclose(s->f);
	free(s->in);
	free(s->obuf);
	free(s->line);
	free(s->path);
	free(s);
}
