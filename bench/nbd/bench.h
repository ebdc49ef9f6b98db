/* SPDX-License-Identifier: MIT */
/*
 * bench.h - tc-bench-nbd, what `tiercache bench` runs: one run that puts side by side,
 * through NBD with fio on the real clock, the backing device alone, tiercache in each
 * write policy, and nbdkit's own cache filter over the same backing.
 *
 * For each target the devices are made afresh (sparse files in a temporary folder,
 * emulated HDD and SSD by default), a server is started (`tiercache serve
 * --foreground`, or nbdkit with --filter=cache over the tiercache plugin serving the
 * backing uncached), the workloads of bench/fio/ run one after the other at each
 * queue depth, and the server is stopped.  fio's JSON output gives IOPS, throughput
 * and latency percentiles; the server's control socket gives the engine's hit
 * counters (reset before each run).  Results: a table (or --json) on stdout, and with
 * --out the JSON, CSV, gnuplot data, PNG plots and every fio output.
 *
 * Child processes: fio stays in our process group (a Ctrl-C reaches it and it stops);
 * servers get their own group and are stopped by us with SIGTERM.  SIGINT and SIGTERM
 * set a flag; the bench then stops fio and the server, removes its temporary folder
 * and exits 130.
 *
 * Files: main.c the options and the order of things, run.c processes, devices, servers
 * and the targets' runs, fio.c one fio run and its JSON, report.c tables, JSON, CSV
 * and plots.  The program uses the library only through tiercache.h and the control
 * protocol's client (src/ctl/ctl.h).  Sizes are in bytes, latencies in microseconds.
 */
#ifndef TC_BENCH_NBD_H
#define TC_BENCH_NBD_H

#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "cli.h"

/* Exit codes, as the `tiercache` command's. */
#define BENCH_OK 0
#define BENCH_FAIL 1

#define VOLNAME "bench"  /* the volume every target serves */
#define MAXQD 16        /* queue depths per list */
#define MAXT 8          /* targets */
#define NWORK 5         /* entries of workloads[] */

/* What serves a target: the backing alone, tiercache, nbdkit's cache filter. */
enum tkind { T_UNCACHED, T_TC, T_NBDKIT };

/* One target of the comparison (--targets). */
struct target {
	char name[16];          /* "uncached", "tc-wb", "nbdkit-wt" */
	enum tkind kind;
	char mode[4];           /* "wb" ... for T_TC and T_NBDKIT */
};

/* One workload: a job file of the fio folder. */
struct workload {
	const char *name;
	const char *job;        /* file in the fio dir */
	bool seq, warmup, db;
};

/* One measured fio run: a target, a workload, a queue depth. */
struct result {
	int target, work;
	unsigned qd;
	bool ok;
	char error[160];
	double iops, mbs, lat_mean, p50, p99, p999, lmax;   /* latencies in us */
	bool have_hits;
	double hit, rhit;
	uint64_t dirty;
	char fio_out[64];       /* relative to the out dir */
};

/* The whole run: its options, then its state. */
struct bench {
	/* configuration */
	bool quick, json, force;
	uint64_t runtime, warmup, seed, seed0;
	unsigned qd[MAXQD], nqd, dbqd[MAXQD], ndbqd, seqqd[MAXQD], nseqqd;
	struct target t[MAXT];
	int nt;
	bool work_on[NWORK];
	uint64_t cache_size, area, hdd_size, line_size;
	const char *hdd_given, *ssd_given, *hdd_profile, *ssd_profile;
	const char *out, *tmpdir_base, *fio_dir_opt;
	/* state */
	char tiercache[PATH_MAX];     /* the tiercache command: create, attach, serve */
	char plugin[PATH_MAX], fio_dir[PATH_MAX];
	char tmp[2048];              /* our temporary folder ("" if none) */
	char outdir[2112];           /* results go here (--out, or tmp/out) */
	char hdd[PATH_MAX + 32], ssd[PATH_MAX + 32];   /* device specs in use */
	char ssd_dir[PATH_MAX];      /* TMPDIR of nbdkit's cache filter */
	char sock[PATH_MAX], ctl[PATH_MAX];
	const char *fio, *nbdkit;
	bool formatted_once;
	uint64_t cache_data;         /* tiercache's cache data bytes */
	uint64_t vol_size;
	pid_t server;
	struct result *res;
	size_t nres, capres;
	struct timespec t0;
	char fio_version[64], nbdkit_version[64];
};

