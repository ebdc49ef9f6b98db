/* SPDX-License-Identifier: MIT */
/*
 * cmd_debug.c - `tiercache debug`: the test hooks of a server started with
 * `tiercache serve --testing`: fail and heal its devices (fault injection), and cut
 * the power of its crash: devices.  A server started without --testing refuses all
 * three, so a production server cannot be made to fail or die through its socket.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ctl.h"
#include "tiercache-test.h"

static const char debug_help[] =
"NAME\n"
"    tiercache debug - test hooks of a server started for testing: fail a device,\n"
"    heal it, cut the power\n"
"\n"
"SYNOPSIS\n"
"    tiercache debug fail DEVICE [--op read|write|flush|all] [--after N]\n"
"                                [--errno NAME|NUMBER] [--transient]\n"
"                                [--control PATH] [--json]\n"
"    tiercache debug heal DEVICE [--control PATH] [--json]\n"
"    tiercache debug power-cut [--control PATH]\n"
"\n"
"DESCRIPTION\n"
"    These work only on a server started with `tiercache serve --testing`, which\n"
"    opens every device under a fault-injection layer; any other server refuses them\n"
"    and nothing changes.\n"
"\n"
"    fail: from now on the server's DEVICE (a cache or a backing, named as it was\n"
"    given to `tiercache serve`: its path, or crash:PATH / emu:PROFILE:PATH, or any\n"
"    path to the same file) fails the requests of the kind --op with the errno\n"
"    --errno, once --after N of them have passed: every one from then on until\n"
"    `debug heal`, or only one with --transient.  A failed request never reaches the\n"
"    device.  The failures reach the engine as the device's own errors would: a\n"
"    backing's fail the clients' requests that need it, a cache's count as cache\n"
"    errors (the volume falls back to the backing after enough of them).  Clients\n"
"    over NBD see the errnos the protocol carries: EIO, ENOSPC, ENOMEM, EINVAL, EPERM\n"
"    (EROFS arrives as EPERM); nbdkit sends the others as EINVAL.  A new `debug\n"
"    fail` replaces the fault armed before.\n"
"\n"
"    heal: DEVICE passes every request through again.  Healing a device without a\n"
"    fault is not an error.  `tiercache status --json` lists every device of the\n"
"    server (\"devices\") with the fault armed on it (\"fault\", null when none) and\n"
"    the requests it failed (\"failed\": by the fault armed now or last;\n"
"    \"failed_total\": since the server started).\n"
"\n"
"    power-cut: the server applies to the files of its crash: devices a random\n"
"    (seeded) subset of the writes not yet flushed, at 4 KiB granularity, as a power\n"
"    failure would, and dies at once without committing anything.  Start the server\n"
"    again on the same devices to see what survived.  Devices that are not crash:\n"
"    devices are left as the kill leaves them.\n"
"\n"
"OPTIONS\n"
"    --op KIND        the requests that fail: read, write (writes, write-zeroes and\n"
"                     discards), flush, or all (default all)\n"
"    --after N        let N more requests of that kind pass first (default 0: the\n"
"                     next one fails)\n"
"    --errno E        the error they fail with: EIO, ENOSPC, ENODEV, ENXIO, ETIMEDOUT,\n"
"                     EROFS, EBUSY, ENOMEM, EAGAIN, EREMOTEIO, EPERM, EINVAL, EILSEQ,\n"
"                     ECANCELED, EOVERFLOW, ENOTSUP (any case), or a number 1..4095\n"
"                     (default EIO)\n"
"    --transient      fail one request only, then pass everything again\n"
"    --control PATH   the server's control socket (default " TC_CONTROL_DEFAULT ")\n"
"    --json           print the device's state as JSON\n"
"\n"
"EXAMPLES\n"
"    tiercache serve --testing /srv/ssd.img /srv/hdd.img\n"
"    tiercache debug fail /srv/hdd.img --op write        # backing writes fail: EIO\n"
"    tiercache debug heal /srv/hdd.img\n"
"    tiercache debug fail /srv/ssd.img --after 1000 --errno ETIMEDOUT --transient\n"
"    tiercache status --json | jq '.devices'\n"
"\n"
"EXIT STATUS\n"
"    0 done (power-cut: the server went down), 1 no server answered, the server\n"
"    refused (not started with --testing, no such device) or, for power-cut, did not\n"
"    go down; nothing changed, 2 bad usage (an unknown --op, a bad --errno or\n"
"    --after).\n";

/* Send @req to the server on @control; returns the result of a good answer (the caller
 * puts *@resp), or NULL after printing why. */
