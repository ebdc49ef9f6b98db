/* SPDX-License-Identifier: MIT */
/*
 * trace.h - block trace readers: the formats of traces/README.md, plain or
 * compressed (see rstream.h), loaded into one array of requests for replay.
 *
 * Formats (--format names; a sector is 512 bytes, binary formats are little-endian):
 *   vscsi            VSCSI v1 (32-byte records) and v2 (40-byte), told apart by the
 *                    version field (ver >> 8 == 1 or 2) of the first record
 *   libcachesim-csv  "version,time,op,size,lbn": seconds, hex SCSI opcode, bytes, sectors
 *   msr              MSR Cambridge "Timestamp,Hostname,DiskNumber,Type,Offset,Size,
 *                    ResponseTime": FILETIME (100 ns ticks), Read/Write, bytes
 *   systor           SYSTOR'17 "Timestamp,Response,IOType,LUN,Offset,Size": epoch seconds
 *                    with fraction, R/W, bytes; times unsorted (sorted at load)
 *   tencent          Tencent CBS "Timestamp,Offset,Size,IOType,VolumeID": seconds,
 *                    sectors, 0 read / 1 write
 *   mqsim            "arrival_time device lba size type": ns, sectors, 0 write / 1 read
 *   alibaba          "device_id,opcode,offset,length,timestamp": R/W, bytes, microseconds
 *
 * Each request belongs to a source volume: the trace's own name for it (MSR
 * "HOST_DISK" as in the file names hm_0.csv; SYSTOR LUN; Tencent VolumeID; MQSim
 * device; Alibaba device_id; "0" for the single-volume formats).
 *
 * Normalisation at load: offsets are aligned down and ends up to 512 bytes (counted as
 * unaligned), zero-length requests and operations other than read and write are
 * skipped (counted), lengths above TRACE_MAX_LEN are cut (counted), times become ns
 * from the earliest request.  Text formats accept a header line (a first line whose
 * first field is not a number), blank lines and lines starting with '#'.
 */
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rstream.h"

enum trace_fmt {
	TRACE_VSCSI = 0,
	TRACE_LCS_CSV = 1,
	TRACE_MSR = 2,
	TRACE_SYSTOR = 3,
	TRACE_TENCENT = 4,
	TRACE_MQSIM = 5,
	TRACE_ALIBABA = 6,
	TRACE__COUNT
};

#define TRACE_MAX_LEN (32u << 20)   /* longest request kept, bytes (NBD's limit) */

/* One request, normalised.  32 bytes. */
struct trace_req {
	uint64_t t_ns;          /* arrival, ns after the trace's earliest request */
	uint64_t offset;        /* bytes into its source volume, multiple of 512 */
	uint32_t length;        /* bytes, multiple of 512, 512..TRACE_MAX_LEN */
	uint32_t vol;           /* index into trace.vols[] */
	uint8_t write;          /* 1 write, 0 read */
};

/* A source volume of the trace. */
struct trace_vol {
	char *name;             /* the trace's id for it */
	uint64_t records;       /* read/write records of it in the file (kept or not) */
	uint64_t kept;          /* requests of it in trace.req[] */
	uint64_t max_end;       /* bytes: highest end of a kept request */
};

struct trace_opts {
	const char *volume;     /* keep only the source volume of this name; NULL: all */
	uint64_t limit;         /* keep the first N requests in file order; 0: all */
	uint64_t max_bad;       /* malformed records skipped before failing; 0: the first
				 * one fails the load */
};

struct trace {
	char *path;
	enum trace_fmt fmt;
	enum rstream_comp comp;
	int vscsi_version;      /* 1 or 2 (vscsi only) */
	struct trace_req *req;
	size_t n;
	struct trace_vol *vols;
	uint32_t nvols;
	/* What loading found. */
	uint64_t records;       /* records (binary) or non-blank data lines (text) read */
	uint64_t skipped_op;    /* neither read nor write */
	uint64_t skipped_empty; /* zero length */
	uint64_t skipped_volume;/* another source volume than opts.volume */
	uint64_t bad;           /* malformed records skipped (opts.max_bad) */
	char first_bad[256];    /* "FILE:LINE: why" of the first one, "" if none */
	uint64_t unaligned;     /* start or end moved to a 512-byte boundary */
	uint64_t clipped;       /* longer than TRACE_MAX_LEN, cut */
	uint64_t out_of_order;  /* a time lower than the record before it */
	bool sorted;            /* req[] was sorted by time (systor, always) */
	bool limited;           /* reading stopped at opts.limit */
	uint64_t reads, writes, read_bytes, write_bytes;
	uint64_t duration_ns;   /* last arrival (after sorting) */
	uint64_t t0_ns;         /* the earliest request's time in the format's clock, ns
				 * (FILETIME, Unix epoch, or the trace's own zero) */
};

/* trace_fmt_parse - the format named @name (a --format name), or -EINVAL. */
int trace_fmt_parse(const char *name);
const char *trace_fmt_name(enum trace_fmt f);
/* trace_fmt_list - "vscsi, libcachesim-csv, ..." for messages. */
const char *trace_fmt_list(void);

/*
 * trace_load - read the trace @path ("-": standard input) in format @fmt.
 * @o: NULL for defaults.  Returns 0 and *@out (free with trace_free), or a negative
 * errno with a message in @err (@errlen bytes) naming the file, the line or record
 * number and the value at fault: -ENOENT/-EACCES/-EIO (file), -EBADMSG (corrupt
 * compressed data), -EINVAL (a malformed record beyond opts.max_bad), -ENODATA (no
 * read or write request, or none of opts.volume: the message lists the volumes),
 * -ENOMEM.
 */
int trace_load(const char *path, enum trace_fmt fmt, const struct trace_opts *o,
		  struct trace **out, char *err, size_t errlen);

void trace_free(struct trace *t);

#endif /* TRACE_H */
