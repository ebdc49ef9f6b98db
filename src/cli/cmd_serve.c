/* SPDX-License-Identifier: MIT */
/*
 * cmd_serve.c - `tiercache serve`: run nbdkit with the tiercache plugin over the given
 * devices (the test hooks of a server started with --testing are in cmd_debug.c).
 *
 * In the background (the default) the command starts nbdkit in the foreground as a
 * child in a new session, logging to a file, and returns once the server answers on
 * its control socket, so a failed assembly is reported with its messages and a
 * non-zero exit instead of a daemon that died unseen.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_path.h"

#define NBD_SOCKET_DEFAULT "/run/tiercache/nbd.sock"
#define LOG_DEFAULT "/run/tiercache/serve.log"

static const char help[] =
"NAME\n"
"    tiercache serve - assemble the volumes on the given devices and serve them over NBD\n"
"\n"
"SYNOPSIS\n"
"    tiercache serve [--socket PATH | --listen [HOST:]PORT] [--foreground]\n"
"                    [--control PATH] [--threads N] [--log FILE] [--seed N]\n"
"                    [--testing] [--verbose] DEVICE...\n"
"\n"
"DESCRIPTION\n"
"    Reads the superblocks of every DEVICE, opens every cache among them, attaches\n"
"    every backing to its cache and serves each volume as an NBD export named after\n"
"    the volume (nbdkit with the tiercache plugin).  Clients connect with, e.g.,\n"
"        nbd+unix:///NAME?socket=/run/tiercache/nbd.sock\n"
"    A backing without a cache is served uncached.  A backing whose cache is not\n"
"    among the devices (or fails to open) is served uncached with a warning when its\n"
"    write policy is not write-back; in write-back the cache may hold its dirty data,\n"
"    so the server refuses to start and names the cache.\n"
"\n"
"    DEVICE is a path, crash:PATH (a crash-test device over the file PATH: writes are\n"
"    volatile until flushed, see `tiercache debug`), emu:PROFILE:PATH (an emulated\n"
"    HDD or SSD, see profiles/README.md) or nbd:URI (an NBD export, e.g. a remote\n"
"    disk as a backing).  Every local device is locked while served; an NBD export\n"
"    cannot be locked from here.\n"
"\n"
"    The volume commands (status, stats, set, flush, detach, attach) reach the server\n"
"    through its control socket.  --socket, --control and --log each move only their\n"
"    own path: --socket alone keeps the control socket and the log at their defaults\n"
"    in /run/tiercache/, which every server of the host shares; a second server needs\n"
"    its own --control (and --log), and the volume commands name it with the same\n"
"    --control PATH.  SIGTERM or SIGINT stops it within seconds however\n"
"    much dirty data there is: requests in flight complete, metadata is committed, the\n"
"    dirty data stays in the cache for the next start, the sockets are removed.\n"
"\n"
"OPTIONS\n"
"    --socket PATH        NBD unix socket (default " NBD_SOCKET_DEFAULT ")\n"
"    --listen [HOST:]PORT serve over TCP instead, on HOST (default 127.0.0.1: give an\n"
"                         address, or 0.0.0.0, to serve other hosts)\n"
"    --foreground         stay in the foreground, logging to stderr\n"
"    --control PATH       control socket (default " TC_CONTROL_DEFAULT "), mode 0600\n"
"    --threads N          nbdkit threads per connection (default 256: queue depth 256)\n"
"    --log FILE           log of a background server (default " LOG_DEFAULT ")\n"
"    --seed N             seed of crash: devices' power cuts (default 1)\n"
"    --testing            for tests and drills: open every device under a fault-\n"
"                         injection layer and answer `tiercache debug fail`, `debug\n"
"                         heal` and `debug power-cut`; without it the server refuses\n"
"                         them (it warns at start when this is on)\n"
"    --verbose            log the engine's informational messages too\n"
"\n"
"ENVIRONMENT\n"
"    TC_NBDKIT_PLUGIN     path of nbdkit-tiercache-plugin.so (default: next to this\n"
"                         program in a build tree, else the installed plugin)\n"
"    TC_NBDKIT            the nbdkit program (default: nbdkit on PATH)\n"
"\n"
"EXAMPLES\n"
"    tiercache serve /srv/ssd.img /srv/hdd.img\n"
"    fio --ioengine=nbd --uri='nbd+unix:///db?socket=/run/tiercache/nbd.sock' ...\n"
"    tiercache status\n"
"    kill PID                    # the pid serve printed: a clean stop\n"
"\n"
"EXIT STATUS\n"
"    0 serving (background) or stopped cleanly (foreground), 1 the server failed to\n"
"    start (its messages are printed), 2 bad usage.\n";

/* A unix socket file nobody listens on (left by a killed server) is removed; one a
 * server answers on, or a path that is not a socket at all, is an error.  Returns 0
 * or -1 after a message. */
