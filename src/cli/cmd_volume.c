/* SPDX-License-Identifier: MIT */
/*
 * cmd_volume.c - the volume commands: attach, set, flush, invalidate, detach, status,
 * stats.
 *
 * Each builds one control request (ctl.h).  A running server gets it on its control
 * socket; when none answers, the command assembles the devices named by --device
 * itself (taking their locks, as a server does) and runs the very same request
 * offline.  Output is the same both ways.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"

#define COMMON_HELP \
"COMMON OPTIONS\n" \
"    --control PATH   control socket of a running server (default\n" \
"                     " TC_CONTROL_DEFAULT ")\n" \
"    --device PATH    repeatable: when no server answers, work offline on these\n" \
"                     devices (every cache and backing the volume needs); their locks\n" \
"                     are taken, so a device a server holds cannot be used offline\n" \
"    --json           print the result as JSON\n" \
"    --help           this text\n" \
"\n" \
"EXIT STATUS\n" \
"    0 done, 1 the operation failed or was interrupted (the volume is as it was),\n" \
"    2 bad usage.\n"

#define SETTINGS_HELP \
"    --read-cache on|off          read misses fill the cache (on) or not\n" \
"    --write-policy wt|wb|wa|pt|instwb\n" \
"                                 write-through, write-back, write-around, pass-through,\n" \
"                                 instant write-back; leaving wb or instwb first drains\n" \
"                                 the dirty data (with progress).  wb and instwb need a\n" \
"                                 cache that survives a device failure (a RAID 1, 10 or\n" \
"                                 5 array) or one created with --unprotected-writeback,\n" \
"                                 and run as wt while that cache is degraded.  instwb:\n" \
"                                 a write covering whole aligned full stripes of the\n" \
"                                 backing (its --stripe-size, or an array's stripe) is\n" \
"                                 made dirty at once, past the sequential cutoff, while\n" \
"                                 the cache's dirty lines are under 40 %; it needs a\n" \
"                                 backing with a stripe\n" \
"    --flush-rate low|medium|high writeback rate: low 16 MiB/s after 1 s idle; medium\n" \
"                                 64 MiB/s after 100 ms idle, 16 MiB/s under load once\n" \
"                                 10 % of the cache's lines are dirty (nothing below);\n" \
"                                 high unlimited\n"

static const char help_attach[] =
"NAME\n"
"    tiercache attach - attach a backing to a cache, live or offline\n"
"\n"
"SYNOPSIS\n"
"    tiercache attach --cache DEVICE --backing DEVICE [--read-cache on|off]\n"
"                     [--write-policy wt|wb|wa|pt|instwb] [--flush-rate low|medium|high]\n"
"                     [--admission always|nhit:N] [--seq-cutoff SIZE]\n"
"                     [--fill line|sectors] [--discard-dirty]\n"
"                     [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Brings the volume on the backing DEVICE online through the cache DEVICE.  A\n"
"    backing never attached becomes a new volume of the cache; one attached before\n"
"    gets its cached lines back.  Several backings may attach to one cache.  With a\n"
"    server running, the volume is served through the cache at once (a volume the\n"
"    server serves uncached is switched over between two requests).\n"
"\n"
"    A backing written without the cache while the cache holds dirty data for it is\n"
"    refused (the cache's copy and the backing disagree); --discard-dirty drops the\n"
"    cache's dirty lines for it instead.  A backing attached to another cache is\n"
"    refused, and so is a --cache DEVICE that is a backing or a --backing DEVICE that\n"
"    is a cache (the two swapped).\n"
"\n"
"    A backing already attached to this cache (its superblock names the cache) is\n"
"    answered \"already attached; nothing changed\" with exit status 0, live and\n"
"    offline alike; with settings options it is refused (exit status 1): change the\n"
"    settings of an attached volume with `tiercache set`.\n"
"\n"
"OPTIONS\n"
SETTINGS_HELP
"    --admission, --seq-cutoff, --fill   as in `tiercache set --help`\n"
"    --discard-dirty              see above\n"
"\n"
COMMON_HELP;

static const char help_set[] =
"NAME\n"
"    tiercache set - change a volume's settings, live, without data loss\n"
"\n"
"SYNOPSIS\n"
"    tiercache set VOLUME [--read-cache on|off] [--write-policy wt|wb|wa|pt|instwb]\n"
"                  [--flush-rate low|medium|high] [--admission always|nhit:N]\n"
"                  [--seq-cutoff SIZE] [--fill line|sectors]\n"
"                  [--reserve SIZE|P%] [--cap SIZE|P%] [--priority high|normal|low]\n"
"                  [--control PATH] [--device PATH]... [--json]\n"
"    tiercache set VOLUME --pin|--unpin|--uncacheable|--cacheable OFFSET:LENGTH\n"
"    tiercache set VOLUME --range-policy OFFSET:LENGTH=wt|wb|wa|pt|volume\n"
"\n"
"DESCRIPTION\n"
"    Changes the settings of VOLUME while it serves I/O and stores them on the cache\n"
"    and backing devices, so they survive restarts.  Leaving write-back drains the\n"
"    volume's dirty data first (new writes go write-through meanwhile); an\n"
"    interrupted drain (Ctrl-C) leaves the volume as it was.  Prints the settings.\n"
"\n"
"    Partitions: --reserve is the share of the cache the volume keeps at least (no\n"
"    other volume's traffic evicts its lines while it holds no more, and free lines\n"
"    are kept for it), --cap the share it holds at most (at the cap it evicts its own\n"
"    lines).  A share is a size (a multiple of 4K) or a percentage of the cache\n"
"    (\"25%\"); 0 removes it.  Lines count whole, dirty or clean.  The reservations of\n"
"    a cache's volumes may add up to at most the cache; a cap is at least the\n"
"    reserve.  Both are stored in the cache's volume record.\n"
"\n"
"    Priority: the class of the volume's requests in the queues tiercache controls\n"
"    (a device's dispatch limit: the emulated devices' queue depth).  high goes\n"
"    ahead of normal, normal ahead of low; the cleaner's writeback, cache fills and\n"
"    array rebuild run as low, and yield to a high volume's waiting requests.  After\n"
"    8 dispatches in a row that passed a waiting lower class, the oldest waiting one\n"
"    goes, so nothing starves; while high requests are active on a device, the\n"
"    other classes keep 1 request in it.  Default normal; stored in the cache's\n"
"    volume record, changed live.\n"
"\n"
"    Range attributes: a byte range of the volume (OFFSET and LENGTH multiples of\n"
"    4K) may be pinned (its cache lines, once filled, are never evicted; its read\n"
"    misses always fill), uncacheable (always around the cache; set live, the range\n"
"    is written back and its cached copies dropped) or given its own write policy.\n"
"    Attributes apply to whole cache lines: ranges of different attributes may not\n"
"    overlap or share a line, ranges of the same one are merged.  Bounds: 16 ranges\n"
"    per volume, 52 per cache; pins of all volumes at most 50% of the cache, a\n"
"    volume's pins within its cap, and each volume's larger of reserve and pins,\n"
"    summed, within the cache.  One range option per command, without other\n"
"    settings; a refused one changes nothing.  Stored in the cache superblock.\n"
"\n"
"OPTIONS\n"
SETTINGS_HELP
"    --reserve SIZE|P%            minimum share of the cache (0: none)\n"
"    --cap SIZE|P%                maximum share of the cache (0: none)\n"
"    --priority high|normal|low   the volume's class on the devices (default normal)\n"
"    --pin OFF:LEN                pin the range's lines in the cache\n"
"    --unpin OFF:LEN              unpin them (a pinned range is cut or split)\n"
"    --uncacheable OFF:LEN        the range goes around the cache\n"
"    --cacheable OFF:LEN          it is cached again\n"
"    --range-policy OFF:LEN=WP    the range's writes follow write policy WP (wt, wb,\n"
"                                 wa, pt); =volume: the volume's again\n"
"    --admission always|nhit:N    fill a line on every read miss, or on the Nth access\n"
"                                 (1..255) within the recent history\n"
"    --seq-cutoff SIZE            a sequential stream this long bypasses the cache; 0\n"
"                                 turns detection off (default 4M, at least 4K)\n"
"    --fill line|sectors          a read miss fills the whole line, or only what was\n"
"                                 read\n"
"\n"
COMMON_HELP;

static const char help_set_cache[] =
"NAME\n"
"    tiercache set-cache - change a cache's own stored setting: the write-back override\n"
"\n"
"SYNOPSIS\n"
"    tiercache set-cache CACHE --unprotected-writeback on|off\n"
"                        [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    CACHE is the cache's device as `tiercache status` shows it, or its file.  Write-\n"
"    back (wb, instwb) needs a cache that survives a device failure (a RAID 1, 10 or\n"
"    5 pool).  --unprotected-writeback on stores the override that allows it on a\n"
"    cache without redundancy (a single SSD, a RAID 0), as `tiercache create cache\n"
"    --unprotected-writeback` does, accepting that a device failure loses the dirty\n"
"    data; status then warns about it.  It also ends a hold: write-back volumes that\n"
"    ran write-through because the cache had no redundancy go back to write-back.\n"
"    off takes the override back: refused, changing nothing, while a volume of the\n"
"    cache runs (or, its backing absent, is recorded in) wb or instwb and the device\n"
"    has no redundancy: the message names the volume; set it to wt first.  On a\n"
"    redundant pool off is always accepted: a pool that degrades then holds write-\n"
"    back (write-through until it is rebuilt) instead of going on.  Live through the\n"
"    server, or offline with --device (the cache's device, and the backings of the\n"
"    volumes to check).  Stored in the cache superblock; prints the result.\n"
"\n"
"OPTIONS\n"
"    --unprotected-writeback on|off  allow write-back without redundancy, or not\n"
"\n"
COMMON_HELP;

static const char help_flush[] =
"NAME\n"
"    tiercache flush - write back every dirty byte of a volume, or of a range of it\n"
"\n"
"SYNOPSIS\n"
"    tiercache flush VOLUME [--range OFFSET:LENGTH] [--control PATH] [--device PATH]...\n"
"                    [--json]\n"
"\n"
"DESCRIPTION\n"
"    Writes the volume's dirty data back to its backing, at full speed, with progress\n"
"    on a terminal, then commits the metadata.  Writes meanwhile go write-through, so\n"
"    the flush always ends; the write policy stays as it is afterwards.  Ctrl-C stops\n"
"    it without harm.  A volume served uncached has nothing to flush: its backing\n"
"    gets a FLUSH and the command succeeds.\n"
"\n"
"    --range OFFSET:LENGTH writes back only the dirty data of that byte range of the\n"
"    volume (every cache line the range touches), online: only writes to those lines\n"
"    go write-through meanwhile, the rest of the volume keeps its write policy.\n"
"    OFFSET and LENGTH take K/M/G/T suffixes and must be multiples of 4K, the range\n"
"    inside the volume (\"1G:64M\").  The report names the range's dirty bytes at the\n"
"    start and the volume's dirty bytes at the end.\n"
"\n"
"JSON\n"
"    {\"dirty_bytes_before\", \"dirty_bytes\"}, bytes; with --range also\n"
"    \"range_offset\" and \"range_length\", and dirty_bytes_before is the range's.\n"
"\n"
COMMON_HELP;

static const char help_invalidate[] =
"NAME\n"
"    tiercache invalidate - drop the cached copies of a byte range of a volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache invalidate VOLUME --range OFFSET:LENGTH [--discard-dirty]\n"
"                         [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    For when the backing changed behind the cache (restored from a backup, written by\n"
"    another host): drops every cached copy of the range, online, so that the next\n"
"    reads of it come from the backing.  Requests in flight on the range finish first;\n"
"    the drop is committed before the command returns, so a crash cannot bring the\n"
"    old copies back.  OFFSET and LENGTH take K/M/G/T suffixes and must be multiples\n"
"    of 4K, the range inside the volume.\n"
"\n"
"    Dirty data in the range is newer than the backing: the command refuses such a\n"
"    range, says how many dirty bytes it holds and changes nothing.  Flush the range\n"
"    first (`tiercache flush VOLUME --range ...`), or give --discard-dirty to drop the\n"
"    dirty data too: it is lost, reads return the backing's data, and the command\n"
"    says how many bytes were discarded.\n"
"\n"
"JSON\n"
"    {\"range_offset\", \"range_length\", \"dropped_bytes\" (clean bytes dropped),\n"
"    \"dirty_bytes_discarded\", \"dirty_bytes_kept\" (written into the range while the\n"
"    command ran, so kept)}, bytes.\n"
"\n"
COMMON_HELP;

static const char help_detach[] =
"NAME\n"
"    tiercache detach - drain a volume's dirty data and remove it from its cache\n"
"\n"
"SYNOPSIS\n"
"    tiercache detach VOLUME [--discard-dirty]\n"
"                     [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    Writes back every dirty byte (with progress), then removes the volume from its\n"
"    cache and the cache link from the backing.  With a server running the volume\n"
"    goes on being served, uncached.  Ctrl-C during the drain stops it without harm:\n"
"    the volume stays attached, its dirty data intact.\n"
"\n"
"OPTIONS\n"
"    --discard-dirty   do not write back: the dirty data is lost, and the backing\n"
"                      keeps older data for those blocks\n"
"\n"
COMMON_HELP;

static const char help_status[] =
"NAME\n"
"    tiercache status - state, policy, dirty bytes and writeback of every volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache status [--control PATH] [--device PATH]... [--json]\n"
"\n"
"DESCRIPTION\n"
"    One line per volume: state (cached; uncached: no cache; degraded: its cache is\n"
"    missing or failed; no-backing: a cache holds the volume but its backing device\n"
"    is not among the devices, so only what the cache knows is shown), write policy,\n"
"    read cache, flush rate, dirty bytes, writeback rate over the last second,\n"
"    fallback (pass-through after cache-device errors), and the cache; then one line\n"
"    per cache, and one per array the server assembled (level, size, state: active,\n"
"    degraded or failed, members, the faulty ones, and the device it serves as;\n"
"    `tiercache array status` has the detail).  Given only a cache with --device,\n"
"    every volume it holds is listed, with the dirty bytes it keeps for each.\n"
"    Offline, the devices are opened read-only: nothing on them changes (after a\n"
"    crash the recovery is done in memory only; the next server start does it\n"
"    again).\n"
"\n"
"    A write-back volume (wb, instwb) whose cache is degraded, or has no redundancy\n"
"    and no override, runs write-through until the cache is protected again: its\n"
"    POLICY reads e.g. wb>wt, and a line below the table says why.  A cache formatted\n"
"    with --unprotected-writeback (or before that option existed) whose device has no\n"
"    redundancy gets a warning line: its dirty data is lost if the device fails.\n"
"\n"
"JSON\n"
"    {\"volumes\": [{\"name\", \"size\", \"state\", \"backing\", \"cache\", \"settings\",\n"
"    \"dirty_bytes\", \"cached_bytes\", \"writeback_rate\", \"fallback\", \"draining\",\n"
"    \"effective_policy\", \"policy_reason\", \"ranges\": [{\"offset\", \"length\",\n"
"    \"kind\", \"write_policy\"}], \"pinned_bytes\"}],\n"
"    (no-backing volumes: \"backing\" null and \"backing_uuid\"),\n"
"    \"caches\": [{\"device\", \"line_size\", \"lines\", \"lines_used\", \"lines_dirty\",\n"
"    \"dirty_bytes\", \"redundancy\", \"unprotected_writeback\", \"writeback_held\",\n"
"    \"warning\"}], \"arrays\": [...] (as `tiercache array status --json` gives\n"
"    them), \"fault_injection\", \"devices\": [...]}; sizes in bytes, rates in bytes\n"
"    per second.\n"
"\n"
COMMON_HELP;

static const char help_stats[] =
"NAME\n"
"    tiercache stats - every engine counter of one volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache stats VOLUME [--latency] [--reset] [--control PATH] [--device PATH]...\n"
"                    [--json]\n"
"\n"
"DESCRIPTION\n"
"    Prints the volume's counters: hits, partial hits and misses per cache line for\n"
"    reads and writes, client requests and bytes, promotions, evictions, sequential\n"
"    and admission bypasses, dirty and cached bytes, writeback bytes, I/Os and rate,\n"
"    errors, the backing device's own counters, the volume's traffic on the cache\n"
"    device (cache_device: bytes read and written, the writes split into fills of\n"
"    read misses and client writes, the reads into the cleaner's and client reads,\n"
"    and bytes_written_per_host_byte, the SSD endurance figure: its data writes per\n"
"    byte the host read or wrote),\n"
"    and the cache device as a whole (cache: every volume's traffic, the cleaner's\n"
"    and the metadata commits: its wear).  Keys are snake_case; bytes are\n"
"    in bytes.  --reset zeroes the counters after printing them.  A volume whose\n"
"    backing is not among the devices (offline, --device CACHE alone) has no request\n"
"    counters: what its cache holds is printed (size, settings, dirty and cached\n"
"    bytes) with a note saying so; a volume served uncached, its state and backing\n"
"    with a note.  Offline, the devices are opened read-only and nothing on them\n"
"    changes (the counters start at zero, --reset has nothing to keep).\n"
"\n"
"    --latency prints the volume's latency histograms instead, one row per class\n"
"    (read hit, read miss, write hit, write miss): count, p50, p99, p99.9, p99.99 and\n"
"    the exact maximum.  A request is timed from its arrival in the engine to its\n"
"    completion; it is a hit when every cache line it touched was a full hit, a miss\n"
"    otherwise (partial hits and sequential bypasses included); write-zeroes count as\n"
"    writes, flushes and discards are not timed.  The histograms have log-scale\n"
"    buckets of at most 1/128 of their values, from nanoseconds to seconds and beyond;\n"
"    a percentile is the top of its bucket, the maximum is exact.  --reset empties\n"
"    them with the counters.\n"
"\n"
"JSON\n"
"    The counters as printed, plus \"latency\": {\"read_hit\", \"read_miss\",\n"
"    \"write_hit\", \"write_miss\"}, each {\"count\", \"min_ns\", \"mean_ns\", \"p50_ns\",\n"
"    \"p90_ns\", \"p99_ns\", \"p999_ns\", \"p9999_ns\", \"max_ns\", \"buckets\": [{\"ge_ns\",\n"
"    \"lt_ns\", \"count\"}]} (the distribution in powers of two: [0, 1024) ns, then\n"
"    [2^k, 2^(k+1)) ns; non-empty ones only), with or without --latency.\n"
"\n"
COMMON_HELP;

enum { O_CONTROL = 256, O_DEVICE, O_JSON, O_HELP, O_RC, O_WP, O_FR, O_ADM, O_SEQ, O_FILL,
       O_RESERVE, O_CAP, O_PRIO, O_CACHE, O_BACKING, O_DISCARD, O_RESET, O_LATENCY, O_RANGE,
       O_UNPROT,
       O_PIN, O_UNPIN, O_UNCACHEABLE, O_CACHEABLE, O_RPOLICY };

static const struct option options[] = {
	{ "control", required_argument, NULL, O_CONTROL },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ "read-cache", required_argument, NULL, O_RC },
	{ "write-policy", required_argument, NULL, O_WP },
	{ "flush-rate", required_argument, NULL, O_FR },
	{ "admission", required_argument, NULL, O_ADM },
	{ "seq-cutoff", required_argument, NULL, O_SEQ },
	{ "fill", required_argument, NULL, O_FILL },
	{ "reserve", required_argument, NULL, O_RESERVE },
	{ "cap", required_argument, NULL, O_CAP },
	{ "priority", required_argument, NULL, O_PRIO },
	{ "cache", required_argument, NULL, O_CACHE },
	{ "backing", required_argument, NULL, O_BACKING },
	{ "discard-dirty", no_argument, NULL, O_DISCARD },
	{ "reset", no_argument, NULL, O_RESET },
	{ "latency", no_argument, NULL, O_LATENCY },
	{ "range", required_argument, NULL, O_RANGE },
	{ "unprotected-writeback", required_argument, NULL, O_UNPROT },
	{ "pin", required_argument, NULL, O_PIN },
	{ "unpin", required_argument, NULL, O_UNPIN },
	{ "uncacheable", required_argument, NULL, O_UNCACHEABLE },
	{ "cacheable", required_argument, NULL, O_CACHEABLE },
	{ "range-policy", required_argument, NULL, O_RPOLICY },
	{ NULL, 0, NULL, 0 },
};

struct vopts {
	const char *control;
	const char **devices;
	int ndevices;
	bool json;
	json_object *settings;     /* only the keys given */
	const char *cache, *backing;
	const char *volume;
	bool discard, reset;
	bool latency;              /* stats --latency */
	bool has_range;            /* --range OFFSET:LENGTH, bytes */
	uint64_t range_off, range_len;
	int unprot;                /* set-cache --unprotected-writeback: 1 on, 0 off, -1 not given */
	json_object *region;       /* set --pin/--unpin/...: {"action", "kind",
				    * "write_policy"}, the range in range_off/len */
};

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t server_fd = -1;

