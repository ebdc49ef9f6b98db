/* SPDX-License-Identifier: MIT */
/*
 * steps.c - the step runner of management operations (steps.h): run a table of named
 * steps in order, and on a failure undo the completed ones in reverse.  One loop for
 * every operation, so that undo order and error propagation are written once instead
 * of once per failure point of each operation.
 */
#include <string.h>
#include "steps.h"

int tc_steps_run(tc_ctx *ctx, const char *what, const struct tc_step *steps, size_t n,
		 void *op)
{
	for (size_t i = 0; i < n; i++) {
		int r = steps[i].run(op);
		if (!r)
			continue;
		tc_log(ctx, TC_LOG_DEBUG, "%s: step \"%s\" failed: %s; undoing %zu completed "
		       "steps", what, steps[i].name, strerror(-r), i);
		while (i-- > 0)
			if (steps[i].undo)
				steps[i].undo(op);
		return r;
	}
	return 0;
}
