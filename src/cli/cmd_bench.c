/* SPDX-License-Identifier: MIT */
/*
 * cmd_bench.c - `tiercache bench`: runs the benchmark program tc-bench-nbd (bench/nbd/:
 * no cache, tiercache and nbdkit's cache filter side by side through NBD with fio)
 * with the same arguments, --help included.  The program is $TC_BENCH_NBD, else the
 * build tree's (../../bench/nbd/tc-bench-nbd from this program), else the installed
 * one (libexecdir/tiercache/tc-bench-nbd).  It is told which tiercache command to run
 * for create, attach and serve: this one ($TC_TIERCACHE).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef TC_BENCH_NBD_INSTALLED
#define TC_BENCH_NBD_INSTALLED "/usr/local/libexec/tiercache/tc-bench-nbd"
#endif

int cmd_bench(int argc, char **argv)
{
	char exe[PATH_MAX], prog[PATH_MAX + 32];
	const char *path = getenv("TC_BENCH_NBD");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		setenv("TC_TIERCACHE", exe, 1);
	}
	if (!path || !*path) {
		char *slash = n > 0 ? strrchr(exe, '/') : NULL;
		path = TC_BENCH_NBD_INSTALLED;
		if (slash) {
			snprintf(prog, sizeof(prog), "%.*s/../../bench/nbd/tc-bench-nbd",
				 (int)(slash - exe), exe);
			if (access(prog, X_OK) == 0)
				path = prog;
		}
	}
	(void)argc;                            /* argv ends with NULL */
	argv[0] = (char *)"tiercache bench";   /* the name its messages start with */
	fflush(NULL);
	execv(path, argv);
	cli_err("cannot run %s: %s (build or install tc-bench-nbd, or set TC_BENCH_NBD)", path,
		strerror(errno));
	return TC_EXIT_FAIL;
}