/* Ctrl-C: offline, the progress callback sees the flag; with a server, half-closing
 * the connection tells the server to stop the operation, and its answer (interrupted,
 * or done if it finished first) is what the command reports. */
static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (server_fd >= 0)
		shutdown(server_fd, SHUT_WR);
}

static int show_progress(void *opaque, uint64_t left, uint64_t start)
{
	const char *what = opaque;
	if (cli_isatty_err()) {
		char a[32], b[32];
		unsigned pct = start ? (unsigned)(100 - left * 100 / start) : 100;
		fprintf(stderr, "\r%s: %3u%%  %s of %s dirty left   ", what, pct,
			tc_size_format(left, a, sizeof(a)), tc_size_format(start, b, sizeof(b)));
	}
	return interrupted;
}

/* Parse the options every volume command shares, plus the settings ones (@settings:
 * allowed).  Returns -1 after printing help, a usage exit code, or 0. */
/* Options beyond the common ones that a command takes (parse()'s @extra). */
#define X_SETTINGS 0x1u
#define X_ATTACH 0x2u      /* --cache, --backing */
#define X_DISCARD 0x4u
#define X_RESET 0x8u
#define X_LATENCY 0x10u
#define X_RANGE 0x20u
#define X_SHARES 0x40u     /* --reserve, --cap: set only (a volume joins a cache first) */
#define X_UNPROT 0x80u     /* --unprotected-writeback: set-cache only */

