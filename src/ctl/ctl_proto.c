/* SPDX-License-Identifier: MIT */
/*
 * ctl_proto.c - the control protocol's wire format (one JSON object a line, ctl.h),
 * error responses, and a volume's settings as JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ctl.h"

json_object *ctl_error(int err, const char *msg)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "errno", json_object_new_int(err));
	json_object_object_add(o, "error", json_object_new_string(msg ? msg : strerror(err)));
	return o;
}

json_object *ctl_settings_json(const struct tc_volume_settings *s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "read_cache", json_object_new_boolean(s->read_cache));
	json_object_object_add(o, "write_policy",
			       json_object_new_string(tc_write_policy_name(s->write_policy)));
	json_object_object_add(o, "flush_rate",
			       json_object_new_string(tc_flush_rate_name(s->flush_rate)));
	json_object_object_add(o, "admission",
			       json_object_new_string(tc_admission_name(s->admission)));
	json_object_object_add(o, "nhit", json_object_new_uint64(s->nhit));
	json_object_object_add(o, "fill", json_object_new_string(tc_fill_name(s->fill)));
	json_object_object_add(o, "seq_cutoff", json_object_new_uint64(s->seq_cutoff));
	/* Partition shares: bytes, or a percentage of the cache; 0 = none. */
	bool rp = s->reserve & TC_SHARE_PCT, cp = s->cap & TC_SHARE_PCT;
	json_object_object_add(o, "reserve_bytes", json_object_new_uint64(rp ? 0 : s->reserve));
	json_object_object_add(o, "reserve_pct",
			       json_object_new_uint64(rp ? s->reserve & ~TC_SHARE_PCT : 0));
	json_object_object_add(o, "cap_bytes", json_object_new_uint64(cp ? 0 : s->cap));
	json_object_object_add(o, "cap_pct",
			       json_object_new_uint64(cp ? s->cap & ~TC_SHARE_PCT : 0));
	json_object_object_add(o, "priority", json_object_new_string(tc_prio_name(s->priority)));
	return o;
}

int ctl_settings_apply(json_object *obj, struct tc_volume_settings *s, char *why,
		       size_t len)
{
	if (!json_object_is_type(obj, json_type_object)) {
		snprintf(why, len, "settings: not a JSON object");
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, val) {
		const char *str = json_object_is_type(val, json_type_string) ?
				  json_object_get_string(val) : NULL;
		int v;
		if (!strcmp(key, "read_cache") && json_object_is_type(val, json_type_boolean)) {
			s->read_cache = json_object_get_boolean(val);
		} else if (!strcmp(key, "write_policy") && str &&
			   (v = tc_write_policy_parse(str)) >= 0) {
			s->write_policy = (uint8_t)v;
		} else if (!strcmp(key, "flush_rate") && str &&
			   (v = tc_flush_rate_parse(str)) >= 0) {
			s->flush_rate = (uint8_t)v;
		} else if (!strcmp(key, "admission") && str &&
			   (v = tc_admission_parse(str)) >= 0) {
			s->admission = (uint8_t)v;
		} else if (!strcmp(key, "nhit") && json_object_is_type(val, json_type_int) &&
			   json_object_get_int64(val) >= 1 && json_object_get_int64(val) <= 255) {
			s->nhit = (uint32_t)json_object_get_int64(val);
		} else if (!strcmp(key, "fill") && str && (v = tc_fill_parse(str)) >= 0) {
			s->fill = (uint8_t)v;
		} else if (!strcmp(key, "priority") && str && (v = tc_prio_parse(str)) >= 0) {
			s->priority = (uint8_t)v;
		} else if (!strcmp(key, "seq_cutoff") && json_object_is_type(val, json_type_int) &&
			   json_object_get_int64(val) >= 0) {
			uint64_t n = json_object_get_uint64(val);
			if (n && n < CTL_SEQ_CUTOFF_MIN) {
				snprintf(why, len, "settings: seq_cutoff %" PRIu64 " is below the "
					 "minimum of %u bytes (0 turns detection off)", n,
					 CTL_SEQ_CUTOFF_MIN);
				return -EINVAL;
			}
			s->seq_cutoff = n;
		} else if ((!strcmp(key, "reserve_bytes") || !strcmp(key, "cap_bytes") ||
			    !strcmp(key, "reserve_pct") || !strcmp(key, "cap_pct")) &&
			   json_object_is_type(val, json_type_int) &&
			   json_object_get_int64(val) >= 0) {
			/* The library checks the values (multiple of 4 KiB, at most 100 %). */
			uint64_t n = json_object_get_uint64(val);
			bool pct = strstr(key, "_pct") != NULL;   /* 0 of either clears it */
			if (pct && n > 100) {
				snprintf(why, len, "settings: %s %" PRIu64 " is above 100", key, n);
				return -EINVAL;
			}
			uint64_t v64 = pct && n ? n | TC_SHARE_PCT : n;
			if (!strncmp(key, "reserve", 7))
				s->reserve = v64;
			else
				s->cap = v64;
		} else {
			snprintf(why, len, "settings: key \"%s\" with value %s is not a setting "
				 "or out of range", key,
				 json_object_to_json_string_ext(val, JSON_C_TO_STRING_NOSLASHESCAPE));
			return -EINVAL;
		}
	}
	return 0;
}

int ctl_send(int fd, json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *line = malloc(n + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, s, n);
	line[n] = '\n';
	size_t off = 0;
	int r = 0;
	while (off < n + 1) {
		ssize_t w = send(fd, line + off, n + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	free(line);
	return r;
}

json_object *ctl_recv(int fd, char *buf, size_t cap, size_t *fill, int *err)
{
	*err = 0;
	for (;;) {
		char *nl = memchr(buf, '\n', *fill);
		if (nl) {
			*nl = 0;
			json_object *o = json_tokener_parse(buf);
			size_t used = (size_t)(nl - buf) + 1;
			memmove(buf, nl + 1, *fill - used);
			*fill -= used;
			if (!o || !json_object_is_type(o, json_type_object)) {
				json_object_put(o);
				*err = -EPROTO;
				return NULL;
			}
			return o;
		}
		if (*fill >= cap - 1) {
			*err = -EPROTO;     /* a line longer than the protocol allows */
			return NULL;
		}
		ssize_t n = recv(fd, buf + *fill, cap - 1 - *fill, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = -errno;
			return NULL;
		}
		if (n == 0) {
			*err = *fill ? -EPROTO : 0;
			return NULL;
		}
		*fill += (size_t)n;
	}
}
