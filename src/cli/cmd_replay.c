/* SPDX-License-Identifier: MIT */
/*
 * cmd_replay.c - `tiercache replay`: replay a real block trace through a cached volume
 * (the library on emulated devices, virtual clock) or against a served volume over NBD
 * (real clock), and report hit ratios, IOPS, latency and writeback.
 *
 * The work is in src/replay/ (trace.c reads the formats, replay.c drives the requests,
 * mrc.c runs it once per cache size, report.c prints the tables and JSON); this file
 * parses the command line, makes and removes the temporary folder and draws the
 * progress bar.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mrc.h"
#include "replay.h"
#include "trace.h"

#define MAX_SIZES 32

static const char replay_help[] =
"NAME\n"
"    tiercache replay - replay a real block trace through a cached volume\n"
"\n"
"SYNOPSIS\n"
"    tiercache replay TRACE --format FMT [--trace-volume ID] [--limit N]\n"
"                     [--target URI] [--speed X | --queue-depth N] [--warmup N]\n"
"                     [--cache-size SIZE|P% | --cache-sizes LIST] [--line-size SIZE]\n"
"                     [--write-policy wt|wb|wa|pt] [--replacement POLICY]\n"
"                     [--fill sectors|line] [--admission always|nhit] [--nhit N]\n"
"                     [--seq-cutoff SIZE] [--devices emu|file|memory]\n"
"                     [--hdd-profile P] [--ssd-profile P] [--volume-cap SIZE]\n"
"                     [--tmpdir DIR] [--seed N] [--max-bad-lines N]\n"
"                     [--max-inflight N] [--as-reads] [--json] [--quiet]\n"
"\n"
"DESCRIPTION\n"
"    Reads the block trace TRACE (plain, or gzip, bzip2, xz or zstd compressed:\n"
"    recognised by the file's first bytes, not its name; \"-\" reads standard input)\n"
"    and replays its reads and writes.\n"
"\n"
"    Without --target (library mode, the default) the requests go through\n"
"    libtiercache in a deterministic context: a virtual clock that jumps from one\n"
"    event to the next, so hours of trace replay in seconds and the same --seed\n"
"    gives the same figures.  The volume is made in a temporary folder under\n"
"    --tmpdir: an emulated HDD as backing (profile --hdd-profile) and an emulated\n"
"    SATA SSD as cache (--ssd-profile), both sparse files, removed at the end (also\n"
"    on error and on Ctrl-C).  The cache holds 10 % of the trace's footprint (the\n"
"    distinct 4 KiB pages it touches) unless --cache-size says otherwise.  Latencies\n"
"    are those of the emulated devices on the virtual clock.\n"
"\n"
"    With --target URI the requests go to a served volume over NBD (libnbd,\n"
"    asynchronous commands on one connection) on the real clock.  The client cannot\n"
"    see the server's cache: hit ratios are reported as n/a (null in JSON).\n"
"\n"
"    Driving: by default the trace's timestamps are honoured (timed, open loop):\n"
"    each request is submitted at its arrival time divided by --speed, whatever is\n"
"    still in flight, and its latency counts from its arrival time, so queueing\n"
"    behind a slow disk shows.  With --queue-depth N the timestamps are ignored and\n"
"    N requests are kept in flight (closed loop): IOPS then measure what the volume\n"
"    can do.\n"
"\n"
"    Layout: every source volume of a multi-volume trace (an MSR disk, a SYSTOR LUN,\n"
"    a Tencent or Alibaba volume, an MQSim device) gets its own region of the one\n"
"    replayed volume, regions back to back on 1 MiB boundaries; --trace-volume ID\n"
"    replays one of them only.  A region is its volume's extent (highest byte\n"
"    touched) unless the whole does not fit (the target's size, or --volume-cap):\n"
"    then the space is shared out fairly and offsets beyond a region are folded\n"
"    into it (offset modulo the region size); folded requests are counted.\n"
"\n"
"    Hits (library mode): just before a request is submitted the cache's map is\n"
"    looked up; a request is a hit when every byte of it lies in a valid 4 KiB unit\n"
"    of a cached line, and its hit bytes are those that do.  hit_ratio is per\n"
"    request, byte_hit_ratio per byte; line_hit_ratio is the engine's own count, per\n"
"    cache line touched by a request (partial hits count as misses);\n"
"    page_hit_ratio is per 4 KiB page a request touches (a page hits when the\n"
"    request's bytes in it are valid), the figure cache simulators such as\n"
"    libCacheSim print for a block trace split into pages.  A miss ratio is\n"
"    1 - hit ratio.\n"
"\n"
"OPTIONS\n"
"    -f, --format FMT       the trace format (see FORMATS); required\n"
"    --trace-volume ID      replay only the source volume ID (as the trace names\n"
"                           it: MSR \"hm_0\", SYSTOR LUN, Tencent VolumeID, ...)\n"
"    --limit N              replay only the first N requests (in file order;\n"
"                           SYSTOR traces are sorted after the cut)\n"
"    --max-bad-lines N      skip up to N malformed lines (counted, the first one\n"
"                           shown) instead of failing on the first (default 0)\n"
"    --target URI           replay against an NBD export: nbd://HOST[:PORT]/NAME\n"
"                           or nbd+unix:///NAME?socket=PATH\n"
"    --speed X              timed mode: replay X times faster than recorded\n"
"                           (default 1; 0.5 is half speed)\n"
"    --queue-depth N        closed loop with N requests in flight, 1..65536\n"
"    --max-inflight N       timed mode: at most N requests in flight; later ones\n"
"                           wait and count as late (default 4096)\n"
"    --warmup N             replay the first N requests without measuring them:\n"
"                           counters and latencies start after them\n"
"    --cache-size SIZE|P%   the cache's data area: bytes (K/M/G/T) or a percentage\n"
"                           of the footprint (default 10%), rounded down to whole\n"
"                           lines as cache simulators round; at least 16 lines\n"
"    --cache-sizes LIST     replay once per size of the comma-separated LIST (as\n"
"                           --cache-size, e.g. 1%,5%,10%,20%) and print the\n"
"                           miss-ratio curve\n"
"    --line-size SIZE       cache line, a power of two 4K..64K (default 64K)\n"
"    --write-policy P       wt, wb, wa or pt (default wb)\n"
"    --replacement R        s3fifo (default), lru, arc, 2q, sieve, wtinylfu, lirs\n"
"                           or wtinylfu-hc (W-TinyLFU, adaptive window);\n"
"                           --policy R is the same option\n"
"    --fill F               what a read miss fills: sectors (the 4 KiB units asked\n"
"                           for) or line (every invalid unit of the line; the\n"
"                           default)\n"
"    --admission A          always (every read miss fills; the default) or nhit\n"
"                           (a line fills on its Nth access within the admission\n"
"                           history)\n"
"    --nhit N               N for --admission nhit, 1..255 (default 2)\n"
"    --seq-cutoff SIZE      sequential streams this long bypass the cache; 0 = off\n"
"                           (default 4M, the library's default)\n"
"    --devices D            emu (default): emulated HDD and SSD with service\n"
"                           times; file: sparse files, no service time (virtual\n"
"                           time stands still, latencies are 0); memory: RAM,\n"
"                           no service time, for volumes that fit in memory.  When\n"
"                           this build has no emulated devices, emu falls back to\n"
"                           file with a warning\n"
"    --hdd-profile P        emulated backing: a profile name or file (default hdd)\n"
"    --ssd-profile P        emulated cache: a profile name or file (default\n"
"                           sata-ssd); names are looked up in $TC_PROFILE_DIR\n"
"    --volume-cap SIZE      library mode: the largest volume to create (default\n"
"                           8T; the files are sparse)\n"
"    --tmpdir DIR           where the temporary folder goes (default $TMPDIR, else\n"
"                           /tmp).  The emulated devices' FLUSH is a real\n"
"                           fdatasync: on a tmpfs such as /dev/shm replays run\n"
"                           several times faster (the files take RAM there: up\n"
"                           to the footprint plus the cache)\n"
"    --seed N               seed of the deterministic context (default 1)\n"
"    --as-reads             replay every request as a read of the same bytes:\n"
"                           nothing is ever dirty, so with --admission always and\n"
"                           --seq-cutoff 0 the eviction order is the replacement\n"
"                           policy's own, as in a cache simulator (docs/policy.md)\n"
"    --json                 print one JSON object instead of the tables\n"
"    -q, --quiet            no progress bar (it is drawn only when stderr is a\n"
"                           terminal anyway)\n"
"    -h, --help             this text\n"
"\n"
"FORMATS\n"
"    A sector is 512 bytes; binary formats are little-endian.  Text formats may\n"
"    start with a header line; blank lines and lines starting with # are skipped.\n"
"    vscsi            VSCSI v1, 32-byte records: u32 sn, u32 len (bytes), u32 nSG,\n"
"                     u16 cmd (SCSI opcode), u16 ver (0x01xx), u64 lbn (sector),\n"
"                     u64 ts (us); v2, 40 bytes: u16 cmd, u16 ver (0x02xx), u32 sn,\n"
"                     u32 len, u32 nSG, u64 lbn, u64 ts, u64 rt.  The first record\n"
"                     tells the version.  READ(6/10/12/16) and WRITE(6/10/12/16)\n"
"                     are replayed, other commands skipped and counted\n"
"    libcachesim-csv  version,time,op,size,lbn: seconds, hex opcode (28 read,\n"
"                     2a write), bytes, sectors\n"
"    msr              MSR Cambridge: Timestamp,Hostname,DiskNumber,Type,Offset,\n"
"                     Size,ResponseTime: Windows FILETIME (100 ns ticks), Read or\n"
"                     Write, bytes.  Source volume: HOSTNAME_DISKNUMBER (hm_0)\n"
"    systor           SYSTOR'17: Timestamp,Response,IOType,LUN,Offset,Size: epoch\n"
"                     seconds with fraction, R or W, bytes.  Not sorted by time in\n"
"                     the files: sorted when read.  Source volume: LUN\n"
"    tencent          Tencent CBS: Timestamp,Offset,Size,IOType,VolumeID: seconds,\n"
"                     sectors, 0 read / 1 write.  Source volume: VolumeID\n"
"    mqsim            MQSim/DiskSim ASCII: arrival_time device lba size type,\n"
"                     blank-separated: ns, sectors, 0 write / 1 read.  Source\n"
"                     volume: device\n"
"    alibaba          Alibaba block traces: device_id,opcode,offset,length,\n"
"                     timestamp: R or W, bytes, microseconds.  Source volume:\n"
"                     device_id\n"
"    Offsets and ends are rounded to 512 bytes (counted as unaligned); requests of\n"
"    length 0 are skipped; longer than 32 MiB are cut (counted).\n"
"\n"
"OUTPUT\n"
"    A table on stdout: the trace, the layout, the cache; requests, request, byte\n"
"    and line hit ratios for reads, writes and all; IOPS and throughput over the\n"
"    replay clock; latency mean, percentiles and a histogram; the engine's\n"
"    promotions, evictions, bypasses, dirty data (peak and at the end), writeback;\n"
"    the traffic of the backing and cache devices; the replay's own speed.  A\n"
"    progress bar goes to stderr when it is a terminal.\n"
"\n"
"    --json prints one object with at least: requests, reads, writes, hit_ratio,\n"
"    read_hit_ratio, write_hit_ratio (per request), byte_hit_ratio,\n"
"    read_byte_hit_ratio, write_byte_hit_ratio (per byte), page_hit_ratio,\n"
"    read_page_hit_ratio, write_page_hit_ratio, page_miss_ratio (per 4 KiB page\n"
"    referenced), line_hit_ratio, read_line_hit_ratio, write_line_hit_ratio (per\n"
"    cache line, engine counters),\n"
"    iops, throughput_bytes_per_s, elapsed_s, latency_us {mean, p50, p90, p99,\n"
"    p999, max, read {...}, write {...}}, latency_histogram_us [{le, count}],\n"
"    cache {...}, backing_device {...}, cache_device {...},\n"
"    ssd_bytes_per_host_byte (SSD endurance: cache-device bytes written, data and\n"
"    metadata, per byte the host read or wrote), trace {...},\n"
"    layout {...}, config {...} (the cache and every volume setting of the run:\n"
"    line_size, replacement, write_policy, read_cache, seq_cutoff, admission, nhit,\n"
"    fill, flush_rate).  Ratios are null when not known (NBD mode) or\n"
"    not defined (no request of that kind).  With --cache-sizes: {trace, layout,\n"
"    runs: [one object as above per size], mrc: [{cache_bytes,\n"
"    fraction_of_footprint, miss_ratio, byte_miss_ratio, page_miss_ratio,\n"
"    line_miss_ratio, ssd_bytes_per_host_byte,\n"
"    read_miss_ratio}]}.\n"
"\n"
"    Percentiles and histogram counts come from a log-linear histogram with\n"
"    buckets at most 0.8 % wide; mean, min and max are exact.\n"
"\n"
"EXAMPLES\n"
"    Replay the CloudPhysics trace on a cache of 10 % of its footprint:\n"
"        tiercache replay cloudPhysicsIO.vscsi --format vscsi\n"
"    The miss-ratio curve at four cache sizes, as JSON:\n"
"        tiercache replay cloudPhysicsIO.vscsi -f vscsi --cache-sizes 1%,5%,10%,20% --json\n"
"    One volume of a compressed Tencent trace, 32 requests in flight:\n"
"        tiercache replay cbs_trace1.csv.bz2 -f tencent --trace-volume 1063 \\\n"
"            --queue-depth 32 --limit 1000000\n"
"    Against a served volume, twice as fast as recorded:\n"
"        tiercache replay hm_0.csv.gz -f msr --speed 2 \\\n"
"            --target 'nbd+unix:///vol0?socket=/run/tiercache/nbd.sock'\n"
"\n"
"EXIT STATUS\n"
"    0 the replay ran; 1 it failed (the trace cannot be read: the message names the\n"
"    file, line and value; a device or the connection failed) or was interrupted;\n"
"    2 bad usage.\n";

/* ------------------------------------------------------------------------------------
 * Options.
 */

