/* SPDX-License-Identifier: MIT */
/*
 * cmd_bench.c - `tiercache bench`: one run that puts side by side, through NBD with
 * fio on the real clock, the backing device alone, tiercache in each write policy, and
 * nbdkit's own cache filter over the same backing.
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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"

static const char help[] =
"NAME\n"
"    tiercache bench - compare no cache, tiercache and nbdkit's cache filter with fio\n"
"\n"
"SYNOPSIS\n"
"    tiercache bench [--quick] [--runtime S] [--warmup S] [--qd LIST] [--seq-qd LIST]\n"
"                    [--db-qd LIST] [--targets LIST] [--policies LIST]\n"
"                    [--workloads LIST] [--cache-size SIZE] [--area SIZE]\n"
"                    [--hdd-size SIZE] [--hdd SPEC --ssd SPEC [--force]]\n"
"                    [--hdd-profile P] [--ssd-profile P] [--line-size SIZE]\n"
"                    [--out DIR] [--tmpdir DIR] [--fio-dir DIR] [--seed N] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Runs the fio workloads of bench/fio/ through NBD (fio's nbd engine, one\n"
"    connection, real clock) against each target in turn, in one run, so that the\n"
"    ratios compare like with like:\n"
"      uncached    the backing device alone: a backing never attached to a cache,\n"
"                  served uncached by `tiercache serve`\n"
"      wt wb wa pt tiercache with that write policy (also written tc-wt, ...)\n"
"      nbdkit-wb   nbdkit's cache filter (cache=writeback, cache-on-read=true,\n"
"      nbdkit-wt   cache=writethrough) over the tiercache plugin serving the same\n"
"                  backing uncached: `nbdkit --filter=cache PLUGIN dev=SPEC`;\n"
"                  cache-max-size is tiercache's cache size.  nbdkit-cache is\n"
"                  nbdkit-wb.\n"
"    nbdkit's filter keeps its cache in an unlinked temporary file in $TMPDIR, set\n"
"    here to the SSD's folder: the file is not on the emulated SSD and lives in the\n"
"    page cache, so its hits run at RAM speed, not SSD speed.  In writeback mode it\n"
"    writes dirty blocks to the backing only when the client flushes (fio does not).\n"
"\n"
"    Each target starts from freshly formatted devices.  By default they are sparse\n"
"    files in a temporary folder (removed at the end, also on Ctrl-C): an emulated\n"
"    HDD (emu:hdd:...) as backing and an emulated SATA SSD (emu:sata-ssd:...) as\n"
"    cache.  --hdd and --ssd take given devices instead (any device spec: a path,\n"
"    emu:PROFILE:PATH); THEIR CONTENTS ARE DESTROYED: they are formatted for every\n"
"    target (the first time only if they hold no data, unless --force).\n"
"\n"
"    Workloads, run in this order on each target (one fio run per queue depth):\n"
"      seq-read    sequential 1 MiB reads\n"
"      seq-write   sequential 1 MiB writes\n"
"      rand-read   random 4 KiB reads, after a warm-up\n"
"      db          the reviews' \"database\" (OLTP) pattern: random 4-64 KiB\n"
"                  (bssplit), 67 % reads, queue depths --db-qd, after a warm-up\n"
"      rand-write  random 4 KiB writes (last: in write-back they leave dirty data)\n"
"    The random ones run over the test area (--area) from offset 0; each\n"
"    sequential run reads or writes a region of its own after it, so nothing is\n"
"    read twice (a cache that keeps sequential data would serve it from RAM).  A\n"
"    warm-up runs the workload at queue depth 16 for --warmup seconds, unmeasured,\n"
"    once per target.\n"
"    Before each run of a tiercache target the volume's counters are reset through\n"
"    the control socket (as `tiercache stats VOLUME --reset` does); after it they\n"
"    give the hit ratio: line hits / lines touched, reads and writes together\n"
"    (n/a for uncached and nbdkit targets, which have no such counters).\n"
"\n"
"OPTIONS\n"
"    --quick              short run: --runtime 2, --warmup 3, --qd 1,16, --seq-qd 4,\n"
"                         --db-qd 1,16, --cache-size 256M, targets uncached, wt, wb,\n"
"                         nbdkit-wb (about 2 minutes on 2 cores); other options\n"
"                         given override these\n"
"    --runtime S          seconds per measured fio run (default 5)\n"
"    --warmup S           seconds of warm-up before rand-read and db (default 20;\n"
"                         0 = none)\n"
"    --qd LIST            queue depths, comma-separated, 1..256 (default 1,4,16,64)\n"
"    --seq-qd LIST        queue depths of seq-read and seq-write (default --qd's)\n"
"    --db-qd LIST         queue depths of the db pattern (default 1,4,16,64,256)\n"
"    --targets LIST       targets among uncached, wt, wb, wa, pt, nbdkit-wt,\n"
"                         nbdkit-wb (default uncached,wt,wb,nbdkit-wt,nbdkit-wb)\n"
"    --policies LIST      the tiercache write policies to run (replaces the wt, wb,\n"
"                         ... entries of the targets), e.g. wt,wb,wa,pt\n"
"    --workloads LIST     among seq-read, seq-write, rand-read, db, rand-write\n"
"                         (default all)\n"
"    --cache-size SIZE    size of the SSD device made (default 1G); nbdkit's cache\n"
"                         gets the same data size (cache-max-size)\n"
"    --area SIZE          test area (default twice the cache's data size: the cache\n"
"                         holds half of it)\n"
"    --hdd-size SIZE      size of the HDD device made (default: room for the area\n"
"                         and every sequential run, runtime x 300 MB each, rounded\n"
"                         up to a GiB; sparse).  On a smaller device the sequential\n"
"                         runs share the space after the area\n"
"    --hdd SPEC, --ssd SPEC   use these devices (see above); both or neither\n"
"    --force              format given devices even if they hold data\n"
"    --hdd-profile P      emulated HDD profile (default hdd; see profiles/)\n"
"    --ssd-profile P      emulated SSD profile (default sata-ssd)\n"
"    --line-size SIZE     cache line size (default the cache's default, 64K)\n"
"    --out DIR            keep the results in DIR (created): results.json,\n"
"                         results.csv, dat/*.dat, plots.gp and *.png (gnuplot: per\n"
"                         workload IOPS, or MB/s, and latency p50/p99 against queue\n"
"                         depth, one line per target, log scales),\n"
"                         fio/*.json (every fio output), logs/ (server logs)\n"
"    --tmpdir DIR         where the temporary folder goes (default $TMPDIR, else\n"
"                         /tmp)\n"
"    --fio-dir DIR        the job files (default $TC_FIO_DIR, else bench/fio of the\n"
"                         source tree)\n"
"    --seed N             fio's random seed of the first run (default 1; each run\n"
"                         adds 1, so warm-up and runs touch different blocks)\n"
"    --json               print one JSON object instead of the tables\n"
"\n"
"OUTPUT\n"
"    Progress on stderr.  On stdout one line per run: target, workload, queue\n"
"    depth, IOPS, MB/s (10^6 bytes/s), latency p50, p99, p99.9 and max in\n"
"    microseconds (the percentiles are fio's bucketed figures, within about 1.5 %,\n"
"    and never shown above the exact max: one is clamped to it), hit ratio; then the ratios of IOPS, in this run: each target\n"
"    against uncached, each tiercache target against nbdkit's filter in the same\n"
"    write mode (or the other one).\n"
"    JSON: {\"tool\", \"version\", \"machine\": {\"nproc\", \"mem_bytes\", \"kernel\",\n"
"    \"fio\", \"nbdkit\"}, \"config\": {\"quick\", \"runtime_s\", \"warmup_s\", \"qd\",\n"
"    \"seq_qd\", \"db_qd\", \"targets\", \"workloads\", \"hdd\", \"ssd\", \"cache_bytes\",\n"
"    \"area_bytes\", \"seed\"}, \"results\": [{\"target\", \"workload\", \"qd\", \"iops\",\n"
"    \"mb_s\", \"lat_us\": {\"mean\", \"p50\", \"p99\", \"p99_9\", \"max\"}, \"hit_ratio\",\n"
"    \"read_hit_ratio\", \"dirty_bytes\", \"fio_output\", \"error\"}], \"ratios\":\n"
"    [{\"workload\", \"qd\", \"target\", \"vs\", \"ratio\"}], \"elapsed_s\", \"out\"};\n"
"    null where a value does not apply (hit ratios of uncached and nbdkit targets).\n"
"\n"
"ENVIRONMENT\n"
"    TC_FIO (default fio), TC_NBDKIT (default nbdkit), TC_NBDKIT_PLUGIN (see\n"
"    `tiercache serve --help`), TC_FIO_DIR, TMPDIR.\n"
"\n"
"EXAMPLES\n"
"    tiercache bench --quick\n"
"    tiercache bench --out /tmp/bench-full\n"
"    tiercache bench --quick --targets uncached,wt,wb --workloads rand-read,db\n"
"\n"
"EXIT STATUS\n"
"    0 every run completed, 1 a run or a server failed (the others are reported),\n"
"    2 bad usage, 130 interrupted.\n";

#define VOLNAME "bench"
#define MAXQD 16
#define MAXT 8

enum tkind { T_UNCACHED, T_TC, T_NBDKIT };

struct target {
	char name[16];          /* "uncached", "tc-wb", "nbdkit-wt" */
	enum tkind kind;
	char mode[4];           /* "wb" ... for T_TC and T_NBDKIT */
};

