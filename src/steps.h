/* SPDX-License-Identifier: MIT */
/*
 * steps.h - management operations as a table of named steps with one undo path.
 *
 * An operation that changes several things in order (attach a volume, detach it, open
 * a cache ...) is a static table of steps, each a name, what it does and how to undo
 * it.  tc_steps_run() runs them in order; when one fails, it undoes the steps that
 * completed, in reverse, and returns the failure.  A step that fails leaves nothing of
 * its own behind (it cleans up what it started); its undo is for after it succeeded.
 * The steps share one state struct of the operation's own (@op).  Synchronous: each
 * step returns when it is done.
 */
#ifndef TC_STEPS_H
#define TC_STEPS_H

#include <stddef.h>
#include "ctx.h"

/* One step of an operation.  @run returns 0 or a negative errno; @undo may be NULL
 * (nothing to undo). */
struct tc_step {
	const char *name;
	int (*run)(void *op);
	void (*undo)(void *op);
};

/*
 * tc_steps_run - run @n steps of @steps on @op in order.  Returns 0 when all succeeded;
 * otherwise the failing step's negative errno, after running the undo of every step
 * that completed before it, last first.  @what names the operation in the debug log
 * line that reports a failing step.
 */
int tc_steps_run(tc_ctx *ctx, const char *what, const struct tc_step *steps, size_t n,
		 void *op);

/* The number of steps of a static table. */
#define TC_STEPS_N(table) (sizeof(table) / sizeof((table)[0]))

#endif /* TC_STEPS_H */
