/* SPDX-License-Identifier: MIT */
/*
 * ctl_addr.c - "[HOST:]PORT" as `tiercache serve --listen` and `--http` take it
 * (ctl_http.h): a host is optional and defaults to 127.0.0.1, so a server is reachable
 * from other machines only when an address (or 0.0.0.0) is given.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_http.h"

int ctl_parse_hostport(const char *what, const char *s, char *host, size_t hostlen,
		       uint16_t *port, char *why, size_t whylen)
{
	const char *colon = strrchr(s, ':');
	const char *p = colon ? colon + 1 : s;
	char *end;
	errno = 0;
	unsigned long long pn = strtoull(p, &end, 10);
	if (!*p || *end || errno || pn < 1 || pn > 65535 || *p == '-' || *p == '+') {
		snprintf(why, whylen, "%s: \"%s\": the port \"%s\" is not a number from 1 to "
			 "65535 (expected [HOST:]PORT)", what, s, p);
		return -EINVAL;
	}
	*port = (uint16_t)pn;
	if (!colon) {
		snprintf(host, hostlen, "127.0.0.1");
		return 0;
	}
	size_t hl = (size_t)(colon - s);
	if (!hl || hl >= hostlen) {
		snprintf(why, whylen, "%s: \"%s\" has %s host before ':'", what, s,
			 hl ? "too long a" : "no");
		return -EINVAL;
	}
	memcpy(host, s, hl);
	host[hl] = 0;
	if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {   /* [::1]:9100 */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	} else if (strchr(host, ':')) {
		snprintf(why, whylen, "%s: \"%s\": an IPv6 address goes in brackets, "
			 "[ADDRESS]:PORT", what, s);
		return -EINVAL;
	}
	if (!host[0]) {
		snprintf(why, whylen, "%s: \"%s\" has no host before ':'", what, s);
		return -EINVAL;
	}
	return 0;
}