struct ropts {
	const char *trace;
	int fmt;
	struct trace_opts topts;
	const char *target;
	double speed;
	unsigned qd;
	unsigned max_inflight;
	uint64_t warmup;
	struct mrc_size sizes[MAX_SIZES];
	int nsizes;
	bool mrc;
	uint32_t line_size;
	int write_policy, replacement;
	int fill, admission;       /* -1: the library's default */
	uint32_t nhit;             /* 0: the library's default */
	uint64_t seq_cutoff;
	bool seq_cutoff_set;
	enum replay_devices devices;
	const char *hdd_profile, *ssd_profile;
	uint64_t volume_cap;
	const char *tmpdir;
	uint64_t seed;
	bool json, quiet;
	bool as_reads;             /* every request replayed as a read */
};

static int parse_cache_size(const char *opt, const char *arg, struct mrc_size *cs)
{
	size_t n = strlen(arg);

	memset(cs, 0, sizeof(*cs));
	snprintf(cs->text, sizeof(cs->text), "%s", arg);
	if (n > 1 && arg[n - 1] == '%') {
		char buf[32], *end;
		if (n >= sizeof(buf))
			goto bad;
		memcpy(buf, arg, n - 1);
		buf[n - 1] = '\0';
		errno = 0;
		double v = strtod(buf, &end);
		if (errno || *end || end == buf || !(v > 0) || v > 100000)
			goto bad;
		cs->pct = true;
		cs->fraction = v / 100.0;
		return 0;
	}
	if (cli_size(opt, arg, &cs->bytes))
		return -1;
	if (cs->bytes == 0)
		goto bad;
	return 0;
bad:
	cli_usage("%s: \"%s\" is neither a size (K/M/G/T) nor a percentage of the footprint "
		  "(e.g. 10%%) above 0", opt, arg);
	return -1;
}

