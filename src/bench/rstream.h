/* SPDX-License-Identifier: MIT */
/*
 * rstream.h - read a file that may be compressed: plain, gzip, bzip2, xz or zstd,
 * recognised by its first bytes (magic numbers), never by its name.
 *
 * The decoders are the reference libraries (zlib, libbz2, liblzma, libzstd); files made
 * of several concatenated streams (pigz, pbzip2, `cat a.gz b.gz`, multi-frame zstd) are
 * read to the end of the last one.  A stream gives bytes (tc_rstream_read) or lines
 * (tc_rstream_getline); one stream is used by one thread at a time.
 */
#ifndef TC_RSTREAM_H
#define TC_RSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum tc_comp {
	TC_COMP_NONE = 0,
	TC_COMP_GZIP = 1,
	TC_COMP_BZIP2 = 2,
	TC_COMP_XZ = 3,
	TC_COMP_ZSTD = 4,
};

/* The longest line tc_rstream_getline() returns, bytes (without the newline). */
#define TC_RSTREAM_LINE_MAX 65536

struct tc_rstream;

/* tc_comp_name - "none", "gzip", "bzip2", "xz", "zstd". */
const char *tc_comp_name(enum tc_comp c);

/* tc_comp_detect - the compression whose magic number starts @buf (@len bytes). */
enum tc_comp tc_comp_detect(const unsigned char *buf, size_t len);

/*
 * tc_rstream_open - open @path ("-" is standard input) and detect its compression.
 * On error returns a negative errno and writes a message naming the file into @err
 * (@errlen bytes): -ENOENT, -EACCES, -ENOMEM, -EINVAL (a decoder refused to start).
 */
int tc_rstream_open(const char *path, struct tc_rstream **out, char *err, size_t errlen);

/* tc_rstream_comp - the compression found at open. */
enum tc_comp tc_rstream_comp(const struct tc_rstream *s);

/*
 * tc_rstream_read - up to @len decompressed bytes into @buf.  Returns the count (less
 * than @len only at the end of the data), 0 at the end, or a negative errno: -EIO (read
 * error), -EBADMSG (corrupt or truncated compressed data); the message is then in
 * tc_rstream_error().
 */
ssize_t tc_rstream_read(struct tc_rstream *s, void *buf, size_t len);

/*
 * tc_rstream_getline - the next line, without its "\n" (and without a "\r" before it),
 * NUL-terminated, in a buffer owned by the stream and valid until the next call.
 * Returns its length, -1 at the end of the data, or a negative errno (< -1): those of
 * tc_rstream_read, and -E2BIG for a line longer than TC_RSTREAM_LINE_MAX.  The last
 * line needs no newline.
 */
ssize_t tc_rstream_getline(struct tc_rstream *s, char **line);

/* tc_rstream_error - the message of the last error ("" if none). */
const char *tc_rstream_error(const struct tc_rstream *s);

/* tc_rstream_offset - decompressed bytes handed out so far. */
uint64_t tc_rstream_offset(const struct tc_rstream *s);

void tc_rstream_close(struct tc_rstream *s);

#endif /* TC_RSTREAM_H */
