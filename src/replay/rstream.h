/* SPDX-License-Identifier: MIT */
/*
 * rstream.h - read a file that may be compressed: plain, gzip, bzip2, xz or zstd,
 * recognised by its first bytes (magic numbers), never by its name.
 *
 * The decoders are the reference libraries (zlib, libbz2, liblzma, libzstd); files made
 * of several concatenated streams (pigz, pbzip2, `cat a.gz b.gz`, multi-frame zstd) are
 * read to the end of the last one.  A stream gives bytes (rstream_read) or lines
 * (rstream_getline); one stream is used by one thread at a time.
 */
#ifndef RSTREAM_H
#define RSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rstream_comp {
	RSTREAM_COMP_NONE = 0,
	RSTREAM_COMP_GZIP = 1,
	RSTREAM_COMP_BZIP2 = 2,
	RSTREAM_COMP_XZ = 3,
	RSTREAM_COMP_ZSTD = 4,
};

/* The longest line rstream_getline() returns, bytes (without the newline). */
#define RSTREAM_LINE_MAX 65536

struct rstream;

/* rstream_comp_name - "none", "gzip", "bzip2", "xz", "zstd". */
const char *rstream_comp_name(enum rstream_comp c);

/* rstream_comp_detect - the compression whose magic number starts @buf (@len bytes). */
enum rstream_comp rstream_comp_detect(const unsigned char *buf, size_t len);

/*
 * rstream_open - open @path ("-" is standard input) and detect its compression.
 * On error returns a negative errno and writes a message naming the file into @err
 * (@errlen bytes): -ENOENT, -EACCES, -ENOMEM, -EINVAL (a decoder refused to start).
 */
int rstream_open(const char *path, struct rstream **out, char *err, size_t errlen);

/* rstream_comp - the compression found at open. */
enum rstream_comp rstream_comp(const struct rstream *s);

/*
 * rstream_read - up to @len decompressed bytes into @buf.  Returns the count (less
 * than @len only at the end of the data), 0 at the end, or a negative errno: -EIO (read
 * error), -EBADMSG (corrupt or truncated compressed data); the message is then in
 * rstream_error().
 */
ssize_t rstream_read(struct rstream *s, void *buf, size_t len);

/*
 * rstream_getline - the next line, without its "\n" (and without a "\r" before it),
 * NUL-terminated, in a buffer owned by the stream and valid until the next call.
 * Returns its length, -1 at the end of the data, or a negative errno (< -1): those of
 * rstream_read, and -E2BIG for a line longer than RSTREAM_LINE_MAX.  The last
 * line needs no newline.
 */
ssize_t rstream_getline(struct rstream *s, char **line);

/* rstream_error - the message of the last error ("" if none). */
const char *rstream_error(const struct rstream *s);

/* rstream_offset - decompressed bytes handed out so far. */
uint64_t rstream_offset(const struct rstream *s);

void rstream_close(struct rstream *s);

#endif /* RSTREAM_H */