/* The workloads, in the order they run (main.c). */
extern const struct workload workloads[NWORK];

/* Set by SIGINT / SIGTERM (the signal); the fio child to pass SIGINT on to, or -1. */
extern volatile sig_atomic_t interrupted;
extern volatile pid_t fio_child;

/* ---- main.c: messages, option values, progress ---- */

/* The name messages start with: "tiercache bench" when run by that command (it is
 * also cli.c's cli_prog_name: messages, usage and option values come from the
 * command's shared helpers, src/cli/cli.h). */
extern const char *bench_name;
/* now_s - seconds since the bench started; progress - "[  12.3s] ..." on stderr. */
double now_s(const struct bench *b);
void progress(const struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* qd_list - the queue depths of workload @w (*@n of them). */
const unsigned *qd_list(const struct bench *b, const struct workload *w, unsigned *n);

/* ---- run.c: processes, devices, servers, targets ---- */

/* proc_run - run @argv with stdin from /dev/null, stdout to the file @out (NULL:
 * /dev/null; appended), stderr to the file @err (appended; NULL: ours), @env
 * ("KEY=VALUE", NULL-terminated) added.  Returns the exit code, 128 + signal, or -1
 * when it could not run.  @track: the child gets our SIGINT (fio). */
int proc_run(char *const argv[], const char *out, const char *err, char *const env[],
	     bool track);
/* tail_file - the last @lines (at most 32) lines of @path on stderr, indented. */
void tail_file(const char *path, int lines);
/* setup - find the programs and the fio jobs, make the temporary and output folders,
 * format the devices once to learn the cache's size.  Returns 0, -1 after a message,
 * or -2 after a usage message. */
int setup(struct bench *b);
/* bench_target - every workload on target @ti.  Returns 0, or -1 when a run failed. */
int bench_target(struct bench *b, int ti);
/* server_stop - stop the server, SIGTERM then SIGKILL after 60 s.  0 if it exited 0. */
int server_stop(struct bench *b);
/* cleanup - stop the server and remove the temporary folder. */
void cleanup(struct bench *b);

/* ---- fio.c: one fio run, JSON fields ---- */

/* fio_run - workload @w on target @t at queue depth @qd for @secs seconds over
 * [@off, @off + @size) bytes; fio's output goes to OUTDIR/@fname.  Fills @r (NULL: a
 * warm-up).  Returns 0, or -1 after a message (also when interrupted). */
int fio_run(struct bench *b, const struct target *t, const struct workload *w,
	    unsigned qd, uint64_t secs, uint64_t off, uint64_t size, const char *fname,
	    struct result *r);
/* Members of a JSON object: NULL, 0 or NaN when @o or the key is absent. */
json_object *jget(json_object *o, const char *key);
uint64_t jget_u64(json_object *o, const char *key);
double jget_d(json_object *o, const char *key);

/* ---- report.c: tables, JSON, CSV, plots ---- */

/* fmt_lat - a latency in us as "850 us", "1.2 ms", "1.50 s" or "n/a" (NaN). */
void fmt_lat(double us, char *buf, size_t len);
/* jnum - a number, or JSON null for NaN and infinities. */
json_object *jnum(double v);
/* print_tables - on @f: one row per run (IOPS, MB/s, latency, hit ratio), then the
 * IOPS ratios between targets per workload and queue depth. */
void print_tables(const struct bench *b, FILE *f);
/* make_json - the whole run as one object (the caller puts it). */
json_object *make_json(const struct bench *b);
/* write_files - results.json and results.csv and the gnuplot data in the output
 * folder.  Returns 0 or -1 after a message. */
int write_files(const struct bench *b, json_object *j);
/* make_plots - the PNG plots with gnuplot; returns how many were made. */
int make_plots(const struct bench *b);

#endif /* TC_BENCH_NBD_H */