static json_object *call(const char *control, json_object *req, json_object **resp)
{
	*resp = NULL;
	int fd = ctl_connect(control);
	if (fd < 0) {
		cli_err("control socket %s: %s (no server?)", control, strerror(-fd));
		return NULL;
	}
	int err;
	*resp = ctl_call(fd, req, NULL, NULL, &err);
	close(fd);
	if (!*resp) {
		cli_err("control socket %s: %s", control, err == -EPROTO ?
			"the server's answer is not the control protocol" : strerror(-err));
		return NULL;
	}
	return cli_result(*resp);
}

/* "writes", "reads", "flushes", "requests" for a fault kind. */
static const char *kind_plural(const char *op)
{
	return !strcmp(op, "read") ? "reads" : !strcmp(op, "write") ? "writes" :
	       !strcmp(op, "flush") ? "flushes" : "requests";
}

static void print_fail(json_object *res)
{
	json_object *f;
	json_object_object_get_ex(res, "fault", &f);
	if (!f) {   /* a transient fault already spent by the time of the answer */
		printf("device %s (%s): the fault already failed its request and disarmed\n",
		       cli_jstr(res, "device"), cli_jstr(res, "role"));
		return;
	}
	json_object *tr, *en;
	json_object_object_get_ex(f, "transient", &tr);
	json_object_object_get_ex(f, "errno_name", &en);
	char err[32];
	if (en)
		snprintf(err, sizeof(err), "%s", json_object_get_string(en));
	else
		snprintf(err, sizeof(err), "errno %" PRIu64, cli_ju64(f, "errno"));
	uint64_t after = cli_ju64(f, "after");
	const char *kinds = kind_plural(cli_jstr(f, "op"));
	char when[64];
	if (after)
		snprintf(when, sizeof(when), "once %" PRIu64 " more have passed", after);
	else
		snprintf(when, sizeof(when), "from the next one on");
	if (json_object_get_boolean(tr))
		printf("device %s (%s): one of its %s fails with %s %s, then the fault "
		       "disarms\n", cli_jstr(res, "device"), cli_jstr(res, "role"), kinds, err,
		       when);
	else
		printf("device %s (%s): its %s fail with %s %s, until `tiercache debug heal`\n",
		       cli_jstr(res, "device"), cli_jstr(res, "role"), kinds, err, when);
}

static void print_heal(json_object *res)
{
	json_object *was;
	json_object_object_get_ex(res, "was_armed", &was);
	if (json_object_get_boolean(was))
		printf("device %s (%s): healed; the fault failed %" PRIu64 " request(s)\n",
		       cli_jstr(res, "device"), cli_jstr(res, "role"), cli_ju64(res, "failed"));
	else
		printf("device %s (%s): no fault was armed; nothing changed\n",
		       cli_jstr(res, "device"), cli_jstr(res, "role"));
}

static int power_cut(const char *control)
{
	int fd = ctl_connect(control);
	if (fd < 0) {
		cli_err("control socket %s: %s (no server?)", control, strerror(-fd));
		return TC_EXIT_FAIL;
	}
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("power_cut"));
	int err;
	json_object *resp = ctl_call(fd, req, NULL, NULL, &err);
	json_object_put(req);
	close(fd);
	if (resp) {
		json_object *je;
		if (json_object_object_get_ex(resp, "error", &je))
			cli_err("%s", json_object_get_string(je));
		else
			cli_err("the server answered instead of going down");
		json_object_put(resp);
		return TC_EXIT_FAIL;
	}
	if (err != -ECONNRESET) {
		cli_err("control socket %s: %s", control, strerror(-err));
		return TC_EXIT_FAIL;
	}
	printf("power cut: the server is down\n");
	return TC_EXIT_OK;
}