static int parse_double(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);

	if (errno || end == arg || *end || !(v >= lo) || !(v <= hi)) {
		cli_usage("%s: \"%s\" is not a number from %g to %g", opt, arg, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* ------------------------------------------------------------------------------------
 * Signals and the progress bar.
 */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
	signal(sig, SIG_DFL);      /* a second one ends the process at once */
}

struct bar {
	bool on;
	const char *label;
	uint64_t last_ns;
	bool drawn;
};

static void bar_draw(void *opaque, uint64_t done, uint64_t total, uint64_t clock_ns)
{
	struct bar *b = opaque;
	uint64_t now = tc_monotonic_ns();

	if (!b->on || (now - b->last_ns < 100000000ull && done < total))
		return;
	b->last_ns = now;
	double f = total ? (double)done / (double)total : 1;
	int width = 30, full = (int)(f * width);
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < full ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r%s [%s] %5.1f%% %" PRIu64 "/%" PRIu64 " requests, clock %.1f s ",
		b->label, bar, f * 100, done, total, (double)clock_ns / 1e9);
	fflush(stderr);
	b->drawn = true;
}

static void bar_clear(struct bar *b)
{
	if (b->drawn) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
		b->drawn = false;
	}
}

/* ------------------------------------------------------------------------------------
 * The command.
 */