/* "OFFSET:LENGTH" (sizes) of option @what into *@off, *@len; a usage exit code or 0.
 * With @tail, the text after a further '=' goes to *@tail (NULL if none). */
static int parse_span(const char *what, const char *arg, uint64_t *off, uint64_t *len,
		      const char **tail)
{
	char buf[128], lbuf[128];
	const char *colon = strchr(arg, ':');
	const char *eq = tail ? strchr(arg, '=') : NULL;
	size_t llen = colon ? (eq ? (size_t)(eq - colon - 1) : strlen(colon + 1)) : 0;
	if (!colon || colon == arg || !llen || (eq && eq < colon) ||
	    (size_t)(colon - arg) >= sizeof(buf) || llen >= sizeof(lbuf))
		return cli_usage("%s: \"%s\" is not OFFSET:LENGTH%s (sizes, e.g. 1G:64M)", what,
				 arg, tail ? "=POLICY" : "");
	memcpy(buf, arg, (size_t)(colon - arg));
	buf[colon - arg] = 0;
	memcpy(lbuf, colon + 1, llen);
	lbuf[llen] = 0;
	char wo[48], wl[48];
	snprintf(wo, sizeof(wo), "%s OFFSET", what);
	snprintf(wl, sizeof(wl), "%s LENGTH", what);
	if (cli_size(wo, buf, off) || cli_size(wl, lbuf, len))
		return TC_EXIT_USAGE;
	if (!*len)
		return cli_usage("%s: \"%s\" is empty (LENGTH 0)", what, arg);
	if (tail)
		*tail = eq ? eq + 1 : NULL;
	return 0;
}

