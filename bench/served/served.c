/* SPDX-License-Identifier: MIT */
/*
 * served.c - tc-bench-served: the served path's cost, in one run.  4 KiB random read
 * hits and write-back write hits at queue depths 1, 16 and 64, over 1 and 4 NBD
 * connections, through fio against:
 *
 *   tc      tiercache served over NBD (the real `tiercache serve`), every line of the
 *           working set in the cache (write-back, sequential cutoff 0)
 *   raw     fio's io_uring engine, O_DIRECT, on the cache file's data area: reads on
 *           the slots that hold the working set, writes on as many free slots past it
 *           (writing over the working set's slots would corrupt what tc serves)
 *   mem     nbdkit's memory plugin through the same fio nbd engine: the NBD ceiling
 *   file    nbdkit's file plugin (cache=none) on the same slots of the cache file (the
 *           offset filter: reads on the working set's slots, writes past them, as
 *           raw): nbdkit's thread-per-request model with a blocking read or write of
 *           the device per request, what any synchronous plugin pays for the device
 *   tc-b    with --compare CMD: a second tiercache command (another build) serving
 *           its own copy of the devices, for before/after ratios in one run
 *
 * The servers stay up for the whole run; for each workload, connection count and queue
 * depth the targets run one after the other, each round starting with the next target,
 * and the rounds repeat that, so drift on a noisy machine affects every target alike.
 * After each write run a tiercache target's dirty data is flushed (`tiercache flush`),
 * so its cleaner does not compete with the next target's run.  The report gives per configuration the
 * median IOPS of each target, the ratios tc/raw, tc/mem (and tc/tc-b), and at QD 1 the
 * median of the rounds' median completion latencies.  Why it exists: the library alone
 * serves hits close to raw (tc-bench-hit); this says what the server adds on top.
 *
 * Only the public header and the command's shared helpers (src/cli/cli.h: messages,
 * sizes) and the control client (connecting to see the server is up) are used.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"
#include "tiercache.h"

#define SERVED_LINE (64u * 1024)
#define SERVED_BS 4096
#define SERVED_MAXR 32          /* rounds */
#define SERVED_NT 5             /* targets */

enum served_target { T_TC, T_RAW, T_MEM, T_FILE, T_TCB };
static const char *const served_tname[SERVED_NT] = { "tc", "raw", "mem", "file", "tc-b" };

static const unsigned served_qds[] = { 1, 16, 64 };
static const unsigned served_conns[] = { 1, 4 };
#define NQD (sizeof(served_qds) / sizeof(served_qds[0]))
#define NCONN (sizeof(served_conns) / sizeof(served_conns[0]))

static const char help[] =
"NAME\n"
"    tc-bench-served - tiercache's served path against raw io_uring and NBD's ceiling\n"
"\n"
"SYNOPSIS\n"
"    tc-bench-served [--seconds S] [--rounds N] [--ws SIZE] [--workloads read,write]\n"
"                    [--compare TIERCACHE] [--tmpdir DIR] [--quick]\n"
"\n"
"DESCRIPTION\n"
"    4 KiB random read hits and write-back write hits at QD 1, 16, 64 (per\n"
"    connection) over 1 and 4 connections (fio --numjobs), each run alternating\n"
"    tc (`tiercache serve`), raw (fio io_uring, O_DIRECT, on the cache file's data\n"
"    area), mem (nbdkit's memory plugin, the protocol's ceiling) and file\n"
"    (nbdkit's file plugin, cache=none, on the same slots: the thread-per-request\n"
"    model with a blocking device read or write per request); prints median\n"
"    IOPS, ratios and QD 1 median latency.\n"
"\n"
"OPTIONS\n"
"    --seconds S        each fio run (default 3)\n"
"    --rounds N         rounds (default 3, at most 32)\n"
"    --ws SIZE          working set, all of it cached (default 256M)\n"
"    --workloads LIST   read, write or both (default read,write)\n"
"    --compare CMD      another tiercache command (e.g. an older build's\n"
"                       build/src/cli/tiercache) as target tc-b on its own devices\n"
"    --tmpdir DIR       where the sparse device files go (default $TMPDIR or /tmp)\n"
"    --quick            1 s runs, 2 rounds\n"
"\n"
"ENVIRONMENT\n"
"    TC_TIERCACHE       the tiercache command (default: the build tree's)\n";