static void log_sink(void *opaque, enum tc_log_level level, const char *msg)
{
	(void)opaque;
	if (level == TC_LOG_ERROR)
		cli_err("%s", msg);
	else
		cli_warn("%s", msg);
}

static int parse_args(int argc, char **argv, struct ropts *o)
{
	enum {
		O_FORMAT = 'f', O_QUIET = 'q', O_TVOL = 256, O_LIMIT, O_MAXBAD, O_TARGET, O_SPEED,
		O_QD, O_MAXINF, O_WARMUP, O_CSIZE, O_CSIZES, O_LINE, O_WP, O_REPL, O_SEQ, O_DEVS,
		O_HDD, O_SSD, O_VCAP, O_TMP, O_SEED, O_JSON, O_FILL, O_ADMIT, O_NHIT,
		O_ASREADS,
	};
	static const struct option lo[] = {
		{ "format", required_argument, NULL, O_FORMAT },
		{ "trace-volume", required_argument, NULL, O_TVOL },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "max-bad-lines", required_argument, NULL, O_MAXBAD },
		{ "target", required_argument, NULL, O_TARGET },
		{ "speed", required_argument, NULL, O_SPEED },
		{ "queue-depth", required_argument, NULL, O_QD },
		{ "max-inflight", required_argument, NULL, O_MAXINF },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "cache-size", required_argument, NULL, O_CSIZE },
		{ "cache-sizes", required_argument, NULL, O_CSIZES },
		{ "line-size", required_argument, NULL, O_LINE },
		{ "write-policy", required_argument, NULL, O_WP },
		{ "replacement", required_argument, NULL, O_REPL },
		{ "policy", required_argument, NULL, O_REPL },
		{ "seq-cutoff", required_argument, NULL, O_SEQ },
		{ "fill", required_argument, NULL, O_FILL },
		{ "admission", required_argument, NULL, O_ADMIT },
		{ "nhit", required_argument, NULL, O_NHIT },
		{ "devices", required_argument, NULL, O_DEVS },
		{ "hdd-profile", required_argument, NULL, O_HDD },
		{ "ssd-profile", required_argument, NULL, O_SSD },
		{ "volume-cap", required_argument, NULL, O_VCAP },
		{ "tmpdir", required_argument, NULL, O_TMP },
		{ "seed", required_argument, NULL, O_SEED },
		{ "json", no_argument, NULL, O_JSON },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "as-reads", no_argument, NULL, O_ASREADS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool speed_set = false, size_set = false;
	uint64_t v;
	int c, r;

	o->fmt = -1;
	o->speed = 1.0;
	o->line_size = 64 * 1024;
	o->write_policy = TC_WP_WB;
	o->replacement = TC_REPL_S3FIFO;
	o->fill = o->admission = -1;
	o->devices = REPLAY_DEV_EMU;
	o->volume_cap = 8ull << 40;
	o->seed = 1;
	o->nsizes = 1;
	o->sizes[0] = (struct mrc_size){ .pct = true, .fraction = 0.10, .text = "10%" };

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(replay_help) == 0 ? 1 : -1;
		case O_FORMAT:
			o->fmt = trace_fmt_parse(optarg);
			if (o->fmt < 0)
				return cli_usage("--format: \"%s\" is not one of %s", optarg,
						 trace_fmt_list()), -1;
			break;
		case O_TVOL:
			if (!*optarg)
				return cli_usage("--trace-volume: empty volume id"), -1;
			o->topts.volume = optarg;
			break;
		case O_LIMIT:
			if (cli_uint("--limit", optarg, 1, UINT64_MAX, &o->topts.limit))
				return -1;
			break;
		case O_MAXBAD:
			if (cli_uint("--max-bad-lines", optarg, 0, UINT64_MAX, &o->topts.max_bad))
				return -1;
			break;
		case O_TARGET:
			o->target = optarg;
			break;
		case O_SPEED:
			if (parse_double("--speed", optarg, 1e-6, 1e9, &o->speed))
				return -1;
			speed_set = true;
			break;
		case O_QD:
			if (cli_uint("--queue-depth", optarg, 1, 65536, &v))
				return -1;
			o->qd = (unsigned)v;
			break;
		case O_MAXINF:
			if (cli_uint("--max-inflight", optarg, 1, 1u << 20, &v))
				return -1;
			o->max_inflight = (unsigned)v;
			break;
		case O_WARMUP:
			if (cli_uint("--warmup", optarg, 0, UINT64_MAX, &o->warmup))
				return -1;
			break;
		case O_CSIZE:
			if (o->mrc)
				return cli_usage("--cache-size and --cache-sizes exclude each other"), -1;
			if (parse_cache_size("--cache-size", optarg, &o->sizes[0]))
				return -1;
			o->nsizes = 1;
			size_set = true;
			break;
		case O_CSIZES: {
			if (size_set)
				return cli_usage("--cache-size and --cache-sizes exclude each other"), -1;
			char buf[1024], *save = NULL;
			snprintf(buf, sizeof(buf), "%s", optarg);
			o->nsizes = 0;
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (o->nsizes == MAX_SIZES)
					return cli_usage("--cache-sizes: at most %d sizes", MAX_SIZES), -1;
				if (parse_cache_size("--cache-sizes", t, &o->sizes[o->nsizes]))
					return -1;
				o->nsizes++;
			}
			if (!o->nsizes)
				return cli_usage("--cache-sizes: \"%s\" names no size", optarg), -1;
			o->mrc = true;
			break;
		}
		case O_LINE:
			if (cli_size("--line-size", optarg, &v))
				return -1;
			if (v < 4096 || v > 65536 || (v & (v - 1)))
				return cli_usage("--line-size: \"%s\" is not a power of two from 4K to "
						 "64K", optarg), -1;
			o->line_size = (uint32_t)v;
			break;
		case O_WP:
			r = tc_write_policy_parse(optarg);
			if (r < 0)
				return cli_usage("--write-policy: \"%s\" is not one of wt, wb, wa, pt",
						 optarg), -1;
			o->write_policy = r;
			break;
		case O_REPL:
			r = tc_replacement_parse(optarg);
			if (r < 0)
				return cli_usage("--replacement/--policy: \"%s\" is not s3fifo, "
						 "lru, arc, 2q, sieve, wtinylfu, lirs or wtinylfu-hc", optarg), -1;
			o->replacement = r;
			break;
		case O_FILL:
			r = tc_fill_parse(optarg);
			if (r < 0)
				return cli_usage("--fill: \"%s\" is neither sectors nor line", optarg),
				       -1;
			o->fill = r;
			break;
		case O_ADMIT:
			r = tc_admission_parse(optarg);
			if (r < 0)
				return cli_usage("--admission: \"%s\" is neither always nor nhit",
						 optarg), -1;
			o->admission = r;
			break;
		case O_NHIT:
			if (cli_uint("--nhit", optarg, 1, 255, &v))
				return -1;
			o->nhit = (uint32_t)v;
			break;
		case O_SEQ:
			if (cli_size("--seq-cutoff", optarg, &o->seq_cutoff))
				return -1;
			if (o->seq_cutoff && o->seq_cutoff < 4096)
				return cli_usage("--seq-cutoff: \"%s\" (%" PRIu64 " bytes) is below "
						 "the minimum, 4K (4096 bytes: the smallest cache "
						 "line); 0 turns detection off", optarg,
						 o->seq_cutoff), -1;
			o->seq_cutoff_set = true;
			break;
		case O_DEVS:
			if (!strcmp(optarg, "emu"))
				o->devices = REPLAY_DEV_EMU;
			else if (!strcmp(optarg, "file"))
				o->devices = REPLAY_DEV_FILE;
			else if (!strcmp(optarg, "memory"))
				o->devices = REPLAY_DEV_MEMORY;
			else
				return cli_usage("--devices: \"%s\" is not one of emu, file, memory",
						 optarg), -1;
			break;
		case O_HDD:
			o->hdd_profile = optarg;
			break;
		case O_SSD:
			o->ssd_profile = optarg;
			break;
		case O_VCAP:
			if (cli_size("--volume-cap", optarg, &o->volume_cap))
				return -1;
			if (o->volume_cap < (1u << 20))
				return cli_usage("--volume-cap: \"%s\" is below 1M", optarg), -1;
			break;
		case O_TMP:
			o->tmpdir = optarg;
			break;
		case O_SEED:
			if (cli_uint("--seed", optarg, 0, UINT64_MAX, &o->seed))
				return -1;
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_ASREADS:
			o->as_reads = true;
			break;
		case ':':
			return cli_usage("option %s needs a value", argv[optind - 1]), -1;
		default:
			return cli_bad_option(argv), -1;
		}
	}
	if (optind >= argc)
		return cli_usage("no trace file given"), -1;
	if (optind + 1 < argc)
		return cli_usage("one trace file only; unexpected \"%s\"", argv[optind + 1]), -1;
	o->trace = argv[optind];
	if (o->fmt < 0)
		return cli_usage("--format is required (one of %s)", trace_fmt_list()), -1;
	if (o->qd && speed_set)
		return cli_usage("--speed is for timed replay; --queue-depth replays in a closed "
				 "loop and ignores the timestamps"), -1;
	if (o->target && (size_set || o->mrc))
		return cli_usage("--cache-size%s is for library mode; with --target the server's "
				 "cache is what it is", o->mrc ? "s" : ""), -1;
	return 0;
}

