/* SPDX-License-Identifier: MIT */
/*
 * mrc.c - one replay per cache size, reported as it goes (see mrc.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mrc.h"

uint64_t mrc_size_bytes(const struct mrc_size *s, uint64_t footprint, uint32_t line_size)
{
	if (!s->pct)
		return s->bytes;
	/* Whole lines, rounded down as the simulators round a fraction of the objects
	 * (libCacheSim: (int64_t)(fraction * objects)); the 1e-6 line keeps a product
	 * that is a whole number in decimal (10 % of 269,210) from falling one short
	 * through binary rounding. */
	double lines = floor(s->fraction * (double)footprint / (double)line_size + 1e-6);
	return lines < 1 ? line_size : (uint64_t)lines * line_size;
}

int mrc_run(const struct trace *t, const struct replay_map *m, const struct report_cfg *c,
	    const struct mrc_size *sizes, int n, bool curve, bool json,
	    const struct mrc_hooks *h, char *err, size_t errlen)
{
	struct replay_result *res = malloc(sizeof(*res));
	int r = 0;

	if (!res) {
		snprintf(err, errlen, "out of memory for a replay result");
		return -ENOMEM;
	}
	json_object *jruns = json_object_new_array();
	json_object *jmrc = json_object_new_array();
	json_object *layout = NULL;
	json_object *jt = report_json_trace(t, m, c, &layout);
	if (!json) {
		report_print_trace(t, m, c);
		if (curve)
			report_print_mrc_head(c);
	}
	for (int i = 0; i < n; i++) {
		struct replay_opts ro = *c->ro;
		ro.cache_bytes = mrc_size_bytes(&sizes[i], m->footprint, ro.cache.line_size);
		if (h && h->before)
			h->before(h->opaque, &sizes[i], &ro);
		r = replay_run(t, m, &ro, res, err, errlen);
		if (h && h->after)
			h->after(h->opaque, &sizes[i], &ro, r);
		if (r && r != -EINTR)
			break;
		json_object *jr = report_json_result(res, m, c);
		if (curve) {
			json_object_array_add(jmrc, report_json_mrc_point(sizes[i].text, res, m));
			if (!json)
				report_print_mrc_row(sizes[i].text, res, m);
		} else if (!json) {
			report_print_result(res, m, c);
		}
		json_object_array_add(jruns, jr);
		if (r == -EINTR)
			break;
	}

	if (json && json_object_array_length(jruns) > 0) {
		json_object *top;
		if (curve) {
			top = json_object_new_object();
			json_object_object_add(top, "trace", json_object_get(jt));
			json_object_object_add(top, "layout", json_object_get(layout));
			json_object_object_add(top, "runs", json_object_get(jruns));
			json_object_object_add(top, "mrc", json_object_get(jmrc));
		} else {
			top = json_object_get(json_object_array_get_idx(jruns, 0));
			json_object_object_add(top, "trace", json_object_get(jt));
			json_object_object_add(top, "layout", json_object_get(layout));
		}
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	}
	json_object_put(jt);
	json_object_put(layout);
	json_object_put(jmrc);
	json_object_put(jruns);
	free(res);
	return r;
}