static int parse(int argc, char **argv, struct vopts *o, const char *help, unsigned extra)
{
	memset(o, 0, sizeof(*o));
	o->control = TC_CONTROL_DEFAULT;
	o->devices = calloc((size_t)argc + 1, sizeof(char *));
	o->settings = json_object_new_object();
	o->unprot = -1;
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		int v;
		uint64_t n;
		if (c >= O_PIN && c <= O_RPOLICY && !(extra & X_SHARES))
			return cli_usage("%s does not take range attributes (see `tiercache set`)",
					 cli_cmd_name);
		if ((c == O_RESERVE || c == O_CAP || c == O_PRIO) && (extra & X_SETTINGS) &&
		    !(extra & X_SHARES))
			return cli_usage("%s does not take --%s: attach the volume, then give it "
					 "with `tiercache set`", cli_cmd_name,
					 c == O_RESERVE ? "reserve" : c == O_CAP ? "cap" : "priority");
		if (c >= O_RC && c <= O_PRIO && !(extra & X_SETTINGS))
			return cli_usage("%s does not take settings options (see `tiercache set`)",
					 cli_cmd_name);
		if (((c == O_CACHE || c == O_BACKING) && !(extra & X_ATTACH)) ||
		    (c == O_DISCARD && !(extra & X_DISCARD)) || (c == O_RESET && !(extra & X_RESET)) ||
		    (c == O_LATENCY && !(extra & X_LATENCY)) || (c == O_RANGE && !(extra & X_RANGE)))
			return cli_usage("%s does not take --%s", cli_cmd_name,
					 c == O_CACHE ? "cache" : c == O_BACKING ? "backing" :
					 c == O_DISCARD ? "discard-dirty" :
					 c == O_LATENCY ? "latency" : c == O_RANGE ? "range" : "reset");
		switch (c) {
		case O_CONTROL: o->control = optarg; break;
		case O_DEVICE: o->devices[o->ndevices++] = optarg; break;
		case O_JSON: o->json = true; break;
		case 'h':
		case O_HELP: cli_help(help); return -1;
		case O_RC:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--read-cache: \"%s\" is not on or off", optarg);
			json_object_object_add(o->settings, "read_cache",
					       json_object_new_boolean(!strcmp(optarg, "on")));
			break;
		case O_WP:
			if ((v = tc_write_policy_parse(optarg)) < 0)
				return cli_usage("--write-policy: \"%s\" is not wt, wb, wa, pt or instwb",
						 optarg);
			json_object_object_add(o->settings, "write_policy",
					       json_object_new_string(tc_write_policy_name((unsigned)v)));
			break;
		case O_FR:
			if ((v = tc_flush_rate_parse(optarg)) < 0)
				return cli_usage("--flush-rate: \"%s\" is not low, medium or high",
						 optarg);
			json_object_object_add(o->settings, "flush_rate",
					       json_object_new_string(tc_flush_rate_name((unsigned)v)));
			break;
		case O_ADM:
			if (tc_admission_parse(optarg) == TC_ADMIT_ALWAYS) {
				json_object_object_add(o->settings, "admission",
						       json_object_new_string(optarg));
			} else if (!strncmp(optarg, "nhit:", 5)) {
				if (cli_uint("--admission nhit:N", optarg + 5, 1, 255, &n))
					return TC_EXIT_USAGE;
				json_object_object_add(o->settings, "admission",
						       json_object_new_string("nhit"));
				json_object_object_add(o->settings, "nhit",
						       json_object_new_uint64(n));
			} else {
				return cli_usage("--admission: \"%s\" is not always or nhit:N",
						 optarg);
			}
			break;
		case O_SEQ:
			if (cli_size("--seq-cutoff", optarg, &n))
				return TC_EXIT_USAGE;
			if (n && n < CTL_SEQ_CUTOFF_MIN)
				return cli_usage("--seq-cutoff: \"%s\" (%" PRIu64 " bytes) is below the "
						 "minimum, 4K (%u bytes: the smallest cache line); 0 "
						 "turns detection off", optarg, n, CTL_SEQ_CUTOFF_MIN);
			json_object_object_add(o->settings, "seq_cutoff", json_object_new_uint64(n));
			break;
		case O_FILL:
			if (tc_fill_parse(optarg) < 0)
				return cli_usage("--fill: \"%s\" is not line or sectors", optarg);
			json_object_object_add(o->settings, "fill", json_object_new_string(optarg));
			break;
		case O_PRIO:
			if (tc_prio_parse(optarg) < 0)
				return cli_usage("--priority: \"%s\" is not high, normal or low", optarg);
			json_object_object_add(o->settings, "priority", json_object_new_string(optarg));
			break;
		case O_RESERVE:
		case O_CAP: {
			const char *what = c == O_RESERVE ? "--reserve" : "--cap";
			const char *kb = c == O_RESERVE ? "reserve_bytes" : "cap_bytes";
			const char *kp = c == O_RESERVE ? "reserve_pct" : "cap_pct";
			size_t l = strlen(optarg);
			if (l && optarg[l - 1] == '%') {
				char buf[32];
				if (l > sizeof(buf) - 1)
					return cli_usage("%s: \"%s\" is not a size or a percentage",
							 what, optarg);
				memcpy(buf, optarg, l - 1);
				buf[l - 1] = 0;
				if (cli_uint(what, buf, 0, 100, &n))
					return TC_EXIT_USAGE;
				json_object_object_add(o->settings, kp, json_object_new_uint64(n));
			} else {
				if (cli_size(what, optarg, &n))
					return TC_EXIT_USAGE;
				if (n % 4096)
					return cli_usage("%s: \"%s\" (%" PRIu64 " bytes) is not a multiple "
							 "of 4K", what, optarg, n);
				json_object_object_add(o->settings, kb, json_object_new_uint64(n));
			}
			break;
		}
		case O_CACHE: o->cache = optarg; break;
		case O_BACKING: o->backing = optarg; break;
		case O_DISCARD: o->discard = true; break;
		case O_RESET: o->reset = true; break;
		case O_LATENCY: o->latency = true; break;
		case O_RANGE:
			if (parse_span("--range", optarg, &o->range_off, &o->range_len, NULL))
				return TC_EXIT_USAGE;
			o->has_range = true;
			break;
		case O_PIN:
		case O_UNPIN:
		case O_UNCACHEABLE:
		case O_CACHEABLE:
		case O_RPOLICY: {
			static const char *const name[] = { "--pin", "--unpin", "--uncacheable",
							    "--cacheable", "--range-policy" };
			const char *what = name[c - O_PIN], *pol = NULL;
			if (o->region)
				return cli_usage("%s: one range attribute per command (%s given "
						 "before)", what, cli_jstr(o->region, "option"));
			if (parse_span(what, optarg, &o->range_off, &o->range_len,
				       c == O_RPOLICY ? &pol : NULL))
				return TC_EXIT_USAGE;
			o->region = json_object_new_object();
			json_object_object_add(o->region, "option", json_object_new_string(what));
			bool clear = c == O_UNPIN || c == O_CACHEABLE ||
				     (pol && !strcmp(pol, "volume"));
			const char *kind = c == O_PIN || c == O_UNPIN ? "pinned" :
					   c == O_RPOLICY ? "policy" : "uncacheable";
			if (c == O_RPOLICY && !clear) {
				int wp = pol ? tc_write_policy_parse(pol) : -1;
				if (wp < 0 || wp == TC_WP_INSTWB)
					return cli_usage("--range-policy: \"%s\" does not end in "
							 "=wt, =wb, =wa, =pt or =volume", optarg);
				json_object_object_add(o->region, "write_policy",
						       json_object_new_string(pol));
			}
			json_object_object_add(o->region, "action",
					       json_object_new_string(clear ? "clear" : "set"));
			json_object_object_add(o->region, "kind", json_object_new_string(kind));
			break;
		}
		case O_UNPROT:
			if (!(extra & X_UNPROT))
				return cli_usage("%s does not take --unprotected-writeback (see "
						 "`tiercache set-cache`)", cli_cmd_name);
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cli_usage("--unprotected-writeback: \"%s\" is not on or off",
						 optarg);
			o->unprot = !strcmp(optarg, "on");
			break;
		default: return cli_bad_option(argv);
		}
	}
	return 0;
}

