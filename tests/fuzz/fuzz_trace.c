/* SPDX-License-Identifier: MIT */
/*
 * fuzz_trace.c - a trace reader (trace_load, src/replay/trace.c, with the decompressors
 * of rstream.c in front): built once per format, TRACE_FORMAT naming it (see
 * tests/fuzz/meson.build).  The input is a whole trace file, given to the reader as
 * an anonymous in-memory file (memfd), plain or compressed as its magic says.  It is
 * loaded twice: refusing the first malformed record, and skipping up to 1000 of them.
 * Properties: a refusal says why; every request kept is normalised as trace.h
 * promises (512-byte aligned offset, length 512..TRACE_MAX_LEN in 512-byte steps, a
 * known volume, times from the earliest request, sorted when the reader sorts).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "trace.h"

#ifndef TRACE_FORMAT
#error "TRACE_FORMAT (an enum trace_fmt) must be defined"
#endif

static void check(const struct trace *t)
{
	uint64_t kept = 0;
	fuzz_require(t->n > 0 && t->fmt == TRACE_FORMAT);
	for (size_t i = 0; i < t->n; i++) {
		const struct trace_req *r = &t->req[i];
		fuzz_require(r->offset % 512 == 0);
		fuzz_require(r->length % 512 == 0 && r->length >= 512 && r->length <= TRACE_MAX_LEN);
		fuzz_require(r->vol < t->nvols);
		fuzz_require(r->write <= 1);
		fuzz_require(r->t_ns <= t->duration_ns);
		if (t->sorted && i)
			fuzz_require(t->req[i - 1].t_ns <= r->t_ns);
	}
	for (uint32_t v = 0; v < t->nvols; v++) {
		fuzz_require(t->vols[v].name != NULL);
		kept += t->vols[v].kept;
	}
	fuzz_require(kept == t->n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0)
			abort();
		off += (size_t)w;
	}
	char path[64], err[512];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int pass = 0; pass < 2; pass++) {
		struct trace_opts o = { .max_bad = pass ? 1000 : 0 };
		struct trace *t = NULL;
		memset(err, 0, sizeof(err));
		int r = trace_load(path, TRACE_FORMAT, &o, &t, err, sizeof(err));
		if (r) {
			fuzz_require(r < 0 && !t && err[0]);
			continue;
		}
		check(t);
		trace_free(t);
	}
	close(fd);
	return 0;
}