/* Around each run: the progress bar, and the warning when emulated devices are not
 * available. */
struct hooks {
	bool tty, mrc, warned;
	char label[64];
	struct bar bar;
	enum replay_devices devices;   /* of the last run, as it ended */
};

static void hook_before(void *opaque, const struct mrc_size *s, struct replay_opts *ro)
{
	struct hooks *k = opaque;

	snprintf(k->label, sizeof(k->label), "replay%s%s", k->mrc ? " " : "",
		 k->mrc ? s->text : "");
	k->bar = (struct bar){ .on = k->tty, .label = k->label };
	ro->progress = bar_draw;
	ro->progress_opaque = &k->bar;
}

static void hook_after(void *opaque, const struct mrc_size *s, const struct replay_opts *ro,
		       int r)
{
	struct hooks *k = opaque;

	bar_clear(&k->bar);
	if (ro->fallback_file && !k->warned) {
		cli_warn("emulated devices are not available in this build; replaying on "
			 "file devices, which take no time: latencies are 0 and IOPS n/a");
		k->warned = true;
	}
	k->devices = ro->devices;
}

int cmd_replay(int argc, char **argv)
{
	struct ropts o = { 0 };
	struct trace *t = NULL;
	struct replay_map m = { 0 };
	struct replay_nbd *nbd = NULL;
	char err[1024], dir[4096] = "";
	int rc = TC_EXIT_FAIL, r;

	r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? TC_EXIT_OK : TC_EXIT_USAGE;

	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	stop_flag = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	r = trace_load(o.trace, (enum trace_fmt)o.fmt, &o.topts, &t, err, sizeof(err));
	if (r) {
		cli_err("%s", err);
		goto out;
	}
	if (t->bad)
		cli_warn("%" PRIu64 " malformed records skipped; the first: %s", t->bad, t->first_bad);
	if (o.as_reads) {
		for (size_t i = 0; i < t->n; i++)
			t->req[i].write = 0;
		t->reads += t->writes;
		t->read_bytes += t->write_bytes;
		t->writes = t->write_bytes = 0;
	}

	uint64_t capacity = o.volume_cap - TC_BACKING_DATA_OFFSET;
	if (o.target) {
		bool ro = false;
		r = replay_nbd_connect(o.target, &nbd, &capacity, &ro, err, sizeof(err));
		if (r) {
			cli_err("%s", err);
			goto out;
		}
		if (ro && t->writes) {
			cli_err("%s: the export is read-only and the trace has %" PRIu64 " writes",
				o.target, t->writes);
			goto out;
		}
	}
	r = replay_map_build(t, capacity, &m, err, sizeof(err));
	if (r) {
		cli_err("%s", err);
		goto out;
	}
	if (m.folded && !o.json)
		cli_warn("%" PRIu64 " requests lie beyond their region of the %s volume and were "
			 "folded into it", m.folded, o.target ? "target" : "replayed");

	if (!o.target) {
		const char *base = o.tmpdir ? o.tmpdir : getenv("TMPDIR");
		if (!base || !*base)
			base = "/tmp";
		snprintf(dir, sizeof(dir), "%s/tiercache-replay.XXXXXX", base);
		if (!mkdtemp(dir)) {
			cli_err("cannot make a temporary folder in %s: %s", base, strerror(errno));
			dir[0] = '\0';
			goto out;
		}
	}

	struct replay_opts ro;
	replay_opts_default(&ro);
	ro.nbd = nbd;
	ro.devices = o.devices;
	ro.hdd_profile = o.hdd_profile;
	ro.ssd_profile = o.ssd_profile;
	ro.dir = dir;
	ro.cache.line_size = o.line_size;
	ro.cache.replacement = (uint8_t)o.replacement;
	ro.settings.write_policy = (uint8_t)o.write_policy;
	if (o.fill >= 0)
		ro.settings.fill = (uint8_t)o.fill;
	if (o.admission >= 0)
		ro.settings.admission = (uint8_t)o.admission;
	if (o.nhit)
		ro.settings.nhit = o.nhit;
	if (o.seq_cutoff_set)
		ro.settings.seq_cutoff = o.seq_cutoff;
	ro.seed = o.seed;
	ro.log = log_sink;
	ro.queue_depth = o.qd;
	ro.speed = o.speed;
	ro.max_inflight = o.max_inflight;
	ro.warmup = o.warmup;
	ro.stop = &stop_flag;
	struct report_cfg cfg = { .ro = &ro, .target = o.target, .trace_volume = o.topts.volume };
	struct hooks k = { .tty = !o.quiet && cli_isatty_err(), .mrc = o.mrc };
	struct mrc_hooks h = { .before = hook_before, .after = hook_after, .opaque = &k };

	r = mrc_run(t, &m, &cfg, o.sizes, o.nsizes, o.mrc, o.json, &h, err, sizeof(err));
	if (r == -EINTR) {
		cli_err("interrupted%s", o.json ? "" : ": the figures cover what ran");
	} else if (r == -ENOENT && k.devices == REPLAY_DEV_EMU) {
		cli_err("%s (profiles are looked up in $TC_PROFILE_DIR; or give "
			"--hdd-profile/--ssd-profile a path, or --devices file)", err);
	} else if (r) {
		cli_err("%s", err);
	} else {
		rc = TC_EXIT_OK;
	}
out:
	replay_nbd_close(nbd);
	replay_map_free(&m);
	trace_free(t);
	if (dir[0] && rmdir(dir) && errno != ENOENT)
		cli_warn("cannot remove the temporary folder %s: %s", dir, strerror(errno));
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