static void vopts_free(struct vopts *o)
{
	free(o->devices);
	json_object_put(o->settings);
	if (o->region)
		json_object_put(o->region);
}

/* Run @req on a server, or offline.  Returns the final response, or NULL after a
 * message. */
static json_object *run(struct vopts *o, json_object *req, const char *what)
{
	int fd = ctl_connect(o->control);
	json_object *resp = NULL;
	if (fd >= 0) {
		int err;
		struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
		server_fd = fd;
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		resp = ctl_call(fd, req, show_progress, (void *)what, &err);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		server_fd = -1;
		close(fd);
		if (!resp)
			cli_err("control socket %s: %s", o->control, err == -EPROTO ?
				"the server's answer is not the control protocol" : strerror(-err));
		return resp;
	}
	if (fd != -ENOENT && fd != -ECONNREFUSED) {
		cli_err("control socket %s: %s", o->control, strerror(-fd));
		return NULL;
	}
	if (!o->ndevices) {
		cli_err("no server answers on %s; give the devices with --device PATH to work "
			"offline", o->control);
		return NULL;
	}
	tc_ctx *ctx = cli_ctx(false);
	tc_host *host;
	struct tc_host_opts ho = { .dev_flags = TC_DEV_EXCLUSIVE };
	/* Status and stats only look: the devices are opened read-only and assembled for
	 * inspection, so nothing on them changes (not even the in-use mark). */
	json_object *jop;
	if (json_object_object_get_ex(req, "op", &jop) &&
	    (!strcmp(json_object_get_string(jop), "status") ||
	     !strcmp(json_object_get_string(jop), "stats")))
		ho.dev_flags |= TC_DEV_READONLY;
	int r = tc_host_assemble(ctx, o->devices, (unsigned)o->ndevices, &ho, &host);
	if (r) {
		if (r == -EBUSY)
			cli_err("no server answers on %s, yet a device is locked: another "
				"tiercache process (a server with another --control path?) holds "
				"it", o->control);
		tc_ctx_free(ctx);
		return NULL;
	}
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	resp = ctl_execute(host, req, show_progress, (void *)what);
	r = tc_host_close(host);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	tc_ctx_free(ctx);
	if (r && resp) {
		json_object *jok;
		if (json_object_object_get_ex(resp, "ok", &jok) && json_object_get_boolean(jok)) {
			json_object_put(resp);
			resp = ctl_error(-r, "closing the devices failed after the operation");
		}
	}
	return resp;
}

/* Print the error of a failed response; returns the result object of a good one. */
static json_object *result_of(json_object *resp)
{
	if (cli_isatty_err())
		fputs("\r\033[K", stderr);
	json_object *jr = cli_result(resp);
	if (!jr && cli_result_errno(resp) == EINTR)
		cli_err("interrupted: nothing was lost, the volume is as it was");
	return jr;
}

/* The ranges with attributes of a status or set answer, one line each. */
static void print_ranges(const char *vol, json_object *ranges)
{
	for (size_t i = 0; ranges && i < json_object_array_length(ranges); i++) {
		json_object *g = json_object_array_get_idx(ranges, i);
		char a[32], b[32];
		printf("volume \"%s\": range %" PRIu64 ":%" PRIu64 " (%s at %s) %s", vol,
		       cli_ju64(g, "offset"), cli_ju64(g, "length"),
		       tc_size_format(cli_ju64(g, "length"), b, sizeof(b)),
		       tc_size_format(cli_ju64(g, "offset"), a, sizeof(a)), cli_jstr(g, "kind"));
		if (!strcmp(cli_jstr(g, "kind"), "policy"))
			printf(" %s", cli_jstr(g, "write_policy"));
		printf("\n");
	}
}

static void print_settings(const char *vol, json_object *s)
{
	json_object *rc;
	json_object_object_get_ex(s, "read_cache", &rc);
	char hb[32];
	printf("volume \"%s\": read cache %s, write policy %s, flush rate %s, admission %s",
	       vol, json_object_get_boolean(rc) ? "on" : "off", cli_jstr(s, "write_policy"),
	       cli_jstr(s, "flush_rate"), cli_jstr(s, "admission"));
	if (!strcmp(cli_jstr(s, "admission"), "nhit"))
		printf(":%" PRIu64, cli_ju64(s, "nhit"));
	printf(", fill %s, seq cutoff %s", cli_jstr(s, "fill"),
	       tc_size_format(cli_ju64(s, "seq_cutoff"), hb, sizeof(hb)));
	static const char *const share[2] = { "reserve", "cap" };
	for (int i = 0; i < 2; i++) {
		char kb[16], kp[16];
		snprintf(kb, sizeof(kb), "%s_bytes", share[i]);
		snprintf(kp, sizeof(kp), "%s_pct", share[i]);
		if (cli_ju64(s, kp))
			printf(", %s %" PRIu64 "%%", share[i], cli_ju64(s, kp));
		else if (cli_ju64(s, kb))
			printf(", %s %s", share[i], tc_size_format(cli_ju64(s, kb), hb, sizeof(hb)));
	}
	json_object *pr;
	if (json_object_object_get_ex(s, "priority", &pr))
		printf(", priority %s", json_object_get_string(pr));
	printf("\n");
}