static int clear_socket(const char *what, const char *path)
{
	int fd = ctl_connect(path);
	if (fd >= 0) {
		close(fd);
		cli_err("%s %s: a server already answers there", what, path);
		return -1;
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		/* Only a socket file nobody answers on is ours to remove: a typo naming a
		 * device image or a /dev node must not delete it. */
		if (!S_ISSOCK(st.st_mode)) {
			cli_err("%s %s: exists and is not a socket; give another path", what, path);
			return -1;
		}
		if (fd == -ECONNREFUSED)
			unlink(path);
	}
	int r = ctl_make_parent(path);
	if (r) {
		cli_err("%s %s: cannot create its folder: %s", what, path, strerror(-r));
		return -1;
	}
	return 0;
}

/* The log is appended to: refuse a path that holds something else (a device image
 * named by mistake would grow a tail of text).  A log is a regular file of text. */
static bool log_file_ok(const char *log)
{
	struct stat st;
	if (lstat(log, &st) < 0)
		return true;   /* created */
	bool ok = S_ISREG(st.st_mode);
	if (ok && st.st_size > 0) {
		char buf[4096];
		FILE *f = fopen(log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		if (f)
			fclose(f);
		ok = f && memchr(buf, 0, n) == NULL;
	}
	if (!ok)
		cli_err("log %s: exists and is not a text file (a device?); give another path", log);
	return ok;
}

/* The warnings of the log from @off on (a degraded volume, say): the user of a
 * background server would not see them otherwise. */
static void print_log_warnings(const char *log, off_t off)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	fseeko(f, off, SEEK_SET);
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *w = strstr(line, "warning: ");
		if (w)
			fprintf(stderr, "tiercache serve: %s", w);
	}
	fclose(f);
}

/* Print the log from @off on (a failed background start). */
static void print_log(const char *log, off_t off)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	fseeko(f, off, SEEK_SET);
	char line[4096];
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

