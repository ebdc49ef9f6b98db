/* SPDX-License-Identifier: MIT */
/*
 * report.c - the results of a bench run: tables on stdout, results.json, results.csv,
 * gnuplot data and PNG plots in the output folder (see bench.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"

void fmt_lat(double us, char *buf, size_t len)
{
	if (isnan(us))
		snprintf(buf, len, "n/a");
	else if (us >= 1e6)
		snprintf(buf, len, "%.2f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%.0f us", us);
}


struct pair { int a, b; };

/* The ratios to report: each target against uncached; each tiercache target against
 * nbdkit's filter in the same write mode (else the first nbdkit target). */
static int ratio_pairs(const struct bench *b, struct pair *p, int cap)
{
	int n = 0, unc = -1, nbd_any = -1;
	for (int i = 0; i < b->nt; i++) {
		if (b->t[i].kind == T_UNCACHED && unc < 0)
			unc = i;
		if (b->t[i].kind == T_NBDKIT && nbd_any < 0)
			nbd_any = i;
	}
	for (int i = 0; i < b->nt && unc >= 0 && n < cap; i++)
		if (i != unc)
			p[n++] = (struct pair){ i, unc };
	for (int i = 0; i < b->nt && n < cap; i++) {
		if (b->t[i].kind != T_TC || nbd_any < 0)
			continue;
		int m = nbd_any;
		for (int j = 0; j < b->nt; j++)
			if (b->t[j].kind == T_NBDKIT && !strcmp(b->t[j].mode, b->t[i].mode))
				m = j;
		p[n++] = (struct pair){ i, m };
	}
	return n;
}

static const struct result *find_result(const struct bench *b, int t, int w, unsigned qd)
{
	for (size_t i = 0; i < b->nres; i++)
		if (b->res[i].target == t && b->res[i].work == w && b->res[i].qd == qd &&
		    b->res[i].ok)
			return &b->res[i];
	return NULL;
}

/* The distinct (workload, qd) cells, in run order. */
static size_t cells(const struct bench *b, int *cw, unsigned *cq, size_t cap)
{
	size_t n = 0;
	for (size_t wi = 0; wi < NWORK; wi++) {
		if (!b->work_on[wi])
			continue;
		unsigned nq;
		const unsigned *qds = qd_list(b, &workloads[wi], &nq);
		for (unsigned q = 0; q < nq && n < cap; q++) {
			cw[n] = (int)wi;
			cq[n++] = qds[q];
		}
	}
	return n;
}

static void print_num(FILE *f, double v, int width, int prec)
{
	if (isnan(v))
		fprintf(f, " %*s", width, "n/a");
	else
		fprintf(f, " %*.*f", width, prec, v);
}

void print_tables(const struct bench *b, FILE *f)
{
	fprintf(f, "%-10s %-10s %4s %9s %8s %9s %9s %9s %9s %5s\n", "TARGET", "WORKLOAD",
		"QD", "IOPS", "MB/s", "p50 us", "p99 us", "p99.9 us", "max us", "HIT");
	for (size_t i = 0; i < b->nres; i++) {
		const struct result *r = &b->res[i];
		fprintf(f, "%-10s %-10s %4u", b->t[r->target].name, workloads[r->work].name,
			r->qd);
		if (!r->ok) {
			fprintf(f, "  failed: %s\n", r->error);
			continue;
		}
		print_num(f, r->iops, 9, 0);
		print_num(f, r->mbs, 8, 1);
		print_num(f, r->p50, 9, 0);
		print_num(f, r->p99, 9, 0);
		print_num(f, r->p999, 9, 0);
		print_num(f, r->lmax, 9, 0);
		print_num(f, r->have_hits ? r->hit : NAN, 5, 2);
		fputc('\n', f);
	}
	fprintf(f, "(p50, p99, p99.9: fio's bucketed percentiles, within about 1.5 %%, at most "
		"the exact max)\n");
	struct pair p[2 * MAXT];
	int np = ratio_pairs(b, p, 2 * MAXT);
	if (!np)
		return;
	fprintf(f, "\nIOPS ratios, this run (A/B: A's IOPS over B's)\n%-10s %4s", "WORKLOAD",
		"QD");
	for (int i = 0; i < np; i++) {
		char h[40];
		snprintf(h, sizeof(h), "%s/%s", b->t[p[i].a].name, b->t[p[i].b].name);
		fprintf(f, " %*s", (int)(strlen(h) > 9 ? strlen(h) : 9), h);
	}
	fputc('\n', f);
	int cw[NWORK * MAXQD];
	unsigned cq[NWORK * MAXQD];
	size_t nc = cells(b, cw, cq, NWORK * MAXQD);
	for (size_t c = 0; c < nc; c++) {
		fprintf(f, "%-10s %4u", workloads[cw[c]].name, cq[c]);
		for (int i = 0; i < np; i++) {
			char h[40];
			int w = snprintf(h, sizeof(h), "%s/%s", b->t[p[i].a].name, b->t[p[i].b].name);
			const struct result *ra = find_result(b, p[i].a, cw[c], cq[c]);
			const struct result *rb = find_result(b, p[i].b, cw[c], cq[c]);
			double v = ra && rb && rb->iops > 0 ? ra->iops / rb->iops : NAN;
			print_num(f, v, w > 9 ? w : 9, 2);
		}
		fputc('\n', f);
	}
}