int cmd_debug(int argc, char **argv)
{
	enum { O_OP = 256, O_AFTER, O_ERRNO, O_TRANSIENT, O_JSON };
	static const struct option options[] = {
		{ "control", required_argument, NULL, 'c' },
		{ "op", required_argument, NULL, O_OP },
		{ "after", required_argument, NULL, O_AFTER },
		{ "errno", required_argument, NULL, O_ERRNO },
		{ "transient", no_argument, NULL, O_TRANSIENT },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *control = TC_CONTROL_DEFAULT;
	const char *fault_opt = NULL;   /* the first fault option given, for messages */
	struct tc_fault f = { .op = TC_FAULT_ALL, .error = EIO };
	bool json = false;
	int c, v;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'c': control = optarg; break;
		case O_OP:
			if ((v = tc_fault_op_parse(optarg)) < 0)
				return cli_usage("--op %s: not one of read, write, flush, all", optarg);
			f.op = (enum tc_fault_op)v;
			fault_opt = fault_opt ? fault_opt : "--op";
			break;
		case O_AFTER:
			if (cli_uint("--after", optarg, 0, UINT64_MAX, &f.after))
				return TC_EXIT_USAGE;
			fault_opt = fault_opt ? fault_opt : "--after";
			break;
		case O_ERRNO:
			if ((v = tc_errno_parse(optarg)) < 0)
				return cli_usage("--errno %s: not an errno name (EIO, ENOSPC, ENODEV, "
						 "ETIMEDOUT, EROFS, ...: see --help) or a number "
						 "1..4095", optarg);
			f.error = v;
			fault_opt = fault_opt ? fault_opt : "--errno";
			break;
		case O_TRANSIENT:
			f.transient = true;
			fault_opt = fault_opt ? fault_opt : "--transient";
			break;
		case O_JSON: json = true; break;
		case 'h': return cli_help(debug_help);
		default: return cli_bad_option(argv);
		}
	}
	if (optind >= argc)
		return cli_usage("expected: debug fail DEVICE, debug heal DEVICE or debug "
				 "power-cut");
	const char *sub = argv[optind];
	int nargs = argc - optind - 1;
	if (!strcmp(sub, "power-cut")) {
		if (nargs)
			return cli_usage("debug power-cut: unexpected argument \"%s\"",
					 argv[optind + 1]);
		if (fault_opt || json)
			return cli_usage("debug power-cut: %s is not an option of power-cut",
					 fault_opt ? fault_opt : "--json");
		return power_cut(control);
	}
	bool fail = !strcmp(sub, "fail");
	if (!fail && strcmp(sub, "heal"))
		return cli_usage("debug %s: unknown; expected fail, heal or power-cut", sub);
	if (nargs == 0)
		return cli_usage("debug %s: no DEVICE given", sub);
	if (nargs > 1)
		return cli_usage("debug %s: one DEVICE, not %d", sub, nargs);
	if (!fail && fault_opt)
		return cli_usage("debug heal: %s is an option of debug fail", fault_opt);

	char dev[PATH_MAX + 64];
	if (cli_abs_spec_named(argv[optind + 1], dev, sizeof(dev)))
		return TC_EXIT_FAIL;
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string(fail ? "fault" : "heal"));
	json_object_object_add(req, "device", json_object_new_string(dev));
	if (fail) {
		json_object_object_add(req, "fault_op",
				       json_object_new_string(tc_fault_op_name(f.op)));
		json_object_object_add(req, "after", json_object_new_uint64(f.after));
		json_object_object_add(req, "errno", json_object_new_int(f.error));
		json_object_object_add(req, "transient", json_object_new_boolean(f.transient));
	}
	json_object *resp;
	json_object *res = call(control, req, &resp);
	json_object_put(req);
	if (res) {
		if (json)
			printf("%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PRETTY));
		else if (fail)
			print_fail(res);
		else
			print_heal(res);
	}
	json_object_put(resp);
	return res ? TC_EXIT_OK : TC_EXIT_FAIL;
}
