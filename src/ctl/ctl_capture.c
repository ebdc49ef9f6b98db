/* SPDX-License-Identifier: MIT */
/*
 * ctl_capture.c - collect the messages the library logs on a thread while it runs a
 * control request (ctl_capture_log, ctl_capture_begin, ctl_capture_end in ctl.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* The messages the library logs on a thread while it runs a request. */
static _Thread_local char *capture_buf;
static _Thread_local size_t capture_len;
static _Thread_local bool capture_on;

bool ctl_capture_log(const char *msg)
{
	if (!capture_on)
		return false;
	size_t n = strlen(msg);
	char *nb = realloc(capture_buf, capture_len + n + 3);
	if (!nb)
		return false;
	capture_buf = nb;
	if (capture_len) {
		memcpy(capture_buf + capture_len, "; ", 2);
		capture_len += 2;
	}
	memcpy(capture_buf + capture_len, msg, n + 1);
	capture_len += n;
	return true;
}

void ctl_capture_begin(void)
{
	free(capture_buf);
	capture_buf = NULL;
	capture_len = 0;
	capture_on = true;
}

char *ctl_capture_end(void)
{
	char *s = capture_buf;
	capture_buf = NULL;
	capture_len = 0;
	capture_on = false;
	return s;
}