json_object *jnum(double v)
{
	return isnan(v) ? NULL : json_object_new_double(round(v * 1000) / 1000);
}

static json_object *uint_list(const unsigned *v, unsigned n)
{
	json_object *a = json_object_new_array();
	for (unsigned i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int((int)v[i]));
	return a;
}

json_object *make_json(const struct bench *b)
{
	json_object *o = json_object_new_object(), *m = json_object_new_object();
	json_object_object_add(o, "tool", json_object_new_string("tiercache bench"));
	json_object_object_add(o, "version", json_object_new_string(TC_VERSION));
	struct sysinfo si;
	struct utsname un;
	sysinfo(&si);
	uname(&un);
	json_object_object_add(m, "nproc", json_object_new_int((int)sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_object_add(m, "mem_bytes",
			       json_object_new_int64((int64_t)si.totalram * si.mem_unit));
	json_object_object_add(m, "kernel", json_object_new_string(un.release));
	json_object_object_add(m, "fio", json_object_new_string(b->fio_version));
	json_object_object_add(m, "nbdkit", json_object_new_string(b->nbdkit_version));
	json_object_object_add(o, "machine", m);
	json_object *c = json_object_new_object();
	json_object_object_add(c, "quick", json_object_new_boolean(b->quick));
	json_object_object_add(c, "runtime_s", json_object_new_int64((int64_t)b->runtime));
	json_object_object_add(c, "warmup_s", json_object_new_int64((int64_t)b->warmup));
	json_object_object_add(c, "qd", uint_list(b->qd, b->nqd));
	json_object_object_add(c, "db_qd", uint_list(b->dbqd, b->ndbqd));
	json_object_object_add(c, "seq_qd", b->nseqqd ? uint_list(b->seqqd, b->nseqqd) :
							uint_list(b->qd, b->nqd));
	json_object *ta = json_object_new_array(), *wa = json_object_new_array();
	for (int i = 0; i < b->nt; i++)
		json_object_array_add(ta, json_object_new_string(b->t[i].name));
	for (size_t i = 0; i < NWORK; i++)
		if (b->work_on[i])
			json_object_array_add(wa, json_object_new_string(workloads[i].name));
	json_object_object_add(c, "targets", ta);
	json_object_object_add(c, "workloads", wa);
	json_object_object_add(c, "hdd", json_object_new_string(b->hdd));
	json_object_object_add(c, "ssd", json_object_new_string(b->ssd));
	json_object_object_add(c, "cache_bytes", json_object_new_int64((int64_t)b->cache_data));
	json_object_object_add(c, "area_bytes", json_object_new_int64((int64_t)b->area));
	json_object_object_add(c, "seed", json_object_new_int64((int64_t)b->seed0));
	json_object_object_add(o, "config", c);
	json_object *ra = json_object_new_array();
	for (size_t i = 0; i < b->nres; i++) {
		const struct result *r = &b->res[i];
		json_object *e = json_object_new_object();
		json_object_object_add(e, "target", json_object_new_string(b->t[r->target].name));
		json_object_object_add(e, "workload", json_object_new_string(workloads[r->work].name));
		json_object_object_add(e, "qd", json_object_new_int((int)r->qd));
		json_object_object_add(e, "iops", r->ok ? jnum(r->iops) : NULL);
		json_object_object_add(e, "mb_s", r->ok ? jnum(r->mbs) : NULL);
		json_object *l = NULL;
		if (r->ok) {
			l = json_object_new_object();
			json_object_object_add(l, "mean", jnum(r->lat_mean));
			json_object_object_add(l, "p50", jnum(r->p50));
			json_object_object_add(l, "p99", jnum(r->p99));
			json_object_object_add(l, "p99_9", jnum(r->p999));
			json_object_object_add(l, "max", jnum(r->lmax));
		}
		json_object_object_add(e, "lat_us", l);
		json_object_object_add(e, "hit_ratio", r->have_hits ? jnum(r->hit) : NULL);
		json_object_object_add(e, "read_hit_ratio", r->have_hits ? jnum(r->rhit) : NULL);
		json_object_object_add(e, "dirty_bytes",
				       r->have_hits ? json_object_new_int64((int64_t)r->dirty) : NULL);
		json_object_object_add(e, "fio_output", b->out ? json_object_new_string(r->fio_out)
							       : NULL);
		json_object_object_add(e, "error", r->ok ? NULL : json_object_new_string(r->error));
		json_object_array_add(ra, e);
	}
	json_object_object_add(o, "results", ra);
	json_object *rt = json_object_new_array();
	struct pair p[2 * MAXT];
	int np = ratio_pairs(b, p, 2 * MAXT);
	int cw[NWORK * MAXQD];
	unsigned cq[NWORK * MAXQD];
	size_t nc = cells(b, cw, cq, NWORK * MAXQD);
	for (size_t ci = 0; ci < nc; ci++)
		for (int i = 0; i < np; i++) {
			const struct result *x = find_result(b, p[i].a, cw[ci], cq[ci]);
			const struct result *y = find_result(b, p[i].b, cw[ci], cq[ci]);
			if (!x || !y || y->iops <= 0)
				continue;
			json_object *e = json_object_new_object();
			json_object_object_add(e, "workload",
					       json_object_new_string(workloads[cw[ci]].name));
			json_object_object_add(e, "qd", json_object_new_int((int)cq[ci]));
			json_object_object_add(e, "target", json_object_new_string(b->t[p[i].a].name));
			json_object_object_add(e, "vs", json_object_new_string(b->t[p[i].b].name));
			json_object_object_add(e, "ratio", jnum(x->iops / y->iops));
			json_object_array_add(rt, e);
		}
	json_object_object_add(o, "ratios", rt);
	json_object_object_add(o, "elapsed_s", jnum(now_s(b)));
	json_object_object_add(o, "out", b->out ? json_object_new_string(b->outdir) : NULL);
	return o;
}

static void csv_num(FILE *f, double v, bool have)
{
	if (have && !isnan(v))
		fprintf(f, ",%.3f", v);
	else
		fputs(",", f);
}

int write_files(const struct bench *b, json_object *j)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/results.json", b->outdir);
	if (json_object_to_file_ext(p, j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED)) {
		cli_err("%s: cannot write", p);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/results.csv", b->outdir);
	FILE *f = fopen(p, "w");
	if (!f) {
		cli_err("%s: %s", p, strerror(errno));
		return -1;
	}
	fputs("target,workload,qd,iops,mb_s,lat_mean_us,lat_p50_us,lat_p99_us,lat_p99_9_us,"
	      "lat_max_us,hit_ratio,read_hit_ratio,dirty_bytes,error\n", f);
	for (size_t i = 0; i < b->nres; i++) {
		const struct result *r = &b->res[i];
		fprintf(f, "%s,%s,%u", b->t[r->target].name, workloads[r->work].name, r->qd);
		csv_num(f, r->iops, r->ok);
		csv_num(f, r->mbs, r->ok);
		csv_num(f, r->lat_mean, r->ok);
		csv_num(f, r->p50, r->ok);
		csv_num(f, r->p99, r->ok);
		csv_num(f, r->p999, r->ok);
		csv_num(f, r->lmax, r->ok);
		csv_num(f, r->hit, r->have_hits);
		csv_num(f, r->rhit, r->have_hits);
		if (r->have_hits)
			fprintf(f, ",%" PRIu64, r->dirty);
		else
			fputs(",", f);
		fprintf(f, ",%s\n", r->ok ? "" : r->error);
	}
	fclose(f);
	/* gnuplot data: dat/WORKLOAD_TARGET.dat */
	for (size_t wi = 0; wi < NWORK; wi++)
		for (int ti = 0; ti < b->nt; ti++) {
			bool any = false;
			for (size_t i = 0; i < b->nres; i++)
				any |= b->res[i].ok && b->res[i].work == (int)wi &&
				       b->res[i].target == ti;
			if (!any)
				continue;
			snprintf(p, sizeof(p), "%s/dat/%s_%s.dat", b->outdir, workloads[wi].name,
				 b->t[ti].name);
			f = fopen(p, "w");
			if (!f) {
				cli_err("%s: %s", p, strerror(errno));
				return -1;
			}
			fprintf(f, "# %s, %s: qd iops mb_s p50_us p99_us p99.9_us max_us\n",
				b->t[ti].name, workloads[wi].name);
			for (size_t i = 0; i < b->nres; i++) {
				const struct result *r = &b->res[i];
				if (r->ok && r->work == (int)wi && r->target == ti)
					fprintf(f, "%u %.1f %.2f %.1f %.1f %.1f %.1f\n", r->qd, r->iops,
						r->mbs, r->p50, r->p99, r->p999, r->lmax);
			}
			fclose(f);
		}
	return 0;
}

/* gnuplot script (kept in the out dir), then gnuplot.  Returns the number of plots. */
int make_plots(const struct bench *b)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/plots.gp", b->outdir);
	/* pngcairo if this gnuplot has it, else the libgd png terminal. */
	char *probe[] = { (char *)"gnuplot", (char *)"-e", (char *)"set terminal pngcairo",
			  NULL };
	int pr = proc_run(probe, NULL, "/dev/null", NULL, false);
	if (pr == 127 || pr < 0) {
		cli_warn("gnuplot not found: no plots (install gnuplot-nox)");
		return 0;
	}
	bool cairo = pr == 0;
	FILE *f = fopen(p, "w");
	if (!f) {
		cli_err("%s: %s", p, strerror(errno));
		return 0;
	}
	fprintf(f, "# plots.gp - written by `tiercache bench`; run `gnuplot plots.gp` here.\n");
	if (cairo)
		fprintf(f, "set terminal pngcairo size 900,520 font 'sans,10' noenhanced\n");
	else
		fprintf(f, "set terminal png size 900,520 noenhanced\n");
	fprintf(f, "set logscale x 2\nset logscale y 10\nset grid\nset key outside right top\n"
		   "set xlabel 'queue depth'\nset format y '%%.0f'\n");
	int nplots = 0;
	for (size_t wi = 0; wi < NWORK; wi++) {
		if (!b->work_on[wi])
			continue;
		const struct workload *w = &workloads[wi];
		int have[MAXT], nh = 0;
		for (int ti = 0; ti < b->nt; ti++) {
			bool any = false;
			for (size_t i = 0; i < b->nres; i++)
				any |= b->res[i].ok && b->res[i].work == (int)wi &&
				       b->res[i].target == ti;
			if (any)
				have[nh++] = ti;
		}
		if (!nh)
			continue;
		/* One colour per target, the same in every plot. */
		static const char *const colour[MAXT] = { "#404040", "#1f77b4", "#2ca02c",
			"#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2" };
		fprintf(f, "\nset output '%s-%s.png'\n", w->name, w->seq ? "mbs" : "iops");
		fprintf(f, "set title '%s: %s against queue depth (NBD, fio, %" PRIu64 " s runs)'\n",
			w->name, w->seq ? "MB/s" : "IOPS", b->runtime);
		fprintf(f, "set ylabel '%s'\nplot ", w->seq ? "MB/s (10^6 bytes/s)" : "IOPS");
		for (int i = 0; i < nh; i++)
			fprintf(f, "%s'dat/%s_%s.dat' using 1:%d with linespoints lw 2 lc rgb '%s' "
				   "pt 7 title '%s'", i ? ", \\\n     " : "", w->name,
				b->t[have[i]].name, w->seq ? 3 : 2, colour[have[i]], b->t[have[i]].name);
		fprintf(f, "\n\nset output '%s-latency.png'\n", w->name);
		fprintf(f, "set title '%s: latency p50 (solid) and p99 (dashed); p99.9 and max "
			   "in results.csv'\n", w->name);
		fprintf(f, "set ylabel 'latency (us, log scale)'\nplot ");
		for (int i = 0; i < nh; i++) {
			static const struct { int col, dt; const char *n; } pc[] = {
				{ 4, 1, "p50" }, { 5, 2, "p99" } };
			for (int k = 0; k < 2; k++)
				fprintf(f, "%s'dat/%s_%s.dat' using 1:%d with linespoints lw 2 lc rgb "
					   "'%s' dt %d pt 7 ps 0.6 title '%s %s'",
					i || k ? ", \\\n     " : "", w->name, b->t[have[i]].name,
					pc[k].col, colour[have[i]], pc[k].dt, b->t[have[i]].name,
					pc[k].n);
		}
		fputc('\n', f);
		nplots += 2;
	}
	fclose(f);
	char log[PATH_MAX + 32];
	snprintf(log, sizeof(log), "%s/logs/gnuplot.log", b->outdir);
	char *av[] = { (char *)"sh", (char *)"-c", (char *)"cd \"$0\" && exec gnuplot plots.gp",
		       (char *)b->outdir, NULL };
	if (proc_run(av, log, log, NULL, false)) {
		cli_warn("gnuplot failed: see %s", log);
		return 0;
	}
	return nplots;
}