int cmd_serve(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "control", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'L' },
		{ "seed", required_argument, NULL, 'S' },
		{ "testing", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *listen = NULL, *control = TC_CONTROL_DEFAULT;
	const char *log = LOG_DEFAULT;
	uint64_t threads = 256, seed = 1;
	bool fg = false, verbose = false, testing = false;
	int c;
	while ((c = getopt_long(argc, argv, "hf", options, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'l': listen = optarg; break;
		case 'f': fg = true; break;
		case 'c': control = optarg; break;
		case 't':
			if (cli_uint("--threads", optarg, 1, 1024, &threads))
				return TC_EXIT_USAGE;
			break;
		case 'L': log = optarg; break;
		case 'S':
			if (cli_uint("--seed", optarg, 0, UINT64_MAX, &seed))
				return TC_EXIT_USAGE;
			break;
		case 'T': testing = true; break;
		case 'v': verbose = true; break;
		case 'h': return cli_help(help);
		default: return cli_bad_option(argv);
		}
	}
	if (optind >= argc)
		return cli_usage("no DEVICE given");
	if (sock && listen)
		return cli_usage("--socket and --listen exclude each other");
	char host[256] = "127.0.0.1", port[16] = "";
	if (listen) {
		const char *colon = strrchr(listen, ':');
		const char *p = colon ? colon + 1 : listen;
		uint64_t pn;
		if (cli_uint("--listen PORT", p, 1, 65535, &pn))
			return TC_EXIT_USAGE;
		snprintf(port, sizeof(port), "%" PRIu64, pn);
		if (colon) {
			size_t hl = (size_t)(colon - listen);
			if (!hl || hl >= sizeof(host))
				return cli_usage("--listen: \"%s\" has no host before ':'", listen);
			memcpy(host, listen, hl);
			host[hl] = 0;
			if (host[0] == '[' && host[hl - 1] == ']') {   /* [::1]:10809 */
				memmove(host, host + 1, hl - 2);
				host[hl - 2] = 0;
			}
		}
	} else if (!sock) {
		sock = NBD_SOCKET_DEFAULT;
	}
	if (clear_socket("control socket", control) ||
	    (sock && clear_socket("NBD socket", sock)))
		return TC_EXIT_FAIL;

	char pbuf[PATH_MAX];
	const char *plugin = cli_find_plugin(pbuf, sizeof(pbuf));
	if (access(plugin, R_OK) < 0) {
		cli_err("nbdkit plugin %s: %s (set TC_NBDKIT_PLUGIN)", plugin, strerror(errno));
		return TC_EXIT_FAIL;
	}
	const char *nbdkit = getenv("TC_NBDKIT") ? getenv("TC_NBDKIT") : "nbdkit";
	/* nbdkit -f [-v] -t N (-U SOCK | -i HOST -p PORT) PLUGIN dev=... control=... seed=N */
	char **av = calloc((size_t)(argc - optind) + 24, sizeof(char *));
	int n = 0;
	char tbuf[32], sbuf[48];
	snprintf(tbuf, sizeof(tbuf), "%" PRIu64, threads);
	snprintf(sbuf, sizeof(sbuf), "seed=%" PRIu64, seed);
	av[n++] = (char *)nbdkit;
	av[n++] = (char *)"-f";
	if (verbose)
		av[n++] = (char *)"-v";
	av[n++] = (char *)"-t";
	av[n++] = tbuf;
	if (sock) {
		av[n++] = (char *)"-U";
		av[n++] = (char *)sock;
	} else {
		av[n++] = (char *)"-i";
		av[n++] = host;
		av[n++] = (char *)"-p";
		av[n++] = port;
	}
	av[n++] = (char *)plugin;
	/* Devices that do not exist are passed on (the server serves the rest), but not
	 * when none does: nothing could be served. */
	bool any = false;
	for (int i = optind; i < argc && !any; i++) {
		const char *path = tc_dev_spec_path(argv[i]);
		any = !path || access(path, F_OK) == 0;   /* a remote device may be there */
	}
	if (!any) {
		char abs[PATH_MAX];
		(void)cli_abs_spec(argv[optind], abs, sizeof(abs));   /* says why */
		return TC_EXIT_FAIL;
	}
	for (int i = optind; i < argc; i++) {
		/* Absolute paths: the server does not depend on this command's folder. */
		char abs[PATH_MAX];
		if (cli_abs_spec_named(argv[i], abs, sizeof(abs)))
			return TC_EXIT_FAIL;
		if (asprintf(&av[n++], "dev=%s", abs) < 0)
			return TC_EXIT_FAIL;
	}
	if (asprintf(&av[n++], "control=%s", control) < 0)
		return TC_EXIT_FAIL;
	av[n++] = sbuf;
	if (sock && asprintf(&av[n++], "socket=%s", sock) < 0)
		return TC_EXIT_FAIL;
	if (testing)
		av[n++] = (char *)"testing=1";
	av[n] = NULL;
	fflush(NULL);
	if (fg) {
		execvp(nbdkit, av);
		cli_err("cannot run %s: %s (install nbdkit)", nbdkit, strerror(errno));
		return TC_EXIT_FAIL;
	}

	int pr = ctl_make_parent(log);
	if (pr < 0) {
		cli_err("log %s: cannot create its folder: %s", log, strerror(-pr));
		return TC_EXIT_FAIL;
	}
	if (!log_file_ok(log))
		return TC_EXIT_FAIL;
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (lfd < 0) {
		cli_err("log %s: %s", log, strerror(errno));
		return TC_EXIT_FAIL;
	}
	off_t log_start = lseek(lfd, 0, SEEK_END);
	/* Double fork: the server's parent is gone before it starts, so nothing ties its
	 * life to this command.  nbdkit asks to die with its parent (PR_SET_PDEATHSIG), so
	 * the grandchild waits until the middle process has exited and it has been
	 * reparented before it runs nbdkit: a late exit of the middle process would kill
	 * the new server silently.  The pipe brings back its pid. */
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0) {
		cli_err("pipe: %s", strerror(errno));
		return TC_EXIT_FAIL;
	}
	pid_t mid = fork();
	if (mid < 0) {
		cli_err("fork: %s", strerror(errno));
		return TC_EXIT_FAIL;
	}
	if (mid == 0) {
		setsid();
		pid_t me = getpid();
		pid_t pid = fork();
		if (pid != 0) {
			ssize_t w = write(pp[1], &pid, sizeof(pid));
			_exit(w == sizeof(pid) ? 0 : 1);
		}
		/* Reparented once the middle process is gone (its exit sends the parent-death
		 * signals before the new parent shows; 10 s is far more than its exit takes). */
		for (int i = 0; getppid() == me && i < 10000; i++)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		execvp(nbdkit, av);
		fprintf(stderr, "tiercache serve: cannot run %s: %s (install nbdkit)\n", nbdkit,
			strerror(errno));
		_exit(127);
	}
	close(lfd);
	close(pp[1]);
	pid_t pid = -1;
	ssize_t got = read(pp[0], &pid, sizeof(pid));
	close(pp[0]);
	waitpid(mid, NULL, 0);
	if (got != sizeof(pid) || pid <= 0) {
		cli_err("could not start the server");
		return TC_EXIT_FAIL;
	}
	/* Ready when the control socket answers (the plugin opens it after assembly). */
	for (int waited = 0; waited < 600; waited++) {
		if (kill(pid, 0) < 0 && errno == ESRCH) {
			print_log(log, log_start);
			cli_err("the server did not start; its log: %s", log);
			return TC_EXIT_FAIL;
		}
		int fd = ctl_connect(control);
		if (fd >= 0) {
			close(fd);
			print_log_warnings(log, log_start);
			printf("serving on %s%s%s%s (pid %d); control %s; log %s\n",
			       sock ? "unix socket " : "", sock ? sock : host, sock ? "" : ":",
			       sock ? "" : port, (int)pid, control, log);
			return TC_EXIT_OK;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	kill(pid, SIGTERM);
	cli_err("the server did not answer on %s within 60 s; stopped it; log: %s", control,
		log);
	return TC_EXIT_FAIL;
}
