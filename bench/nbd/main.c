/* SPDX-License-Identifier: MIT */
/*
 * main.c - tc-bench-nbd (see bench.h): the manual, the options, the order of the runs,
 * and the messages and option values the other files share.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tiercache.h"

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

const struct workload workloads[NWORK] = {
	{ "seq-read", "seq-read.fio", true, false, false },
	{ "seq-write", "seq-write.fio", true, false, false },
	{ "rand-read", "rand-read.fio", false, true, false },
	{ "db", "db.fio", false, true, true },
	{ "rand-write", "rand-write.fio", false, false, false },
};

volatile sig_atomic_t interrupted;
volatile pid_t fio_child = -1;

const char *bench_name = "tc-bench-nbd";

/* The queue depths of workload @w. */
const unsigned *qd_list(const struct bench *b, const struct workload *w, unsigned *n)
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

static void on_signal(int sig)
{
	interrupted = sig;
	if (fio_child > 0)
		kill(fio_child, SIGINT);
}

double now_s(const struct bench *b)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - b->t0.tv_sec) + (double)(t.tv_nsec - b->t0.tv_nsec) / 1e9;
}

void progress(const struct bench *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: [%6.1fs] %s\n", bench_name, now_s(b), buf);
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

int main(int argc, char **argv)
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
	/* `tiercache bench` runs this program as "tiercache bench" (argv[0]). */
	if (argc > 0 && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');
		bench_name = slash ? slash + 1 : argv[0];
	}
	cli_prog_name = bench_name;
	opterr = 0;   /* one message per bad option: cli_bad_option()'s */
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
		case 'h': fputs(help, stdout); return BENCH_OK;
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

	int rc = BENCH_OK;
	int sr = setup(b);
	if (sr) {
		cleanup(b);
		return interrupted ? 130 : sr == -2 ? TC_EXIT_USAGE : BENCH_FAIL;
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
		 tc_size_format(b->cache_data, cs, sizeof(cs)), tc_size_format(b->area, as, sizeof(as)),
		 b->hdd, b->ssd);
	for (int ti = 0; ti < b->nt && !interrupted; ti++) {
		if (b->t[ti].kind == T_NBDKIT)
			progress(b, "%s: nbdkit's cache filter keeps its cache in a temporary file "
				 "in %s (page cache: RAM speed), not on the emulated SSD",
				 b->t[ti].name, b->ssd_dir);
		if (bench_target(b, ti))
			rc = BENCH_FAIL;
		server_stop(b);
	}
	if (interrupted) {
		fprintf(stderr, "%s: interrupted; stopping, removing %s\n", bench_name, b->tmp);
		cleanup(b);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		return 130;
	}
	json_object *j = make_json(b);
	if (write_files(b, j))
		rc = BENCH_FAIL;
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

