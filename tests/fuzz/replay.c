/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the corpus replay driver: feeds every file of the corpus folders named on
 * the command line, one by one, to the target's LLVMFuzzerTestOneInput(), as libFuzzer
 * would, without libFuzzer (any C compiler, any sanitizer build).  `make check` runs one
 * per target (tests/fuzz/meson.build), so every corpus entry, including each crash
 * once found and fixed, is decoded again in every test run.
 *
 * Usage: fuzz-replay-NAME DIR|FILE...   Exit 0 when every input was run (a bug aborts
 * or trips a sanitizer), 1 when a folder holds no input or cannot be read.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "fuzz-replay: %s: out of memory\n", path);
		return -1;
	}
	/* An exact-size copy, so ASan sees a read past the input's end. */
	uint8_t *in = malloc(n ? n : 1);
	if (!in) {
		free(buf);
		return -1;
	}
	memcpy(in, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(in, n);
	free(in);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	unsigned total = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 1;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			fprintf(stderr, "fuzz-replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			total++;
			continue;
		}
		struct dirent **ents;
		int n = scandir(argv[i], &ents, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "fuzz-replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		unsigned here = 0;
		for (int k = 0; k < n; k++) {
			char path[4096];
			struct stat es;
			snprintf(path, sizeof(path), "%s/%s", argv[i], ents[k]->d_name);
			if (ents[k]->d_name[0] != '.' && !stat(path, &es) && S_ISREG(es.st_mode)) {
				if (run_file(path))
					return 1;
				here++;
			}
			free(ents[k]);
		}
		free(ents);
		if (!here) {
			fprintf(stderr, "fuzz-replay: %s: no input (an empty corpus tests "
				"nothing)\n", argv[i]);
			return 1;
		}
		total += here;
	}
	printf("fuzz-replay: %u inputs run\n", total);
	return 0;
}