struct workload {
	const char *name;
	const char *job;        /* file in the fio dir */
	bool seq, warmup, db;
};

static const struct workload workloads[] = {
	{ "seq-read", "seq-read.fio", true, false, false },
	{ "seq-write", "seq-write.fio", true, false, false },
	{ "rand-read", "rand-read.fio", false, true, false },
	{ "db", "db.fio", false, true, true },
	{ "rand-write", "rand-write.fio", false, false, false },
};
#define NWORK (sizeof(workloads) / sizeof(workloads[0]))

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
	char self[PATH_MAX], plugin[PATH_MAX], fio_dir[PATH_MAX];
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

/* The queue depths of workload @w. */
static const unsigned *qd_list(const struct bench *b, const struct workload *w, unsigned *n)
{
	if (w->db) {
		*n = b->ndbqd;
		return b->dbqd;
	}
	if (w->seq && b->nseqqd) {
		*n = b->nseqqd;
		return b->seqqd;
	}
	*n = b->nqd;
	return b->qd;
}

static volatile sig_atomic_t interrupted;
static volatile pid_t fio_child = -1;

static void on_signal(int sig)
{
	interrupted = sig;
	if (fio_child > 0)
		kill(fio_child, SIGINT);
}

static double now_s(const struct bench *b)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - b->t0.tv_sec) + (double)(t.tv_nsec - b->t0.tv_nsec) / 1e9;
}

static void progress(const struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void progress(const struct bench *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tiercache bench: [%6.1fs] %s\n", now_s(b), buf);
}

/* ---- option lists ------------------------------------------------------------------ */

static int parse_qd_list(const char *opt, const char *arg, unsigned *out, unsigned *n)
{
	char *dup = strdup(arg), *save = NULL;
	*n = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (*n == MAXQD) {
			free(dup);
			cli_usage("%s: at most %d queue depths", opt, MAXQD);
			return -1;
		}
		if (cli_uint(opt, tok, 1, 256, &v)) {
			free(dup);
			return -1;
		}
		out[(*n)++] = (unsigned)v;
	}
	free(dup);
	if (!*n) {
		cli_usage("%s: an empty list", opt);
		return -1;
	}
	return 0;
}

static bool is_policy(const char *s)
{
	return !strcmp(s, "wt") || !strcmp(s, "wb") || !strcmp(s, "wa") || !strcmp(s, "pt");
}