static void print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Finish a command: print the result with @print (or as JSON); exit code. */
static int finish(struct vopts *o, json_object *req, const char *what,
		  void (*print)(json_object *result, struct vopts *o))
{
	json_object *resp = run(o, req, what);
	json_object_put(req);
	json_object *res = resp ? result_of(resp) : NULL;
	int rc = res ? TC_EXIT_OK : TC_EXIT_FAIL;
	if (res) {
		if (o->json)
			print_json(res);
		else
			print(res, o);
	}
	json_object_put(resp);
	vopts_free(o);
	return rc;
}

/* A table whose column widths come from its content: cells are copied in, then
 * printed with each column as wide as its widest cell (right-aligned columns: @right,
 * a bit per column). */
#define TABLE_COLS 10
struct table {
	unsigned ncols, nrows, right;
	char *(*cells)[TABLE_COLS];
	int width[TABLE_COLS];
};

static void table_row(struct table *t, const char *const *cells)
{
	void *nc = realloc(t->cells, (t->nrows + 1) * sizeof(*t->cells));
	if (!nc)
		return;
	t->cells = nc;
	for (unsigned i = 0; i < t->ncols; i++) {
		t->cells[t->nrows][i] = strdup(cells[i] ? cells[i] : "-");
		int w = t->cells[t->nrows][i] ? (int)strlen(t->cells[t->nrows][i]) : 0;
		if (w > t->width[i])
			t->width[i] = w;
	}
	t->nrows++;
}

static void table_print(struct table *t)
{
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned i = 0; i < t->ncols; i++) {
			const char *c = t->cells[r][i] ? t->cells[r][i] : "";
			bool last = i + 1 == t->ncols;
			if (t->right & (1u << i))
				printf("%*s", t->width[i], c);
			else
				printf("%-*s", last ? 0 : t->width[i], c);
			fputs(last ? "\n" : "  ", stdout);
			free(t->cells[r][i]);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

/* A string field that is present, not null and not empty. */
static bool jstr_given(json_object *o, const char *key)
{
	const char *s = cli_jstr(o, key);
	return *s && strcmp(s, "-");
}

static void status_volume_row(struct table *t, json_object *v)
{
	char a[32], b[32], c[32], rate[40];
	json_object *s, *fb;
	bool has = json_object_object_get_ex(v, "settings", &s) && s;
	json_object_object_get_ex(v, "fallback", &fb);
	json_object *rc = NULL;
	if (has)
		json_object_object_get_ex(s, "read_cache", &rc);
	bool absent = !strcmp(cli_jstr(v, "state"), "no-backing");
	snprintf(rate, sizeof(rate), "%s/s",
		 tc_size_format(cli_ju64(v, "writeback_rate"), c, sizeof(c)));
	/* The stored policy, and the one in force where they differ: "wb>wt". */
	char pol[32];
	const char *eff = cli_jstr(v, "effective_policy");
	if (has && jstr_given(v, "effective_policy") && strcmp(eff, cli_jstr(s, "write_policy")))
		snprintf(pol, sizeof(pol), "%s>%s", cli_jstr(s, "write_policy"), eff);
	else
		snprintf(pol, sizeof(pol), "%s", has ? cli_jstr(s, "write_policy") : "-");
	const char *row[] = {
		cli_jstr(v, "name"), tc_size_format(cli_ju64(v, "size"), a, sizeof(a)),
		cli_jstr(v, "state"),
		pol,
		has ? (json_object_get_boolean(rc) ? "on" : "off") : "-",
		has ? cli_jstr(s, "flush_rate") : "-",
		tc_size_format(cli_ju64(v, "dirty_bytes"), b, sizeof(b)),
		has && !absent ? rate : "-", json_object_get_boolean(fb) ? "yes" : "no",
		cli_jstr(v, "cache"),
	};
	table_row(t, row);
}

static void print_status(json_object *res, struct vopts *o)
{
	json_object *vols, *caches;
	json_object_object_get_ex(res, "volumes", &vols);
	json_object_object_get_ex(res, "caches", &caches);
	struct table t = { .ncols = 10, .right = 1u << 1 | 1u << 6 | 1u << 7 };
	table_row(&t, (const char *[]){ "VOLUME", "SIZE", "STATE", "POLICY", "READ", "FLUSH",
					"DIRTY", "WRITEBACK", "FALLBACK", "CACHE" });
	bool absent = false;
	for (size_t i = 0; i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i);
		status_volume_row(&t, v);
		absent |= !strcmp(cli_jstr(v, "state"), "no-backing");
	}
	table_print(&t);
	for (size_t i = 0; i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i);
		if (jstr_given(v, "policy_reason"))
			printf("volume \"%s\": runs %s for now: %s\n", cli_jstr(v, "name"),
			       cli_jstr(v, "effective_policy"), cli_jstr(v, "policy_reason"));
		json_object *ranges;
		if (json_object_object_get_ex(v, "ranges", &ranges)) {
			print_ranges(cli_jstr(v, "name"), ranges);
			char pb[32];
			if (json_object_array_length(ranges) && cli_ju64(v, "pinned_bytes"))
				printf("volume \"%s\": %s of pinned lines resident\n",
				       cli_jstr(v, "name"), tc_size_format(cli_ju64(v, "pinned_bytes"),
									   pb, sizeof(pb)));
		}
	}
	if (absent)
		printf("(no-backing: the cache holds the volume, but its backing device is not "
		       "present; give it with --device, or serve it)\n");
	json_object *arrays;
	if (json_object_object_get_ex(res, "arrays", &arrays) &&
	    json_object_array_length(arrays)) {
		struct table at = { .ncols = 7, .right = 1u << 2 | 1u << 4 };
		table_row(&at, (const char *[]){ "ARRAY", "LEVEL", "SIZE", "STATE", "MEMBERS",
						 "FAULTY", "DEVICE" });
		for (size_t i = 0; i < json_object_array_length(arrays); i++) {
			json_object *a = json_object_array_get_idx(arrays, i), *ms;
			char sz[32], nm[24];
			json_object_object_get_ex(a, "members", &ms);
			snprintf(nm, sizeof(nm), "%zu", ms ? json_object_array_length(ms) : 0);
			char faulty[256] = "";
			for (size_t k = 0; ms && k < json_object_array_length(ms); k++) {
				json_object *m = json_object_array_get_idx(ms, k);
				if (strcmp(cli_jstr(m, "state"), "faulty"))
					continue;
				size_t used = strlen(faulty);
				snprintf(faulty + used, sizeof(faulty) - used, "%s%s",
					 used ? "," : "", cli_jstr(m, "device"));
			}
			table_row(&at, (const char *[]){ cli_jstr(a, "name"), cli_jstr(a, "level"),
				tc_size_format(cli_ju64(a, "size"), sz, sizeof(sz)),
				cli_jstr(a, "state"), nm, faulty[0] ? faulty : "-",
				cli_jstr(a, "device") });
		}
		printf("\n");
		table_print(&at);
	}
	if (!json_object_array_length(caches))
		return;
	struct table ct = { .ncols = 6, .right = 0x3eu };
	table_row(&ct, (const char *[]){ "CACHE", "LINE", "LINES", "USED", "DIRTY LINES",
					 "DIRTY" });
	for (size_t i = 0; i < json_object_array_length(caches); i++) {
		json_object *c = json_object_array_get_idx(caches, i);
		char a[32], b[32], n1[24], n2[24], n3[24];
		snprintf(n1, sizeof(n1), "%" PRIu64, cli_ju64(c, "lines"));
		snprintf(n2, sizeof(n2), "%" PRIu64, cli_ju64(c, "lines_used"));
		snprintf(n3, sizeof(n3), "%" PRIu64, cli_ju64(c, "lines_dirty"));
		table_row(&ct, (const char *[]){ cli_jstr(c, "device"),
			tc_size_format(cli_ju64(c, "line_size"), a, sizeof(a)), n1, n2, n3,
			tc_size_format(cli_ju64(c, "dirty_bytes"), b, sizeof(b)) });
	}
	printf("\n");
	table_print(&ct);
	for (size_t i = 0; i < json_object_array_length(caches); i++) {
		json_object *c = json_object_array_get_idx(caches, i);
		if (jstr_given(c, "warning"))
			printf("warning: cache %s: %s\n", cli_jstr(c, "device"),
			       cli_jstr(c, "warning"));
	}
}

