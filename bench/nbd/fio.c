/* SPDX-License-Identifier: MIT */
/*
 * fio.c - one fio run of a workload against the served volume, its JSON output, and the
 * engine's hit counters around it from the control socket (see bench.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ctl.h"

uint64_t jget_u64(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

double jget_d(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : NAN;
}

json_object *jget(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}


static json_object *stats_call(struct bench *b, bool reset)
{
	int fd = ctl_connect(b->ctl);
	if (fd < 0)
		return NULL;
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("stats"));
	json_object_object_add(req, "volume", json_object_new_string(VOLNAME));
	if (reset)
		json_object_object_add(req, "reset", json_object_new_boolean(1));
	int err;
	json_object *resp = ctl_call(fd, req, NULL, NULL, &err);
	json_object_put(req);
	close(fd);
	json_object *ok = jget(resp, "ok");
	if (!ok || !json_object_get_boolean(ok)) {
		json_object_put(resp);
		return NULL;
	}
	json_object *res = json_object_get(jget(resp, "result"));
	json_object_put(resp);
	return res;
}

/* Run workload @w at queue depth @qd for @secs over [@off, @off + @size); the fio
 * output goes to OUTDIR/@fname.  Fills @r (measurement) unless @r is NULL (warm-up). */
int fio_run(struct bench *b, const struct target *t, const struct workload *w,
		   unsigned qd, uint64_t secs, uint64_t off, uint64_t size, const char *fname,
		   struct result *r)
{
	char job[PATH_MAX + 32], outp[PATH_MAX + 96], outarg[PATH_MAX + 128], log[PATH_MAX + 32];
	char e_uri[PATH_MAX + 64], e_qd[32], e_rt[32], e_off[48], e_size[48], e_seed[48];
	snprintf(job, sizeof(job), "%s/%s", b->fio_dir, w->job);
	snprintf(outp, sizeof(outp), "%s/%s", b->outdir, fname);
	snprintf(outarg, sizeof(outarg), "--output=%s", outp);
	snprintf(log, sizeof(log), "%s/logs/fio.log", b->outdir);
	snprintf(e_uri, sizeof(e_uri), "URI=nbd+unix:///%s?socket=%s", VOLNAME, b->sock);
	snprintf(e_qd, sizeof(e_qd), "QD=%u", qd);
	snprintf(e_rt, sizeof(e_rt), "RUNTIME=%" PRIu64, secs);
	snprintf(e_off, sizeof(e_off), "OFFSET=%" PRIu64, off);
	snprintf(e_size, sizeof(e_size), "SIZE=%" PRIu64, size);
	snprintf(e_seed, sizeof(e_seed), "SEED=%" PRIu64, b->seed++);
	char *env[] = { e_uri, e_qd, e_rt, e_off, e_size, e_seed, NULL };
	char *av[] = { (char *)b->fio, (char *)"--output-format=json", outarg, job, NULL };
	FILE *lf = fopen(log, "a");
	if (lf) {
		fprintf(lf, "== %s %s QD %u: %s %s %s %s %s %s %s %s\n", t->name, w->name, qd,
			e_uri, e_qd, e_rt, e_off, e_size, e_seed, b->fio, job);
		fclose(lf);
	}
	if (r && t->kind == T_TC) {
		json_object *s = stats_call(b, true);
		if (!s)
			cli_warn("%s: could not reset the volume's counters", t->name);
		json_object_put(s);
	}
	unlink(outp);
	int rc = proc_run(av, log, log, env, true);
	if (interrupted)
		return -1;
	json_object *o = json_object_from_file(outp);
	json_object *job0 = json_object_array_get_idx(jget(o, "jobs"), 0);
	int ferr = (int)jget_u64(job0, "error");
	json_object *m = jget(job0, "mixed");
	if (rc || !m || ferr) {
		char msg[160];
		snprintf(msg, sizeof(msg), "fio exited %d%s%s", rc, ferr ? ", job error " : "",
			 ferr ? strerror(ferr) : "");
		if (r) {
			r->ok = false;
			snprintf(r->error, sizeof(r->error), "%s", msg);
		}
		cli_err("%s %s QD %u: %s; fio's log: %s", t->name, w->name, qd, msg, log);
		tail_file(log, 6);
		json_object_put(o);
		return -1;
	}
	if (r) {
		r->ok = true;
		r->iops = jget_d(m, "iops");
		r->mbs = jget_d(m, "bw_bytes") / 1e6;
		json_object *lat = jget(m, "lat_ns"), *pc = jget(lat, "percentile");
		r->lat_mean = jget_d(lat, "mean") / 1e3;
		r->lmax = jget_d(lat, "max") / 1e3;
		r->p50 = jget_d(pc, "50.000000") / 1e3;
		r->p99 = jget_d(pc, "99.000000") / 1e3;
		r->p999 = jget_d(pc, "99.900000") / 1e3;
		/* fio's percentiles are bucketed (within ~1.5 %), its max is exact: a
		 * percentile is never above the max (table, JSON, CSV and plots alike). */
		r->p50 = r->p50 > r->lmax ? r->lmax : r->p50;
		r->p99 = r->p99 > r->lmax ? r->lmax : r->p99;
		r->p999 = r->p999 > r->lmax ? r->lmax : r->p999;
	}
	json_object_put(o);
	if (r && t->kind == T_TC) {
		json_object *s = stats_call(b, false);
		if (s) {
			double hits = 0, all = 0, rh = 0, ra = 0;
			static const char *const rk[] = { "read_hits", "read_partial_hits",
							  "read_misses" };
			static const char *const wk[] = { "write_hits", "write_partial_hits",
							  "write_misses" };
			for (int i = 0; i < 3; i++) {
				ra += (double)jget_u64(s, rk[i]);
				all += (double)jget_u64(s, rk[i]) + (double)jget_u64(s, wk[i]);
			}
			rh = (double)jget_u64(s, "read_hits");
			hits = rh + (double)jget_u64(s, "write_hits");
			r->have_hits = true;
			r->hit = all > 0 ? hits / all : NAN;
			r->rhit = ra > 0 ? rh / ra : NAN;
			r->dirty = jget_u64(s, "dirty_bytes");
			json_object_put(s);
		} else {
			cli_warn("%s: could not read the volume's counters", t->name);
		}
	}
	return 0;
}