static int add_target(struct bench *b, const char *name)
{
	struct target t = { 0 };
	if (!strcmp(name, "uncached")) {
		t.kind = T_UNCACHED;
		snprintf(t.name, sizeof(t.name), "uncached");
	} else if (is_policy(name) || (!strncmp(name, "tc-", 3) && is_policy(name + 3))) {
		const char *p = is_policy(name) ? name : name + 3;
		t.kind = T_TC;
		snprintf(t.mode, sizeof(t.mode), "%s", p);
		snprintf(t.name, sizeof(t.name), "tc-%s", p);
	} else if (!strcmp(name, "nbdkit-wb") || !strcmp(name, "nbdkit-cache") ||
		   !strcmp(name, "nbdkit-wt")) {
		t.kind = T_NBDKIT;
		snprintf(t.mode, sizeof(t.mode), "%s", !strcmp(name, "nbdkit-wt") ? "wt" : "wb");
		snprintf(t.name, sizeof(t.name), "nbdkit-%s", t.mode);
	} else {
		cli_usage("--targets: \"%s\" is not uncached, wt, wb, wa, pt, nbdkit-wt or "
			  "nbdkit-wb", name);
		return -1;
	}
	for (int i = 0; i < b->nt; i++)
		if (!strcmp(b->t[i].name, t.name))
			return 0;
	if (b->nt == MAXT) {
		cli_usage("--targets: too many targets");
		return -1;
	}
	b->t[b->nt++] = t;
	return 0;
}

static int parse_targets(struct bench *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	b->nt = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (add_target(b, tok)) {
			free(dup);
			return -1;
		}
	free(dup);
	if (!b->nt) {
		cli_usage("--targets: an empty list");
		return -1;
	}
	return 0;
}

/* --policies: the T_TC entries become the given policies, in place of the first one
 * (or after uncached when there was none). */
static int apply_policies(struct bench *b, const char *arg)
{
	struct target keep[MAXT];
	int nk = 0, at = -1;
	for (int i = 0; i < b->nt; i++) {
		if (b->t[i].kind == T_TC) {
			if (at < 0)
				at = nk;
		} else {
			keep[nk++] = b->t[i];
		}
	}
	if (at < 0)
		at = (nk && keep[0].kind == T_UNCACHED) ? 1 : 0;
	struct bench tmp = { 0 };
	char *dup = strdup(arg), *save = NULL;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!is_policy(tok) && !(!strncmp(tok, "tc-", 3) && is_policy(tok + 3))) {
			free(dup);
			cli_usage("--policies: \"%s\" is not wt, wb, wa or pt", tok);
			return -1;
		}
		if (add_target(&tmp, tok)) {
			free(dup);
			return -1;
		}
	}
	free(dup);
	b->nt = 0;
	for (int i = 0; i < at && i < nk; i++)
		b->t[b->nt++] = keep[i];
	for (int i = 0; i < tmp.nt && b->nt < MAXT; i++)
		b->t[b->nt++] = tmp.t[i];
	for (int i = at; i < nk && b->nt < MAXT; i++)
		b->t[b->nt++] = keep[i];
	return 0;
}

static int parse_workloads(struct bench *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	memset(b->work_on, 0, sizeof(b->work_on));
	bool any = false;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < NWORK; i++)
			if (!strcmp(tok, workloads[i].name))
				break;
		if (i == NWORK) {
			cli_usage("--workloads: \"%s\" is not seq-read, seq-write, rand-read, db "
				  "or rand-write", tok);
			free(dup);
			return -1;
		}
		b->work_on[i] = any = true;
	}
	free(dup);
	if (!any) {
		cli_usage("--workloads: an empty list");
		return -1;
	}
	return 0;
}

/* ---- processes ------------------------------------------------------------------- */

/* Wait for @pid; on an interruption, pass SIGINT on (fio) once.  Returns the wait
 * status, or -1. */
static int wait_child(pid_t pid)
{
	int st;
	bool sent = false;
	for (;;) {
		pid_t r = waitpid(pid, &st, 0);
		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -1;
		if (interrupted && !sent) {
			kill(pid, SIGINT);
			sent = true;
		}
	}
}

/*
 * run - run @argv with stdin from /dev/null, stdout to the file @out (NULL: /dev/null;
 * appended), stderr to the file @err (appended; NULL: ours).  @env: NULL-terminated
 * "KEY=VALUE" strings added to the environment.  Returns the exit code, 128+signal,
 * or -1 when it could not run.  @track: the child gets our SIGINT (fio).
 */