/* stats: "key: value" lines, nested objects prefixed. */
static void print_flat(json_object *o, const char *prefix)
{
	json_object_object_foreach(o, key, val) {
		if (json_object_is_type(val, json_type_object)) {
			char p[128];
			snprintf(p, sizeof(p), "%s%s.", prefix, key);
			print_flat(val, p);
		} else {
			printf("%s%s: %s\n", prefix, key,
			       json_object_to_json_string_ext(val, JSON_C_TO_STRING_NOSLASHESCAPE));
		}
	}
}

/* A latency in ns as 850ns, 12.3us, 4.56ms, 1.23s. */
static const char *lat_text(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", (double)ns / 1e9);
	return buf;
}

/* stats --latency: one row per class of the "latency" object. */
static void print_latency(json_object *res, struct vopts *o)
{
	static const char *const cls[][2] = {
		{ "read_hit", "read hit" }, { "read_miss", "read miss" },
		{ "write_hit", "write hit" }, { "write_miss", "write miss" },
	};
	static const char *const keys[] = { "p50_ns", "p99_ns", "p999_ns", "p9999_ns",
					     "max_ns" };
	json_object *lat, *c;
	if (!json_object_object_get_ex(res, "latency", &lat)) {
		/* Served uncached, or offline without the backing: no engine requests. */
		print_flat(res, "");
		return;
	}
	printf("volume \"%s\": latency from arrival to completion\n", o->volume);
	printf("%-11s %12s %10s %10s %10s %10s %10s\n", "class", "count", "p50", "p99",
	       "p99.9", "p99.99", "max");
	for (unsigned i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
		if (!json_object_object_get_ex(lat, cls[i][0], &c))
			continue;
		uint64_t n = cli_ju64(c, "count");
		printf("%-11s %12" PRIu64, cls[i][1], n);
		for (unsigned k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			char b[32];
			printf(" %10s", n ? lat_text(cli_ju64(c, keys[k]), b, sizeof(b)) : "-");
		}
		printf("\n");
	}
}

static void print_stats(json_object *res, struct vopts *o)
{
	if (o->latency) {
		print_latency(res, o);
		return;
	}
	/* The histograms have a table of their own (--latency); JSON has them all. */
	json_object_object_del(res, "latency");
	print_flat(res, "");
}

static void print_set(json_object *res, struct vopts *o)
{
	print_settings(o->volume, res);
	json_object *ranges;
	if (json_object_object_get_ex(res, "ranges", &ranges))
		print_ranges(o->volume, ranges);
}

static void print_flush(json_object *res, struct vopts *o)
{
	char a[32];
	json_object *st;
	if (json_object_object_get_ex(res, "state", &st)) {
		printf("volume \"%s\": served %s, without a cache: nothing to flush (its backing "
		       "was flushed)\n", o->volume, json_object_get_string(st));
		return;
	}
	if (o->has_range)
		printf("range %" PRIu64 ":%" PRIu64 ": ", o->range_off, o->range_len);
	printf("flushed %s; dirty now %" PRIu64 " bytes\n",
	       tc_size_format(cli_ju64(res, "dirty_bytes_before"), a, sizeof(a)),
	       cli_ju64(res, "dirty_bytes"));
}

static void print_invalidate(json_object *res, struct vopts *o)
{
	char a[32], b[32];
	printf("volume \"%s\": range %" PRIu64 ":%" PRIu64 " invalidated: %s of clean copies "
	       "dropped", o->volume, o->range_off, o->range_len,
	       tc_size_format(cli_ju64(res, "dropped_bytes"), a, sizeof(a)));
	if (cli_ju64(res, "dirty_bytes_discarded"))
		printf(", %s of dirty data discarded",
		       tc_size_format(cli_ju64(res, "dirty_bytes_discarded"), b, sizeof(b)));
	if (cli_ju64(res, "dirty_bytes_kept"))
		printf(", %s written meanwhile kept (dirty)",
		       tc_size_format(cli_ju64(res, "dirty_bytes_kept"), b, sizeof(b)));
	printf("\n");
}

/* The "range" operand of a request. */
static void add_range(json_object *req, const struct vopts *o)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "offset", json_object_new_uint64(o->range_off));
	json_object_object_add(r, "length", json_object_new_uint64(o->range_len));
	json_object_object_add(req, "range", r);
}

static void print_detach(json_object *res, struct vopts *o)
{
	char a[32];
	printf("volume \"%s\": detached from its cache%s", cli_jstr(res, "name"),
	       o->ndevices ? "" : "");
	if (cli_ju64(res, "dirty_bytes_discarded"))
		printf(", %s of dirty data discarded",
		       tc_size_format(cli_ju64(res, "dirty_bytes_discarded"), a, sizeof(a)));
	printf("\n");
}

static void print_attach(json_object *res, struct vopts *o)
{
	json_object *aa;
	if (json_object_object_get_ex(res, "already_attached", &aa) &&
	    json_object_get_boolean(aa)) {
		printf("volume \"%s\": already attached to cache %s; nothing changed\n",
		       cli_jstr(res, "name"), cli_jstr(res, "cache"));
		return;
	}
	printf("volume \"%s\": attached to cache %s\n", cli_jstr(res, "name"),
	       cli_jstr(res, "cache"));
	json_object *s;
	if (json_object_object_get_ex(res, "settings", &s) && s)
		print_settings(cli_jstr(res, "name"), s);
}

/* VOLUME, the one operand of set/flush/detach/stats. */
static const char *operand(int argc, char **argv)
{
	if (argc - optind != 1) {
		cli_usage("expected one VOLUME name");
		return NULL;
	}
	return argv[optind];
}

static json_object *request(const char *op, const char *vol)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "op", json_object_new_string(op));
	if (vol)
		json_object_object_add(r, "volume", json_object_new_string(vol));
	return r;
}