struct served {
	uint64_t secs, rounds, ws;
	bool work[2];                   /* read, write */
	const char *compare;
	char tmp[PATH_MAX];
	char tiercache[PATH_MAX];
	uint64_t data_offset;           /* of the cache file's data area */
	char ssd[2][PATH_MAX + 16], hdd[2][PATH_MAX + 16];
	char sock[SERVED_NT][PATH_MAX + 16], ctl[2][PATH_MAX + 16];
	pid_t srv[4];                   /* tc, mem, tc-b, file */
	/* results [work][conn][qd][target][round] */
	double iops[2][NCONN][NQD][SERVED_NT][SERVED_MAXR];
	double p50[2][NCONN][NQD][SERVED_NT][SERVED_MAXR];
};

static volatile sig_atomic_t served_stop;

static void served_on_signal(int sig)
{
	(void)sig;
	served_stop = 1;
}

/* Start @av with stdin from /dev/null, stdout to @out (NULL: /dev/null), stderr
 * appended to TMP/@log; @group: in a process group of its own (a server, which we
 * stop ourselves).  Returns the pid or -1. */
static pid_t served_spawn(const struct served *b, char *const av[], const char *out,
			  const char *log, bool group)
{
	char lp[PATH_MAX + 16];
	snprintf(lp, sizeof(lp), "%s/%s", b->tmp, log);
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	if (group)
		setpgid(0, 0);
	int nul = open("/dev/null", O_RDWR);
	int o = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : nul;
	int e = open(lp, O_WRONLY | O_CREAT | O_APPEND, 0644);
	dup2(nul, 0);
	dup2(o >= 0 ? o : nul, 1);
	dup2(e >= 0 ? e : nul, 2);
	execvp(av[0], av);
	_exit(127);
}

