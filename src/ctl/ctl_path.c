/* SPDX-License-Identifier: MIT */
/*
 * ctl_path.c - create the folder of a server's file, or any folder (ctl_path.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_path.h"

int ctl_mkdir_p(const char *path)
{
	char *dir = strdup(path);
	int r = 0;
	if (!dir)
		return -ENOMEM;
	for (char *p = dir + 1; *dir; p++) {
		if (*p == '/' || !*p) {
			char save = *p;
			*p = 0;
			if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				break;
			}
			if (!save)
				break;
			*p = save;
		}
	}
	free(dir);
	return r;
}

int ctl_make_parent(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	char *slash = strrchr(dir, '/');
	int r = 0;
	if (slash && slash != dir) {
		*slash = 0;
		r = ctl_mkdir_p(dir);
	}
	free(dir);
	return r;
}