int cmd_set(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_set, X_SETTINGS | X_SHARES);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	if (o.region && json_object_object_length(o.settings)) {
		vopts_free(&o);
		return cli_usage("a range attribute (--pin, --unpin, --uncacheable, --cacheable, "
				 "--range-policy) is changed alone, without other settings");
	}
	if (!json_object_object_length(o.settings) && !o.region) {
		vopts_free(&o);
		return cli_usage("nothing to set: give at least one setting option");
	}
	o.volume = vol;
	json_object *req = request("set", vol);
	json_object_object_add(req, "settings", json_object_get(o.settings));
	if (o.region) {
		json_object_object_del(o.region, "option");
		json_object_object_add(req, "region", json_object_get(o.region));
		add_range(req, &o);
	}
	char what[64];
	snprintf(what, sizeof(what), "draining volume \"%s\"", vol);
	return finish(&o, req, what, print_set);
}

static void print_set_cache(json_object *res, struct vopts *o)
{
	(void)o;
	json_object *u, *held;
	json_object_object_get_ex(res, "unprotected_writeback", &u);
	json_object_object_get_ex(res, "writeback_held", &held);
	printf("cache %s: write-back %s; redundancy %" PRIu64 "%s\n", cli_jstr(res, "device"),
	       json_object_get_boolean(u) ? "allowed without redundancy (unprotected: a device "
	       "failure loses the dirty data)" : "needs a redundant cache device",
	       cli_ju64(res, "redundancy"), json_object_get_boolean(held) ?
	       "; write-back volumes run write-through (held)" : "");
}

int cmd_set_cache(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_set_cache, X_UNPROT);
	const char *cache = NULL;
	if (!r && argc - optind != 1)
		r = cli_usage("expected one CACHE device");
	else if (!r)
		cache = argv[optind];
	if (!r && o.unprot < 0)
		r = cli_usage("nothing to set: give --unprotected-writeback on|off");
	if (r) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	json_object *req = request("cache_set", NULL);
	/* A server's working folder is not ours: a file is named by its absolute path. */
	char *abs = realpath(cache, NULL);
	json_object_object_add(req, "cache", json_object_new_string(abs ? abs : cache));
	free(abs);
	json_object_object_add(req, "unprotected_writeback", json_object_new_boolean(o.unprot));
	char what[64];
	snprintf(what, sizeof(what), "cache %.40s", cache);
	return finish(&o, req, what, print_set_cache);
}

int cmd_flush(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_flush, X_RANGE);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	o.volume = vol;
	char what[64];
	snprintf(what, sizeof(what), "flushing volume \"%s\"", vol);
	json_object *req = request("flush", vol);
	if (o.has_range)
		add_range(req, &o);
	return finish(&o, req, what, print_flush);
}

int cmd_invalidate(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_invalidate, X_RANGE | X_DISCARD);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	if (!o.has_range) {
		vopts_free(&o);
		return cli_usage("invalidate needs --range OFFSET:LENGTH");
	}
	o.volume = vol;
	json_object *req = request("invalidate", vol);
	add_range(req, &o);
	if (o.discard)
		json_object_object_add(req, "discard_dirty", json_object_new_boolean(1));
	char what[64];
	snprintf(what, sizeof(what), "invalidating volume \"%s\"", vol);
	return finish(&o, req, what, print_invalidate);
}

int cmd_detach(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_detach, X_DISCARD);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	json_object *req = request("detach", vol);
	if (o.discard)
		json_object_object_add(req, "discard_dirty", json_object_new_boolean(1));
	char what[64];
	snprintf(what, sizeof(what), "draining volume \"%s\"", vol);
	return finish(&o, req, what, print_detach);
}

int cmd_stats(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_stats, X_RESET | X_LATENCY);
	const char *vol = r ? NULL : operand(argc, argv);
	if (!vol) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : TC_EXIT_USAGE;
	}
	o.volume = vol;
	json_object *req = request("stats", vol);
	if (o.reset)
		json_object_object_add(req, "reset", json_object_new_boolean(1));
	return finish(&o, req, "stats", print_stats);
}

int cmd_status(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_status, 0);
	if (r || optind != argc) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : r ? r : cli_usage("status takes no operands");
	}
	return finish(&o, request("status", NULL), "status", print_status);
}

static void quiet_log(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	(void)level;
	(void)msg;
}

/* What @spec holds (read-only, without its lock: a server may hold it), or -1 when it
 * cannot be read (the attach itself then says why). */
static int probe_kind(tc_ctx *ctx, const char *spec, struct tc_probe *p)
{
	tc_dev *d;
	if (tc_dev_open_spec(ctx, spec, TC_DEV_READONLY | TC_DEV_BUFFERED, 0, 0, &d))
		return -1;
	int r = tc_dev_probe(ctx, d, p);
	tc_dev_close(d);
	return r ? -1 : (int)p->kind;
}

/* --cache must name a cache and --backing a backing: the two swapped (or one of them
 * wrong) is said as such, before anything is opened for writing. */
static bool attach_kinds_ok(const char *cache, const char *backing)
{
	tc_ctx *ctx = cli_ctx(false);
	tc_ctx_set_log(ctx, quiet_log, NULL, TC_LOG_ERROR);   /* probe quietly */
	struct tc_probe pc, pb;
	int kc = probe_kind(ctx, cache, &pc), kb = probe_kind(ctx, backing, &pb);
	tc_ctx_free(ctx);
	bool ok = true;
	if (kc == TC_PROBE_BACKING) {
		cli_err("--cache %s is a backing (of volume \"%s\"), not a cache%s", cache, pc.name,
			kb == TC_PROBE_CACHE ? "; --cache and --backing are swapped" : "");
		ok = false;
	}
	if (kb == TC_PROBE_CACHE && !(kc == TC_PROBE_BACKING)) {
		cli_err("--backing %s is a cache, not a backing", backing);
		ok = false;
	}
	return ok;
}

int cmd_attach(int argc, char **argv)
{
	struct vopts o;
	int r = parse(argc, argv, &o, help_attach, X_SETTINGS | X_ATTACH | X_DISCARD);
	if (r || optind != argc || !o.cache || !o.backing) {
		vopts_free(&o);
		return r < 0 ? TC_EXIT_OK : r ? r :
		       cli_usage("attach needs --cache DEVICE and --backing DEVICE, no operands");
	}
	if (!attach_kinds_ok(o.cache, o.backing)) {
		vopts_free(&o);
		return TC_EXIT_FAIL;
	}
	json_object *req = request("attach", NULL);
	/* The server runs in another folder: absolute paths. */
	char cabs[PATH_MAX], babs[PATH_MAX];
	if (cli_abs_spec(o.cache, cabs, sizeof(cabs)) ||
	    cli_abs_spec(o.backing, babs, sizeof(babs))) {
		json_object_put(req);
		vopts_free(&o);
		return TC_EXIT_FAIL;
	}
	json_object_object_add(req, "cache", json_object_new_string(cabs));
	json_object_object_add(req, "backing", json_object_new_string(babs));
	if (json_object_object_length(o.settings))
		json_object_object_add(req, "settings", json_object_get(o.settings));
	if (o.discard)
		json_object_object_add(req, "discard_dirty", json_object_new_boolean(1));
	/* Offline, the cache is one of the devices to assemble (the backing is opened
	 * by the attach itself), named as the request names it: an array spec given
	 * relative and absolute was two devices to the host, which opened its members
	 * twice and refused its own lock. */
	bool have = false;
	for (int i = 0; i < o.ndevices; i++) {
		char dabs[PATH_MAX];
		if (!strcmp(o.devices[i], o.cache) ||
		    (!cli_abs_spec(o.devices[i], dabs, sizeof(dabs)) && !strcmp(dabs, cabs))) {
			o.devices[i] = cabs;
			have = true;
		}
	}
	if (!have)
		o.devices[o.ndevices++] = cabs;
	return finish(&o, req, "attach", print_attach);
}