/* Run @av to its end (stderr to commands.log).  Exit code or -1. */
static int served_run(const struct served *b, char *const av[], const char *out)
{
	pid_t pid = served_spawn(b, av, out, "commands.log", false);
	int st;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Start a server (stderr to servers.log); wait until @probe (a unix socket) accepts.
 * Returns the pid or -1 after a message. */
static pid_t served_start(const struct served *b, char *const av[], const char *probe)
{
	unlink(probe);
	pid_t pid = served_spawn(b, av, NULL, "servers.log", true);
	if (pid < 0)
		return -1;
	for (int i = 0; i < 300 && !served_stop; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		int fd = ctl_connect(probe);
		if (fd >= 0) {
			close(fd);
			return pid;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	cli_err("%s did not start; see %s/servers.log", av[0], b->tmp);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void served_stop_server(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* fio's JSON: IOPS and the median completion latency (us) of @dir ("read"/"write"). */
static int served_parse(const char *path, const char *dir, double *iops, double *p50)
{
	json_object *j = json_object_from_file(path), *jobs, *job, *d, *clat, *pct, *v;
	if (!j)
		return -1;
	int ret = -1;
	if (json_object_object_get_ex(j, "jobs", &jobs) && json_object_array_length(jobs) > 0 &&
	    (job = json_object_array_get_idx(jobs, 0)) &&
	    json_object_object_get_ex(job, dir, &d) &&
	    json_object_object_get_ex(d, "iops", &v)) {
		*iops = json_object_get_double(v);
		*p50 = NAN;
		if (json_object_object_get_ex(d, "clat_ns", &clat) &&
		    json_object_object_get_ex(clat, "percentile", &pct) &&
		    json_object_object_get_ex(pct, "50.000000", &v))
			*p50 = json_object_get_double(v) / 1000.0;
		ret = 0;
	}
	json_object_put(j);
	return ret;
}

/* One fio run of target @t.  @rw "randread"/"randwrite" (or "read" for the warm-up,
 * @secs 0: once over the working set). */
static int served_fio(struct served *b, int t, const char *rw, unsigned bs, unsigned qd,
		      unsigned conns, uint64_t secs, double *iops, double *p50)
{
	char a[24][PATH_MAX + 64];
	char *av[25];
	int n = 0;
	char out[PATH_MAX + 16];
	snprintf(out, sizeof(out), "%s/fio.json", b->tmp);
#define ARG(...) (snprintf(a[n], sizeof(a[n]), __VA_ARGS__), av[n] = a[n], n++)
	ARG("fio");
	ARG("--name=served");
	ARG("--rw=%s", rw);
	ARG("--bs=%u", bs);
	ARG("--iodepth=%u", qd);
	ARG("--numjobs=%u", conns);
	ARG("--group_reporting=1");
	ARG("--output-format=json");
	ARG("--output=%s", out);
	if (t == T_RAW) {
		/* Reads on the working set's slots; writes on the free slots after them. */
		ARG("--ioengine=io_uring");
		ARG("--direct=1");
		ARG("--filename=%s", b->ssd[0]);
		ARG("--offset=%" PRIu64, b->data_offset + (strstr(rw, "write") ? b->ws : 0));
	} else {
		ARG("--ioengine=nbd");
		ARG("--uri=nbd+unix:///%s?socket=%s", t == T_MEM || t == T_FILE ? "" : "bench",
		    b->sock[t]);
		if (t == T_FILE && strstr(rw, "write"))
			ARG("--offset=%" PRIu64, b->ws);
	}
	ARG("--size=%" PRIu64, b->ws);
	if (secs) {
		ARG("--time_based=1");
		ARG("--runtime=%" PRIu64, secs);
		ARG("--randrepeat=0");
		ARG("--norandommap=1");
	}
#undef ARG
	av[n] = NULL;
	int rc = served_run(b, av, out);
	if (rc) {
		cli_err("fio on %s (%s, QD %u, %u connections) exited %d; see %s/commands.log",
			served_tname[t], rw, qd, conns, rc, b->tmp);
		return -1;
	}
	double i = 0, p = 0;
	if (served_parse(out, strstr(rw, "write") ? "write" : "read", &i, &p)) {
		cli_err("fio on %s: no result in %s", served_tname[t], out);
		return -1;
	}
	if (iops)
		*iops = i;
	if (p50)
		*p50 = p;
	return 0;
}

/* Devices of set @k: a cache with room for twice the working set, a write-back volume
 * of the working set's size, attached offline with the sequential cutoff off. */
static int served_devices(struct served *b, int k, const char *cmd)
{
	struct tc_cache_layout geo;
	uint64_t cache_size = 2 * b->ws + (64ull << 20);
	if (tc_cache_layout_for(cache_size, SERVED_LINE, &geo)) {
		cli_err("no cache layout for %" PRIu64 " bytes", cache_size);
		return -1;
	}
	if (geo.lines * SERVED_LINE < 2 * b->ws) {
		cli_err("cache of %" PRIu64 " lines is too small", geo.lines);
		return -1;
	}
	b->data_offset = geo.data_offset;
	snprintf(b->ssd[k], sizeof(b->ssd[k]), "%s/ssd%d.img", b->tmp, k);
	snprintf(b->hdd[k], sizeof(b->hdd[k]), "%s/hdd%d.img", b->tmp, k);
	char csz[32], bsz[32];
	snprintf(csz, sizeof(csz), "%" PRIu64, cache_size);
	snprintf(bsz, sizeof(bsz), "%" PRIu64, b->ws + (1u << 20));
	char *c1[] = { (char *)cmd, "create", "cache", b->ssd[k], "--size", csz, "--force",
		       "--unprotected-writeback", NULL };
	char *c2[] = { (char *)cmd, "create", "backing", b->hdd[k], "--name", "bench",
		       "--size", bsz, "--write-policy", "wb", "--flush-rate", "low",
		       "--force", NULL };
	char *c3[] = { (char *)cmd, "attach", "--cache", b->ssd[k], "--backing", b->hdd[k],
		       "--seq-cutoff", "0", "--admission", "always", "--fill", "line",
		       "--device", b->ssd[k], "--device", b->hdd[k], "--control",
		       b->ctl[k], NULL };
	if (served_run(b, c1, NULL) || served_run(b, c2, NULL) || served_run(b, c3, NULL)) {
		cli_err("%s: making the devices failed; see %s/commands.log", cmd, b->tmp);
		return -1;
	}
	return 0;
}

static int served_start_tc(struct served *b, int k, int t, const char *cmd)
{
	char *av[] = { (char *)cmd, "serve", "--foreground", "--socket", b->sock[t],
		       "--control", b->ctl[k], b->ssd[k], b->hdd[k], NULL };
	pid_t pid = served_start(b, av, b->ctl[k]);
	if (pid < 0)
		return -1;
	b->srv[t == T_TC ? 0 : 2] = pid;
	/* Fill every line in order: the fresh cache fills its slots from the start. */
	return served_fio(b, t, "read", SERVED_LINE, 1, 1, 0, NULL, NULL);
}

/* After a write run on tiercache: write its dirty data back now, at full speed, so
 * that its cleaner does not run during the next target's measurement. */
static int served_flush(struct served *b, int t)
{
	if (t != T_TC && t != T_TCB)
		return 0;
	int k = t == T_TC ? 0 : 1;
	char *av[] = { t == T_TC ? b->tiercache : (char *)b->compare, "flush", "bench",
		       "--control", b->ctl[k], NULL };
	if (served_run(b, av, NULL)) {
		cli_err("%s: flush failed; see %s/commands.log", served_tname[t], b->tmp);
		return -1;
	}
	return 0;
}

static int served_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double served_median(const double *v, unsigned n)
{
	double s[SERVED_MAXR];
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		if (!isnan(v[i]))
			s[m++] = v[i];
	if (!m)
		return NAN;
	qsort(s, m, sizeof(s[0]), served_cmp);
	return m % 2 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
}

static void served_report(struct served *b, int nt)
{
	static const char *const wname[2] = { "read hits", "write-back write hits" };
	for (int w = 0; w < 2; w++) {
		if (!b->work[w])
			continue;
		printf("\n%s, 4 KiB random, median IOPS of %" PRIu64 " rounds x %" PRIu64
		       " s (QD per connection):\n", wname[w], b->rounds, b->secs);
		printf("%-5s %-3s", "conns", "QD");
		for (int t = 0; t < nt; t++)
			printf(" %9s", served_tname[t]);
		printf(" %7s %7s %7s", "tc/raw", "tc/mem", "tc/file");
		if (nt > T_TCB)
			printf(" %7s", "tc/tc-b");
		printf("   QD 1 p50 latency (us)\n");
		for (unsigned c = 0; c < NCONN; c++)
			for (unsigned q = 0; q < NQD; q++) {
				double m[SERVED_NT];
				printf("%-5u %-3u", served_conns[c], served_qds[q]);
				for (int t = 0; t < nt; t++) {
					m[t] = served_median(b->iops[w][c][q][t],
							     (unsigned)b->rounds);
					printf(" %9.0f", m[t]);
				}
				printf(" %7.3f %7.3f %7.3f", m[T_TC] / m[T_RAW], m[T_TC] / m[T_MEM],
				       m[T_TC] / m[T_FILE]);
				if (nt > T_TCB)
					printf(" %7.3f", m[T_TC] / m[T_TCB]);
				if (served_qds[q] == 1) {
					printf("  ");
					for (int t = 0; t < nt; t++)
						printf(" %s %.1f", served_tname[t],
						       served_median(b->p50[w][c][q][t],
								     (unsigned)b->rounds));
				}
				printf("\n");
			}
		printf("per round, tc/raw at 1 connection:");
		for (unsigned q = 0; q < NQD; q++) {
			printf(" QD %u:", served_qds[q]);
			for (unsigned r = 0; r < b->rounds; r++)
				printf(" %.3f", b->iops[w][0][q][T_TC][r] / b->iops[w][0][q][T_RAW][r]);
		}
		printf("\n");
	}
}

/* The tiercache command: $TC_TIERCACHE, else the build tree's next to this program. */
static void served_find_tiercache(struct served *b)
{
	const char *e = getenv("TC_TIERCACHE");
	char exe[PATH_MAX];
	ssize_t n;
	if (e && *e) {
		snprintf(b->tiercache, sizeof(b->tiercache), "%s", e);
		return;
	}
	snprintf(b->tiercache, sizeof(b->tiercache), "tiercache");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%.4000s/../../src/cli/tiercache", exe) >= (int)sizeof(p))
		return;
	if (access(p, X_OK) == 0)
		snprintf(b->tiercache, sizeof(b->tiercache), "%s", p);
}

static int served_main(struct served *b, const char *tmpbase)
{
	snprintf(b->tmp, sizeof(b->tmp), "%s/tc-bench-served.XXXXXX", tmpbase);
	if (!mkdtemp(b->tmp)) {
		cli_err("%s: %s", b->tmp, strerror(errno));
		b->tmp[0] = 0;
		return -1;
	}
	for (int t = 0; t < SERVED_NT; t++)
		snprintf(b->sock[t], sizeof(b->sock[t]), "%s/%s.sock", b->tmp, served_tname[t]);
	for (int k = 0; k < 2; k++)
		snprintf(b->ctl[k], sizeof(b->ctl[k]), "%s/ctl%d.sock", b->tmp, k);
	int nt = b->compare ? SERVED_NT : T_TCB;       /* tc-b last: only with --compare */
	if (served_devices(b, 0, b->tiercache) || served_start_tc(b, 0, T_TC, b->tiercache))
		return -1;
	if (b->compare && (served_devices(b, 1, b->compare) ||
			   served_start_tc(b, 1, T_TCB, b->compare)))
		return -1;
	char msz[32];
	snprintf(msz, sizeof(msz), "size=%" PRIu64, b->ws);
	char *mem[] = { "nbdkit", "-f", "-t", "256", "-U", b->sock[T_MEM], "memory", msz, NULL };
	b->srv[1] = served_start(b, mem, b->sock[T_MEM]);
	if (b->srv[1] < 0)
		return -1;
	/* The memory plugin's pages are allocated on first write: touch them all. */
	if (served_fio(b, T_MEM, "write", SERVED_LINE, 16, 1, 0, NULL, NULL))
		return -1;
	char foff[48], frange[48], ffile[PATH_MAX + 32];
	snprintf(foff, sizeof(foff), "offset=%" PRIu64, b->data_offset);
	snprintf(frange, sizeof(frange), "range=%" PRIu64, 2 * b->ws);
	snprintf(ffile, sizeof(ffile), "file=%s", b->ssd[0]);
	char *file[] = { "nbdkit", "-f", "-U", b->sock[T_FILE], "--filter=offset", "file",
			 ffile, "cache=none", foff, frange, NULL };
	b->srv[3] = served_start(b, file, b->sock[T_FILE]);
	if (b->srv[3] < 0)
		return -1;
	fprintf(stderr, "tc-bench-served: tiercache %s%s%s, working set %" PRIu64
		" MiB, cache data at %" PRIu64 " in %s\n", b->tiercache,
		b->compare ? ", tc-b " : "", b->compare ? b->compare : "", b->ws >> 20,
		b->data_offset, b->ssd[0]);
	static const char *const rw[2] = { "randread", "randwrite" };
	for (unsigned r = 0; r < b->rounds; r++)
		for (int w = 0; w < 2; w++) {
			if (!b->work[w])
				continue;
			for (unsigned c = 0; c < NCONN; c++)
				for (unsigned q = 0; q < NQD; q++) {
					fprintf(stderr, "round %u: %s, %u conn, QD %u:", r + 1,
						rw[w], served_conns[c], served_qds[q]);
					/* Each round starts with another target. */
					for (int k = 0; k < nt; k++) {
						int t = (int)((k + r) % (unsigned)nt);
						if (served_stop)
							return -1;
						double *i = &b->iops[w][c][q][t][r];
						double *p = &b->p50[w][c][q][t][r];
						if (served_fio(b, t, rw[w], SERVED_BS, served_qds[q],
							       served_conns[c], b->secs, i, p) ||
						    (w == 1 && served_flush(b, t)))
							return -1;
						fprintf(stderr, " %s %.0f", served_tname[t], *i);
					}
					fprintf(stderr, "\n");
				}
		}
	served_report(b, nt);
	return 0;
}

static void served_cleanup(struct served *b)
{
	for (int i = 0; i < 4; i++)
		served_stop_server(b->srv[i]);
	if (!b->tmp[0])
		return;
	char *av[] = { "rm", "-rf", b->tmp, NULL };
	served_run(b, av, NULL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "ws", required_argument, NULL, 'w' },
		{ "workloads", required_argument, NULL, 'W' },
		{ "compare", required_argument, NULL, 'c' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct served b;   /* large: the result arrays */
	const char *tmpbase = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int o;
	cli_prog_name = "tc-bench-served";
	b.secs = 3;
	b.rounds = 3;
	b.ws = 256ull << 20;
	b.work[0] = b.work[1] = true;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			if (cli_uint("--seconds", optarg, 1, 3600, &b.secs))
				return TC_EXIT_USAGE;
			break;
		case 'r':
			if (cli_uint("--rounds", optarg, 1, SERVED_MAXR, &b.rounds))
				return TC_EXIT_USAGE;
			break;
		case 'w':
			if (cli_size("--ws", optarg, &b.ws))
				return TC_EXIT_USAGE;
			if (b.ws < (16u << 20) || b.ws % SERVED_LINE)
				return cli_usage("--ws %s: at least 16M, whole 64 KiB lines", optarg);
			break;
		case 'W':
			b.work[0] = strstr(optarg, "read") != NULL;
			b.work[1] = strstr(optarg, "write") != NULL;
			if (!b.work[0] && !b.work[1])
				return cli_usage("--workloads %s: read, write or both", optarg);
			break;
		case 'c':
			b.compare = optarg;
			break;
		case 't':
			tmpbase = optarg;
			break;
		case 'q':
			b.secs = 1;
			b.rounds = 2;
			break;
		case 'h':
			return cli_help(help);
		default:
			return cli_bad_option(argv);
		}
	}
	if (optind < argc)
		return cli_usage("unexpected argument %s", argv[optind]);
	served_find_tiercache(&b);
	signal(SIGINT, served_on_signal);
	signal(SIGTERM, served_on_signal);
	int ret = served_main(&b, tmpbase);
	served_cleanup(&b);
	return ret ? TC_EXIT_FAIL : TC_EXIT_OK;
}