static int run(char *const argv[], const char *out, const char *err, char *const env[],
	       bool track)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		int o = out ? open(out, O_WRONLY | O_CREAT | O_APPEND, 0644) : nul;
		if (o >= 0)
			dup2(o, 1);
		if (err) {
			int e = open(err, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (e >= 0)
				dup2(e, 2);
		}
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (track)
		fio_child = pid;
	int st = wait_child(pid);
	fio_child = -1;
	if (st < 0)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* Run a tiercache subcommand (this program); stdout to @out (may be NULL), stderr to
 * the bench log.  Returns the exit code. */
static int self_cmd(struct bench *b, const char *out, const char *const args[])
{
	char *av[32];
	int n = 0;
	av[n++] = b->self;
	for (int i = 0; args[i] && n < 31; i++)
		av[n++] = (char *)args[i];
	av[n] = NULL;
	char log[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/logs/commands.log", b->outdir);
	FILE *f = fopen(log, "a");
	if (f) {
		fputs("$ tiercache", f);
		for (int i = 1; i < n; i++)
			fprintf(f, " %s", av[i]);
		fputc('\n', f);
		fclose(f);
	}
	return run(av, out, log, NULL, false);
}

/* Print the last @lines lines of the file @path to stderr, indented. */
static void tail_file(const char *path, int lines)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *ring[32] = { 0 };
	char buf[1024];
	int n = 0;
	if (lines > 32)
		lines = 32;
	while (fgets(buf, sizeof(buf), f)) {
		free(ring[n % lines]);
		ring[n % lines] = strdup(buf);
		n++;
	}
	fclose(f);
	for (int i = n > lines ? n - lines : 0; i < n; i++) {
		fprintf(stderr, "    %s", ring[i % lines]);
		free(ring[i % lines]);
		ring[i % lines] = NULL;
	}
}

/* The path part of a device spec. */
static const char *spec_path(const char *spec)
{
	if (!strncmp(spec, "crash:", 6))
		return spec + 6;
	if (!strncmp(spec, "emu:", 4) && strchr(spec + 4, ':'))
		return strchr(spec + 4, ':') + 1;
	return spec;
}

static int unix_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static void log_path(const struct bench *b, const struct target *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s/logs/%s-server.log", b->outdir, t->name);
}

/* Start the server of target @t and wait until it answers.  Returns 0 or -1 after a
 * message. */
static int server_start(struct bench *b, const struct target *t)
{
	char log[PATH_MAX + 32];
	log_path(b, t, log, sizeof(log));
	unlink(b->sock);
	unlink(b->ctl);
	char *av[24];
	int n = 0;
	char tmpenv[PATH_MAX + 8], devarg[PATH_MAX + 48], maxsz[64], modearg[32];
	char *devs[3] = { 0 };
	if (t->kind == T_NBDKIT) {
		char abs[PATH_MAX + 32];
		if (cli_abs_spec(b->hdd, abs, sizeof(abs)))
			return -1;
		snprintf(devarg, sizeof(devarg), "dev=%s", abs);
		snprintf(maxsz, sizeof(maxsz), "cache-max-size=%" PRIu64, b->cache_data);
		snprintf(modearg, sizeof(modearg), "cache=%s",
			 !strcmp(t->mode, "wt") ? "writethrough" : "writeback");
		av[n++] = (char *)b->nbdkit;
		av[n++] = (char *)"-f";
		av[n++] = (char *)"-t";
		av[n++] = (char *)"256";
		av[n++] = (char *)"-U";
		av[n++] = b->sock;
		av[n++] = (char *)"--filter=cache";
		av[n++] = b->plugin;
		av[n++] = devarg;
		av[n++] = modearg;
		av[n++] = (char *)"cache-on-read=true";
		av[n++] = maxsz;
		snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", b->ssd_dir);
	} else {
		av[n++] = b->self;
		av[n++] = (char *)"serve";
		av[n++] = (char *)"--foreground";
		av[n++] = (char *)"--socket";
		av[n++] = b->sock;
		av[n++] = (char *)"--control";
		av[n++] = b->ctl;
		if (t->kind == T_TC)
			av[n++] = devs[0] = b->ssd;
		av[n++] = b->hdd;
	}
	av[n] = NULL;
	FILE *lf = fopen(log, "a");
	if (lf) {
		fprintf(lf, "$%s", t->kind == T_NBDKIT ? "" : " tiercache");
		for (int i = t->kind == T_NBDKIT ? 0 : 1; i < n; i++)
			fprintf(lf, " %s", av[i]);
		fputc('\n', lf);
		fclose(lf);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_err("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);       /* our Ctrl-C does not reach it: we stop it ourselves */
		int nul = open("/dev/null", O_RDWR);
		int l = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(nul, 0);
		dup2(l >= 0 ? l : nul, 1);
		dup2(l >= 0 ? l : nul, 2);
		if (t->kind == T_NBDKIT)
			putenv(tmpenv);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(av[0], av);
		fprintf(stderr, "cannot run %s: %s\n", av[0], strerror(errno));
		_exit(127);
	}
	b->server = pid;
	for (int waited = 0; waited < 600 && !interrupted; waited++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			b->server = 0;
			cli_err("%s: the server did not start; the end of its log (%s):", t->name,
				log);
			tail_file(log, 12);
			return -1;
		}
		int fd = t->kind == T_NBDKIT ? unix_connect(b->sock) : ctl_connect(b->ctl);
		if (fd >= 0) {
			close(fd);
			/* nbdkit listens before its plugin has assembled the volume; an NBD
			 * connection then waits, which is fine: fio's connect waits too. */
			return 0;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	if (!interrupted)
		cli_err("%s: the server did not answer within 60 s; its log: %s", t->name, log);
	return -1;
}

/* Stop the server (SIGTERM, then SIGKILL after 60 s).  Returns 0 if it exited 0. */
static int server_stop(struct bench *b)
{
	if (b->server <= 0)
		return 0;
	pid_t pid = b->server;
	b->server = 0;
	kill(pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 600; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Is the server still running? */
static bool server_alive(struct bench *b)
{
	if (b->server <= 0)
		return false;
	int st;
	if (waitpid(b->server, &st, WNOHANG) == b->server) {
		b->server = 0;
		return false;
	}
	return true;
}

/* ---- devices ------------------------------------------------------------------------ */

static uint64_t jget_u64(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

static double jget_d(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : NAN;
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A failed tiercache command: its last messages (the log may be in the temporary
 * folder, removed at the end). */
static void cmd_failed(const struct bench *b, const char *what, const char *dev, bool own)
{
	char log[PATH_MAX + 32];
	snprintf(log, sizeof(log), "%s/logs/commands.log", b->outdir);
	cli_err("%s %s failed:", what, dev);
	tail_file(log, 3);
	/* A refusal to overwrite data: say how the bench gets past it. */
	bool refused = false;
	FILE *f = fopen(log, "r");
	if (f) {
		char line[1024];
		while (fgets(line, sizeof(line), f))
			refused = !strncmp(line, "$ ", 2) ? false : refused || strstr(line, "--force");
		fclose(f);
	}
	if (refused && !own && !b->force)
		fprintf(stderr, "tiercache bench: give --force to format --hdd and --ssd devices "
				"that hold data (it is lost)\n");
}

/* Format the HDD as the backing of volume VOLNAME (write policy @wp, may be NULL) and,
 * with @cache, the SSD as a cache, attached offline.  Own devices are made afresh. */
static int format_devices(struct bench *b, const char *wp, bool cache)
{
	char sizebuf[32], csizebuf[32], lsbuf[32], js[PATH_MAX + 32];
	bool own = b->tmp[0] && !b->hdd_given;
	snprintf(js, sizeof(js), "%s/create.json", b->tmp);
	if (own) {
		unlink(spec_path(b->hdd));
		unlink(spec_path(b->ssd));
	}
	snprintf(sizebuf, sizeof(sizebuf), "%" PRIu64, b->hdd_size);
	const char *args[24];
	int n = 0;
	args[n++] = "create";
	args[n++] = "backing";
	args[n++] = b->hdd;
	args[n++] = "--name";
	args[n++] = VOLNAME;
	args[n++] = "--json";
	if (wp) {
		args[n++] = "--write-policy";
		args[n++] = wp;
	}
	if (own) {
		args[n++] = "--size";
		args[n++] = sizebuf;
	} else if (b->force || b->formatted_once) {
		args[n++] = "--force";
	}
	args[n] = NULL;
	unlink(js);
	if (self_cmd(b, js, args)) {
		cmd_failed(b, "formatting the backing", b->hdd, own);
		return -1;
	}
	json_object *o = json_object_from_file(js);
	b->vol_size = jget_u64(o, "size");
	json_object_put(o);
	if (cache) {
		n = 0;
		snprintf(csizebuf, sizeof(csizebuf), "%" PRIu64, b->cache_size);
		snprintf(lsbuf, sizeof(lsbuf), "%" PRIu64, b->line_size);
		args[n++] = "create";
		args[n++] = "cache";
		args[n++] = b->ssd;
		args[n++] = "--json";
		if (b->line_size) {
			args[n++] = "--line-size";
			args[n++] = lsbuf;
		}
		if (own) {
			args[n++] = "--size";
			args[n++] = csizebuf;
		} else if (b->force || b->formatted_once) {
			args[n++] = "--force";
		}
		args[n] = NULL;
		unlink(js);
		if (self_cmd(b, js, args)) {
			cmd_failed(b, "formatting the cache", b->ssd, own);
			return -1;
		}
		o = json_object_from_file(js);
		b->cache_data = jget_u64(o, "lines") * jget_u64(o, "line_size");
		json_object_put(o);
		const char *att[] = { "attach", "--cache", b->ssd, "--backing", b->hdd,
				      "--device", b->ssd, "--device", b->hdd,
				      "--control", b->ctl, NULL };
		if (self_cmd(b, NULL, att)) {
			cmd_failed(b, "attaching the backing to the cache", b->ssd, own);
			return -1;
		}
	}
	b->formatted_once = true;
	return 0;
}

/* ---- one fio run ---------------------------------------------------------------------- */

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
static int fio_run(struct bench *b, const struct target *t, const struct workload *w,
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
	int rc = run(av, log, log, env, true);
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

static struct result *new_result(struct bench *b)
{
	if (b->nres == b->capres) {
		b->capres = b->capres ? 2 * b->capres : 64;
		b->res = realloc(b->res, b->capres * sizeof(*b->res));
		if (!b->res) {
			cli_err("out of memory");
			exit(TC_EXIT_FAIL);
		}
	}
	struct result *r = &b->res[b->nres++];
	memset(r, 0, sizeof(*r));
	return r;
}

static void fmt_lat(double us, char *buf, size_t len)
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

/* Sequential runs each read or write their own region, after the random test area,
 * so nothing is read twice (a cache that keeps sequential data, like nbdkit's with
 * cache-on-read, would otherwise serve a later run from RAM). */
static uint64_t seq_region(const struct bench *b)
{
	uint64_t r = b->runtime * 300000000ull;     /* above the emulated HDD's 200 MB/s */
	return (r + (1 << 20) - 1) & ~(uint64_t)((1 << 20) - 1);
}

/* Run every workload on target @ti.  Returns 0, or -1 when a run failed. */
static int bench_target(struct bench *b, int ti)
{
	const struct target *t = &b->t[ti];
	int failed = 0;
	progress(b, "%s: formatting the devices, starting the server", t->name);
	if (format_devices(b, t->kind == T_TC ? t->mode : NULL, t->kind == T_TC))
		return -1;
	if (server_start(b, t))
		return -1;
	uint64_t seq_next = b->area;
	for (size_t wi = 0; wi < NWORK && !interrupted; wi++) {
		const struct workload *w = &workloads[wi];
		if (!b->work_on[wi])
			continue;
		unsigned nq;
		const unsigned *qds = qd_list(b, w, &nq);
		if (w->warmup && b->warmup) {
			char fname[96];
			snprintf(fname, sizeof(fname), "fio/%s-%s-warmup.json", t->name, w->name);
			progress(b, "%s %s: warm-up, %" PRIu64 " s at QD 16", t->name, w->name,
				 b->warmup);
			if (fio_run(b, t, w, 16, b->warmup, 0, b->area, fname, NULL)) {
				failed = -1;
				if (!server_alive(b))
					break;
			}
		}
		for (unsigned qi = 0; qi < nq && !interrupted; qi++) {
			struct result *r = new_result(b);
			r->target = ti;
			r->work = (int)wi;
			r->qd = qds[qi];
			snprintf(r->fio_out, sizeof(r->fio_out), "fio/%s-%s-qd%u.json", t->name,
				 w->name, qds[qi]);
			uint64_t off = 0, size = b->area;
			if (w->seq) {
				size = seq_region(b);
				if (seq_next + size > b->vol_size)
					seq_next = b->area + size > b->vol_size ? 0 : b->area;
				if (size > b->vol_size)
					size = b->vol_size & ~(uint64_t)((1 << 20) - 1);
				off = seq_next;
				seq_next += size;
			}
			if (fio_run(b, t, w, qds[qi], b->runtime, off, size, r->fio_out, r)) {
				if (interrupted) {
					b->nres--;
					break;
				}
				failed = -1;
				if (!server_alive(b)) {
					char log[PATH_MAX + 32];
					log_path(b, t, log, sizeof(log));
					cli_err("%s: the server died; the end of its log (%s):", t->name,
						log);
					tail_file(log, 12);
					return -1;
				}
				continue;
			}
			char p50[24], p99[24], hit[32] = "";
			fmt_lat(r->p50, p50, sizeof(p50));
			fmt_lat(r->p99, p99, sizeof(p99));
			if (r->have_hits && !isnan(r->hit))
				snprintf(hit, sizeof(hit), ", hit %.2f", r->hit);
			progress(b, "%s %s QD %u: %.0f IOPS, %.1f MB/s, p50 %s, p99 %s%s", t->name,
				 w->name, r->qd, r->iops, r->mbs, p50, p99, hit);
		}
	}
	if (server_stop(b) && !interrupted)
		cli_warn("%s: the server did not stop cleanly; see its log", t->name);
	return failed;
}

/* ---- output ------------------------------------------------------------------------- */

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

static void print_tables(const struct bench *b, FILE *f)
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

static json_object *jnum(double v)
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

static json_object *make_json(const struct bench *b)
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

static int write_files(const struct bench *b, json_object *j)
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
static int make_plots(const struct bench *b)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/plots.gp", b->outdir);
	/* pngcairo if this gnuplot has it, else the libgd png terminal. */
	char *probe[] = { (char *)"gnuplot", (char *)"-e", (char *)"set terminal pngcairo",
			  NULL };
	int pr = run(probe, NULL, "/dev/null", NULL, false);
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
	if (run(av, log, log, NULL, false)) {
		cli_warn("gnuplot failed: see %s", log);
		return 0;
	}
	return nplots;
}

/* ---- setup and cleanup --------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup(struct bench *b)
{
	server_stop(b);
	if (b->tmp[0]) {
		nftw(b->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		b->tmp[0] = 0;
	}
}

static int mkdir_p(const char *path)
{
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1;; p++) {
		if (*p == '/' || !*p) {
			char save = *p;
			*p = 0;
			if (mkdir(d, 0755) < 0 && errno != EEXIST)
				return -errno;
			if (!save)
				break;
			*p = save;
		}
	}
	return 0;
}

/* First line of `PROG --version` into @buf ("" if it does not run). */
static void tool_version(struct bench *b, const char *prog, char *buf, size_t len)
{
	char out[PATH_MAX + 32];
	snprintf(out, sizeof(out), "%s/version.txt", b->tmp);
	unlink(out);
	char *av[] = { (char *)prog, (char *)"--version", NULL };
	buf[0] = 0;
	if (run(av, out, "/dev/null", NULL, false) == 0) {
		FILE *f = fopen(out, "r");
		if (f) {
			if (fgets(buf, (int)len, f))
				buf[strcspn(buf, "\n")] = 0;
			fclose(f);
		}
	}
	unlink(out);
}

/* The fio job folder: --fio-dir, $TC_FIO_DIR, the source tree's bench/fio (next to the
 * profiles this build knows), or ../../bench/fio from this program in a build tree. */
static int find_fio_dir(struct bench *b)
{
	const char *cand[4];
	char c2[PATH_MAX], c3[PATH_MAX];
	int n = 0;
	if (b->fio_dir_opt)
		cand[n++] = b->fio_dir_opt;
	else {
		if (getenv("TC_FIO_DIR") && *getenv("TC_FIO_DIR"))
			cand[n++] = getenv("TC_FIO_DIR");
#ifdef TC_PROFILE_DIR
		snprintf(c2, sizeof(c2), "%s/../bench/fio", TC_PROFILE_DIR);
		cand[n++] = c2;
#endif
		snprintf(c3, sizeof(c3), "%s", b->self);
		char *s = strrchr(c3, '/');
		if (s) {
			snprintf(s, sizeof(c3) - (size_t)(s - c3), "/../../../bench/fio");
			cand[n++] = c3;
		}
	}
	for (int i = 0; i < n; i++) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/rand-read.fio", cand[i]);
		if (access(p, R_OK) == 0 && realpath(cand[i], b->fio_dir))
			return 0;
	}
	cli_err("the fio job files (bench/fio/*.fio) were not found%s%s; give --fio-dir",
		b->fio_dir_opt ? " in " : "", b->fio_dir_opt ? b->fio_dir_opt : "");
	return -1;
}

static int setup(struct bench *b)
{
	ssize_t n = readlink("/proc/self/exe", b->self, sizeof(b->self) - 1);
	if (n <= 0) {
		cli_err("cannot find this program: %s", strerror(errno));
		return -1;
	}
	b->self[n] = 0;
	const char *pl = cli_find_plugin(b->plugin, sizeof(b->plugin));
	if (pl != b->plugin)
		snprintf(b->plugin, sizeof(b->plugin), "%s", pl);
	if (access(b->plugin, R_OK) < 0) {
		cli_err("nbdkit plugin %s: %s (set TC_NBDKIT_PLUGIN)", b->plugin, strerror(errno));
		return -1;
	}
	if (find_fio_dir(b))
		return -1;
	const char *base = b->tmpdir_base ? b->tmpdir_base :
			   getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(b->tmp, sizeof(b->tmp), "%s/tiercache-bench.XXXXXX", base);
	if (!mkdtemp(b->tmp)) {
		cli_err("cannot make a temporary folder in %s: %s", base, strerror(errno));
		b->tmp[0] = 0;
		return -1;
	}
	char abs[PATH_MAX];
	if (realpath(b->tmp, abs) && strlen(abs) < sizeof(b->tmp))
		snprintf(b->tmp, sizeof(b->tmp), "%s", abs);
	snprintf(b->sock, sizeof(b->sock), "%s/nbd.sock", b->tmp);
	snprintf(b->ctl, sizeof(b->ctl), "%s/control.sock", b->tmp);
	if (b->out) {
		if (mkdir_p(b->out)) {
			cli_err("--out %s: %s", b->out, strerror(errno));
			return -1;
		}
		if (!realpath(b->out, abs) || strlen(abs) >= sizeof(b->outdir)) {
			cli_err("--out %s: %s", b->out, strerror(errno ? errno : ENAMETOOLONG));
			return -1;
		}
		snprintf(b->outdir, sizeof(b->outdir), "%s", abs);
	} else {
		snprintf(b->outdir, sizeof(b->outdir), "%s/out", b->tmp);
	}
	static const char *const sub[] = { "", "/fio", "/dat", "/logs" };
	for (int i = 0; i < 4; i++) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s%s", b->outdir, sub[i]);
		if (mkdir_p(d)) {
			cli_err("%s: %s", d, strerror(errno));
			return -1;
		}
	}
	tool_version(b, b->fio, b->fio_version, sizeof(b->fio_version));
	if (!b->fio_version[0]) {
		cli_err("%s does not run: install fio (with its nbd engine)", b->fio);
		return -1;
	}
	/* nbdkit serves every target (`tiercache serve` runs it too). */
	tool_version(b, b->nbdkit, b->nbdkit_version, sizeof(b->nbdkit_version));
	if (!b->nbdkit_version[0]) {
		cli_err("%s does not run: install nbdkit", b->nbdkit);
		return -1;
	}
	/* Devices. */
	if (b->hdd_given) {
		snprintf(b->hdd, sizeof(b->hdd), "%s", b->hdd_given);
		snprintf(b->ssd, sizeof(b->ssd), "%s", b->ssd_given);
		char d[PATH_MAX];
		snprintf(d, sizeof(d), "%s", spec_path(b->ssd));
		char *s = strrchr(d, '/');
		if (s)
			*s = 0;
		else
			snprintf(d, sizeof(d), ".");
		if (!realpath(d, b->ssd_dir)) {
			cli_err("--ssd %s: its folder: %s", b->ssd, strerror(errno));
			return -1;
		}
	} else {
		snprintf(b->ssd_dir, sizeof(b->ssd_dir), "%s/ssd", b->tmp);
		mkdir(b->ssd_dir, 0755);
		snprintf(b->hdd, sizeof(b->hdd), "emu:%s:%s/hdd.img", b->hdd_profile, b->tmp);
		snprintf(b->ssd, sizeof(b->ssd), "emu:%s:%s/ssd.img", b->ssd_profile, b->ssd_dir);
	}
	/* Format the cache once to learn its data size (and to check the devices). */
	uint64_t hs = b->hdd_size;
	b->hdd_size = 64ull << 20;          /* a probe; the real size is set below */
	if (!b->hdd_given && hs)
		b->hdd_size = hs;
	if (format_devices(b, NULL, true))
		return -1;
	if (!b->area)
		b->area = 2 * b->cache_data;
	b->area &= ~(uint64_t)((1 << 20) - 1);
	if (!b->hdd_given) {
		uint64_t seq = 0;
		for (size_t i = 0; i < NWORK; i++)
			if (b->work_on[i] && workloads[i].seq)
				seq += (b->nseqqd ? b->nseqqd : b->nqd) * seq_region(b);
		uint64_t want = b->area + seq + (64ull << 20);
		want = (want + (1ull << 30) - 1) & ~((1ull << 30) - 1);
		b->hdd_size = hs ? hs : want;
		if (b->hdd_size < b->area + (2ull << 20)) {
			cli_usage("--hdd-size %" PRIu64 " is smaller than the area plus 2 MiB",
				  b->hdd_size);
			return -2;
		}
	} else if (b->area > b->vol_size) {
		cli_usage("--area %" PRIu64 " is larger than the volume on %s (%" PRIu64 " bytes)",
			  b->area, b->hdd, b->vol_size);
		return -2;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	enum { O_QUICK = 256, O_RUNTIME, O_WARMUP, O_QD, O_DBQD, O_SEQQD, O_TARGETS, O_POLICIES,
	       O_WORKLOADS, O_CACHE, O_AREA, O_HDDSIZE, O_HDD, O_SSD, O_FORCE, O_HDDP, O_SSDP,
	       O_LINE, O_OUT, O_TMPDIR, O_FIODIR, O_SEED, O_JSON };
	static const struct option options[] = {
		{ "quick", no_argument, NULL, O_QUICK },
		{ "runtime", required_argument, NULL, O_RUNTIME },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "qd", required_argument, NULL, O_QD },
		{ "db-qd", required_argument, NULL, O_DBQD },
		{ "seq-qd", required_argument, NULL, O_SEQQD },
		{ "targets", required_argument, NULL, O_TARGETS },
		{ "policies", required_argument, NULL, O_POLICIES },
		{ "workloads", required_argument, NULL, O_WORKLOADS },
		{ "cache-size", required_argument, NULL, O_CACHE },
		{ "area", required_argument, NULL, O_AREA },
		{ "hdd-size", required_argument, NULL, O_HDDSIZE },
		{ "hdd", required_argument, NULL, O_HDD },
		{ "ssd", required_argument, NULL, O_SSD },
		{ "force", no_argument, NULL, O_FORCE },
		{ "hdd-profile", required_argument, NULL, O_HDDP },
		{ "ssd-profile", required_argument, NULL, O_SSDP },
		{ "line-size", required_argument, NULL, O_LINE },
		{ "out", required_argument, NULL, O_OUT },
		{ "tmpdir", required_argument, NULL, O_TMPDIR },
		{ "fio-dir", required_argument, NULL, O_FIODIR },
		{ "seed", required_argument, NULL, O_SEED },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bench bb;
	struct bench *b = &bb;
	memset(b, 0, sizeof(*b));
	clock_gettime(CLOCK_MONOTONIC, &b->t0);
	/* --quick first: it sets defaults that the other options override. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--quick"))
			b->quick = true;
	}
	b->runtime = b->quick ? 2 : 5;
	b->warmup = b->quick ? 3 : 20;
	b->seed = 1;
	b->cache_size = b->quick ? 256ull << 20 : 1ull << 30;
	b->hdd_profile = "hdd";
	b->ssd_profile = "sata-ssd";
	parse_qd_list("--qd", b->quick ? "1,16" : "1,4,16,64", b->qd, &b->nqd);
	parse_qd_list("--db-qd", b->quick ? "1,16" : "1,4,16,64,256", b->dbqd, &b->ndbqd);
	if (b->quick)
		parse_qd_list("--seq-qd", "4", b->seqqd, &b->nseqqd);
	parse_targets(b, b->quick ? "uncached,wt,wb,nbdkit-wb" :
				    "uncached,wt,wb,nbdkit-wt,nbdkit-wb");
	for (size_t i = 0; i < NWORK; i++)
		b->work_on[i] = true;
	const char *policies = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case O_QUICK: break;
		case O_RUNTIME:
			if (cli_uint("--runtime", optarg, 1, 3600, &b->runtime))
				return TC_EXIT_USAGE;
			break;
		case O_WARMUP:
			if (cli_uint("--warmup", optarg, 0, 36000, &b->warmup))
				return TC_EXIT_USAGE;
			break;
		case O_QD:
			if (parse_qd_list("--qd", optarg, b->qd, &b->nqd))
				return TC_EXIT_USAGE;
			break;
		case O_DBQD:
			if (parse_qd_list("--db-qd", optarg, b->dbqd, &b->ndbqd))
				return TC_EXIT_USAGE;
			break;
		case O_SEQQD:
			if (parse_qd_list("--seq-qd", optarg, b->seqqd, &b->nseqqd))
				return TC_EXIT_USAGE;
			break;
		case O_TARGETS:
			if (parse_targets(b, optarg))
				return TC_EXIT_USAGE;
			break;
		case O_POLICIES: policies = optarg; break;
		case O_WORKLOADS:
			if (parse_workloads(b, optarg))
				return TC_EXIT_USAGE;
			break;
		case O_CACHE:
			if (cli_size("--cache-size", optarg, &b->cache_size))
				return TC_EXIT_USAGE;
			break;
		case O_AREA:
			if (cli_size("--area", optarg, &b->area))
				return TC_EXIT_USAGE;
			if (b->area < (1 << 20))
				return cli_usage("--area: at least 1M");
			break;
		case O_HDDSIZE:
			if (cli_size("--hdd-size", optarg, &b->hdd_size))
				return TC_EXIT_USAGE;
			break;
		case O_HDD: b->hdd_given = optarg; break;
		case O_SSD: b->ssd_given = optarg; break;
		case O_FORCE: b->force = true; break;
		case O_HDDP: b->hdd_profile = optarg; break;
		case O_SSDP: b->ssd_profile = optarg; break;
		case O_LINE:
			if (cli_size("--line-size", optarg, &b->line_size))
				return TC_EXIT_USAGE;
			break;
		case O_OUT: b->out = optarg; break;
		case O_TMPDIR: b->tmpdir_base = optarg; break;
		case O_FIODIR: b->fio_dir_opt = optarg; break;
		case O_SEED:
			if (cli_uint("--seed", optarg, 0, UINT32_MAX, &b->seed))
				return TC_EXIT_USAGE;
			break;
		case O_JSON: b->json = true; break;
		case 'h': return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (optind != argc)
		return cli_usage("bench takes no operands (\"%s\")", argv[optind]);
	if (!b->hdd_given != !b->ssd_given)
		return cli_usage("--hdd and --ssd go together");
	if (b->hdd_given && b->hdd_size)
		return cli_usage("--hdd-size is for the devices the bench makes, not --hdd");
	if (policies && apply_policies(b, policies))
		return TC_EXIT_USAGE;
	b->seed0 = b->seed;
	if (b->cache_size < (16ull << 20))
		return cli_usage("--cache-size: at least 16M");
	b->fio = getenv("TC_FIO") && *getenv("TC_FIO") ? getenv("TC_FIO") : "fio";
	b->nbdkit = getenv("TC_NBDKIT") && *getenv("TC_NBDKIT") ? getenv("TC_NBDKIT") : "nbdkit";

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	struct sigaction old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	int rc = TC_EXIT_OK;
	int sr = setup(b);
	if (sr) {
		cleanup(b);
		return interrupted ? 130 : sr == -2 ? TC_EXIT_USAGE : TC_EXIT_FAIL;
	}
	/* The estimate: runs, warm-ups, and about 2 s per target to format and serve. */
	unsigned runs = 0, warm = 0;
	for (size_t i = 0; i < NWORK; i++)
		if (b->work_on[i]) {
			unsigned nq;
			qd_list(b, &workloads[i], &nq);
			runs += nq;
			warm += workloads[i].warmup && b->warmup;
		}
	double est = b->nt * (runs * ((double)b->runtime + 0.6) + warm * ((double)b->warmup + 0.5) + 2);
	char cs[32], as[32], ws[64] = "";
	if (warm)
		snprintf(ws, sizeof(ws), " (+ %u warm-ups of %" PRIu64 " s)", warm, b->warmup);
	progress(b, "%d targets x %u runs of %" PRIu64 " s%s: about %.0f s; cache %s, area "
		 "%s; HDD %s, SSD %s", b->nt, runs, b->runtime, ws, est,
		 cli_human(b->cache_data, cs, sizeof(cs)), cli_human(b->area, as, sizeof(as)),
		 b->hdd, b->ssd);
	for (int ti = 0; ti < b->nt && !interrupted; ti++) {
		if (b->t[ti].kind == T_NBDKIT)
			progress(b, "%s: nbdkit's cache filter keeps its cache in a temporary file "
				 "in %s (page cache: RAM speed), not on the emulated SSD",
				 b->t[ti].name, b->ssd_dir);
		if (bench_target(b, ti))
			rc = TC_EXIT_FAIL;
		server_stop(b);
	}
	if (interrupted) {
		fprintf(stderr, "tiercache bench: interrupted; stopping, removing %s\n", b->tmp);
		cleanup(b);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		return 130;
	}
	json_object *j = make_json(b);
	if (write_files(b, j))
		rc = TC_EXIT_FAIL;
	int nplots = b->out ? make_plots(b) : 0;
	if (b->json) {
		json_object_object_add(j, "elapsed_s", jnum(now_s(b)));
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		print_tables(b, stdout);
		bool nbd = false;
		for (int i = 0; i < b->nt; i++)
			nbd |= b->t[i].kind == T_NBDKIT;
		printf("\nDevices: %s (backing), %s (cache, %s of data); test area %s; "
		       "%" PRIu64 " s per run%s.\n", b->hdd, b->ssd, cs, as, b->runtime,
		       b->warmup ? ", rand-read and db after a warm-up" : "");
		if (nbd)
			printf("nbdkit-*: nbdkit's cache filter, cache-max-size %s, its cache in a "
			       "temporary file (page cache: RAM speed, not the emulated SSD).\n", cs);
		printf("HIT: cache-line hit ratio of reads and writes (tiercache's counters).\n");
		if (b->out)
			printf("Results in %s: results.json, results.csv, fio/, %d plots "
			       "(*.png)\n", b->outdir, nplots);
	}
	json_object_put(j);
	progress(b, "done");
	cleanup(b);
	free(b->res);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
