/* SPDX-License-Identifier: MIT */
/*
 * run.c - processes, devices and servers, and the runs of each target (see bench.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "ctl.h"
#include "ctl_path.h"
#include "tiercache.h"

#ifndef TC_TIERCACHE_INSTALLED
#define TC_TIERCACHE_INSTALLED "/usr/local/bin/tiercache"
#endif
#ifndef TC_PLUGIN_INSTALLED
#define TC_PLUGIN_INSTALLED "/usr/local/lib/nbdkit/plugins/nbdkit-tiercache-plugin.so"
#endif

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

/* proc_run - see bench.h. */
int proc_run(char *const argv[], const char *out, const char *err, char *const env[],
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

/* Run a subcommand of the tiercache command (b->tiercache); stdout to @out (may be
 * NULL), stderr to the bench log.  Returns the exit code. */
static int self_cmd(struct bench *b, const char *out, const char *const args[])
{
	char *av[32];
	int n = 0;
	av[n++] = b->tiercache;
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
	return proc_run(av, out, log, NULL, false);
}

/* Print the last @lines lines of the file @path to stderr, indented. */
void tail_file(const char *path, int lines)
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


/* A file this program uses, into @buf: $@env when set, else @rel from this program's
 * folder when it exists (a build tree), else @installed.  Returns 0, or -1 when it
 * does not fit. */
static int find_beside(const char *env, const char *rel, const char *installed, char *buf,
		       size_t len)
{
	const char *e = getenv(env);
	char exe[PATH_MAX];
	int w;
	if (e && *e) {
		w = snprintf(buf, len, "%s", e);
		return w > 0 && (size_t)w < len ? 0 : -1;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			w = snprintf(buf, len, "%s/%s", exe, rel);
			if (w > 0 && (size_t)w < len && access(buf, R_OK) == 0)
				return 0;
		}
	}
	w = snprintf(buf, len, "%s", installed);
	return w > 0 && (size_t)w < len ? 0 : -1;
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
		av[n++] = b->tiercache;
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
		int fd = t->kind == T_NBDKIT ? ctl_connect(b->sock) : ctl_connect(b->ctl);
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
int server_stop(struct bench *b)
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
		fprintf(stderr, "%s: give --force to format --hdd and --ssd devices "
				"that hold data (it is lost)\n", bench_name);
}

/* Format the HDD as the backing of volume VOLNAME (write policy @wp, may be NULL) and,
 * with @cache, the SSD as a cache, attached offline.  Own devices are made afresh. */
static int format_devices(struct bench *b, const char *wp, bool cache)
{
	char sizebuf[32], csizebuf[32], lsbuf[32], js[PATH_MAX + 32];
	bool own = b->tmp[0] && !b->hdd_given;
	snprintf(js, sizeof(js), "%s/create.json", b->tmp);
	if (own) {
		unlink(tc_dev_spec_path(b->hdd));
		unlink(tc_dev_spec_path(b->ssd));
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
		/* The benchmark's own cache, formatted for the run: its write-back policies
		 * are measured on a single device. */
		args[n++] = "--unprotected-writeback";
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


static struct result *new_result(struct bench *b)
{
	if (b->nres == b->capres) {
		b->capres = b->capres ? 2 * b->capres : 64;
		b->res = realloc(b->res, b->capres * sizeof(*b->res));
		if (!b->res) {
			cli_err("out of memory");
			exit(BENCH_FAIL);
		}
	}
	struct result *r = &b->res[b->nres++];
	memset(r, 0, sizeof(*r));
	return r;
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
int bench_target(struct bench *b, int ti)
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

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

void cleanup(struct bench *b)
{
	server_stop(b);
	if (b->tmp[0]) {
		nftw(b->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		b->tmp[0] = 0;
	}
}

/* First line of `PROG --version` into @buf ("" if it does not run). */
static void tool_version(struct bench *b, const char *prog, char *buf, size_t len)
{
	char out[PATH_MAX + 32];
	snprintf(out, sizeof(out), "%s/version.txt", b->tmp);
	unlink(out);
	char *av[] = { (char *)prog, (char *)"--version", NULL };
	buf[0] = 0;
	if (proc_run(av, out, "/dev/null", NULL, false) == 0) {
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
 * profiles this build knows), or ../../../bench/fio from the tiercache command in a
 * build tree. */
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
		snprintf(c3, sizeof(c3), "%s", b->tiercache);
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

int setup(struct bench *b)
{
	if (find_beside("TC_TIERCACHE", "../../src/cli/tiercache", TC_TIERCACHE_INSTALLED,
			b->tiercache, sizeof(b->tiercache))) {
		cli_err("the tiercache command: %s (set TC_TIERCACHE)", strerror(ENAMETOOLONG));
		return -1;
	}
	if (access(b->tiercache, X_OK) < 0) {
		cli_err("the tiercache command %s: %s (set TC_TIERCACHE)", b->tiercache,
			  strerror(errno));
		return -1;
	}
	if (find_beside("TC_NBDKIT_PLUGIN", "../../src/nbd/nbdkit-tiercache-plugin.so",
			TC_PLUGIN_INSTALLED, b->plugin, sizeof(b->plugin))) {
		cli_err("the nbdkit plugin: %s (set TC_NBDKIT_PLUGIN)", strerror(ENAMETOOLONG));
		return -1;
	}
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
		if (ctl_mkdir_p(b->out)) {
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
		if (ctl_mkdir_p(d)) {
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
		snprintf(d, sizeof(d), "%s", tc_dev_spec_path(b->ssd));
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
