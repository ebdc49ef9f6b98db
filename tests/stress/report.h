/* SPDX-License-Identifier: MIT */
/*
 * report.h - what a stress program keeps of one run for its failure report: the first
 * failure (later ones are its consequences) and the last messages the library logged.
 * Header-only, shared by stress.c and ioerr.c.
 */
#ifndef TC_STRESS_REPORT_H
#define TC_STRESS_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#define REPORT_LOG_KEEP 12       /* log lines kept: the newest replace the oldest */

struct report {
	bool failed;
	char failure[2048];
	char log[REPORT_LOG_KEEP][256];
	unsigned log_next, log_count;
};

/* report_log - keep one log line (printf format, truncated to 255 bytes). */
static inline void report_log(struct report *rp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void report_log(struct report *rp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rp->log[rp->log_next], sizeof(rp->log[0]), fmt, ap);
	va_end(ap);
	rp->log_next = (rp->log_next + 1) % REPORT_LOG_KEEP;
	if (rp->log_count < REPORT_LOG_KEEP)
		rp->log_count++;
}

/* report_vfail - record the failure @fmt/@ap unless one is recorded already.  Returns
 * true when this one was recorded (the caller may then add to rp->failure). */
static inline bool report_vfail(struct report *rp, const char *fmt, va_list ap)
{
	if (rp->failed)
		return false;
	rp->failed = true;
	vsnprintf(rp->failure, sizeof(rp->failure), fmt, ap);
	return true;
}

/* report_print_log - the kept log lines on stdout, oldest first, as "  log: LINE". */
static inline void report_print_log(const struct report *rp)
{
	for (unsigned i = 0; i < rp->log_count; i++)
		printf("  log: %s\n", rp->log[(rp->log_next + REPORT_LOG_KEEP - rp->log_count +
					       i) % REPORT_LOG_KEEP]);
}

#endif /* TC_STRESS_REPORT_H */
