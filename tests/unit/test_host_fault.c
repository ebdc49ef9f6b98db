/* SPDX-License-Identifier: MIT */
/*
 * test_host_fault.c - fault injection on a host's devices (src/host.c): a host
 * assembled with fault_injection puts every device under a fault layer; tc_host_fault
 * finds a device by its spec or its path; failing the backing's writes fails the
 * clients' writes of a write-through volume with the chosen errno, healing brings them
 * back; failing the cache device reaches the cache engine as cache-device errors; an
 * unknown device is refused with the host's devices listed; a host without fault
 * injection refuses; power cuts still reach crash devices under the layer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tiercache.h"
#include "tiercache-test.h"
#include "helpers.h"

#define MIB (1024u * 1024u)

static int setup(void **state)
{
	t_host_setup(state, "tc-hfault", TC_LOG_ERROR);
	struct t_host_fx *f = *state;
	t_format(f->ctx, f->ssd, 32 * MIB, NULL, 0);
	t_format(f->ctx, f->hdd, 64 * MIB, "db", TC_WP_WT);
	tc_host *h;
	const char *specs[] = { f->ssd };
	assert_int_equal(tc_host_assemble(f->ctx, specs, 1, NULL, &h), 0);
	assert_int_equal(tc_host_attach(h, f->ssd, f->hdd, NULL, 0, NULL), 0);
	assert_int_equal(tc_host_close(h), 0);
	return 0;
}

static int teardown(void **state)
{
	return t_host_teardown(state);
}

static tc_host *assemble(struct t_host_fx *f, const char *ssd, const char *hdd, bool faults)
{
	tc_host *h;
	const char *specs[] = { ssd, hdd };
	struct tc_host_opts o = { .fault_injection = faults };
	assert_int_equal(tc_host_assemble(f->ctx, specs, 2, &o, &h), 0);
	return h;
}

static void test_backing_writes(void **state)
{
	struct t_host_fx *f = *state;
	tc_host *h = assemble(f, f->ssd, f->hdd, true);
	tc_export *e = tc_host_find(h, "db");
	uint8_t *buf = aligned_alloc(4096, 65536);
	struct tc_host_device hd;
	memset(buf, 0x11, 65536);

	assert_true(tc_host_fault_injection(h));
	assert_int_equal(tc_host_device_at(h, 0, &hd), 0);
	assert_string_equal(hd.spec, f->ssd);
	assert_int_equal(hd.kind, TC_PROBE_CACHE);
	assert_true(hd.fault_injection);
	assert_false(hd.fault.armed);
	assert_int_equal(tc_host_device_at(h, 1, &hd), 0);
	assert_string_equal(hd.spec, f->hdd);
	assert_int_equal(hd.kind, TC_PROBE_BACKING);
	assert_int_equal(tc_host_device_at(h, 2, &hd), -ENOENT);

	/* The volume is cached and works; its data is read back. */
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, 65536, 0), 0);
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, buf, 65536, 0), 0);
	assert_int_equal(buf[0], 0x11);

	/* The backing's writes fail: a write-through client write fails with ENOSPC. */
	struct tc_fault wf = { .op = TC_FAULT_WRITE, .error = ENOSPC };
	assert_int_equal(tc_host_fault(h, f->hdd, &wf, &hd), 0);
	assert_true(hd.fault.armed);
	assert_int_equal(hd.fault.fault.op, TC_FAULT_WRITE);
	assert_int_equal(hd.fault.fault.error, ENOSPC);
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, 65536, 65536), -ENOSPC);
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, 65536, 65536), -ENOSPC);
	/* Reads of cached data go on. */
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, buf, 65536, 0), 0);
	assert_int_equal(tc_host_device_at(h, 1, &hd), 0);
	assert_true(hd.fault.failed >= 2);

	/* Healed: writes succeed again and read back. */
	assert_int_equal(tc_host_heal(h, f->hdd, &hd), 1);
	assert_false(hd.fault.armed);
	assert_int_equal(tc_host_heal(h, f->hdd, NULL), 0);
	memset(buf, 0x22, 65536);
	assert_int_equal(tc_export_io(e, TC_OP_WRITE, 0, buf, 65536, 65536), 0);
	memset(buf, 0, 65536);
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, buf, 65536, 65536), 0);
	assert_int_equal(buf[0], 0x22);
	assert_int_equal(buf[65535], 0x22);

	free(buf);
	assert_int_equal(tc_host_close(h), 0);
}

/* Cache-device errors reach the engine: counted as the volume's cache errors. */
static void test_cache_errors(void **state)
{
	struct t_host_fx *f = *state;
	tc_host *h = assemble(f, f->ssd, f->hdd, true);
	tc_export *e = tc_host_find(h, "db");
	struct tc_export_info info;
	struct tc_volume_stats st;
	uint8_t *buf = aligned_alloc(4096, 65536);
	memset(buf, 0x33, 65536);

	tc_export_info(e, &info);
	assert_non_null(info.volume);
	tc_volume_stats(info.volume, &st);
	assert_int_equal(st.cache_errors, 0);
	struct tc_fault wf = { .op = TC_FAULT_WRITE, .error = EIO };
	assert_int_equal(tc_host_fault(h, f->ssd, &wf, NULL), 0);
	for (int i = 0; i < 4; i++)
		(void)tc_export_io(e, TC_OP_WRITE, 0, buf, 65536, (uint64_t)i * 65536);
	tc_volume_stats(info.volume, &st);
	assert_true(st.cache_errors >= 1);
	struct tc_host_device hd;
	assert_int_equal(tc_host_device_at(h, 0, &hd), 0);
	assert_true(hd.fault.failed >= st.cache_errors);
	/* What the cache could not hold went to the backing: it reads back. */
	assert_int_equal(tc_host_heal(h, f->ssd, NULL), 1);
	memset(buf, 0, 65536);
	assert_int_equal(tc_export_io(e, TC_OP_READ, 0, buf, 65536, 3 * 65536), 0);
	assert_int_equal(buf[100], 0x33);
	free(buf);
	assert_int_equal(tc_host_close(h), 0);
}

static void test_names_and_refusals(void **state)
{
	struct t_host_fx *f = *state;
	tc_host *h = assemble(f, f->crash_ssd, f->hdd, true);
	struct tc_fault good = { .op = TC_FAULT_READ, .after = 5, .error = EIO };
	struct tc_fault bad = { .op = TC_FAULT_READ, .error = 0 };
	struct tc_host_device hd;

	/* By spec, and by the path behind "crash:". */
	assert_int_equal(tc_host_fault(h, f->crash_ssd, &good, &hd), 0);
	assert_string_equal(hd.spec, f->crash_ssd);
	assert_int_equal(hd.fault.fault.after, 5);
	assert_int_equal(tc_host_heal(h, f->ssd, &hd), 1);
	assert_string_equal(hd.spec, f->crash_ssd);

	/* Unknown: -ENOENT, and the message lists the host's devices. */
	f->log.last[0] = 0;
	assert_int_equal(tc_host_fault(h, "/nonexistent/disk", &good, NULL), -ENOENT);
	assert_non_null(strstr(f->log.last, "/nonexistent/disk"));
	assert_non_null(strstr(f->log.last, f->crash_ssd));
	assert_non_null(strstr(f->log.last, f->hdd));
	assert_int_equal(tc_host_heal(h, "/nonexistent/disk", NULL), -ENOENT);

	/* A bad fault changes nothing. */
	assert_int_equal(tc_host_fault(h, f->hdd, &good, NULL), 0);
	assert_int_equal(tc_host_fault(h, f->hdd, &bad, NULL), -EINVAL);
	assert_int_equal(tc_host_device_at(h, 1, &hd), 0);
	assert_true(hd.fault.armed);
	assert_int_equal(hd.fault.fault.error, EIO);
	assert_int_equal(hd.fault.fault.after, 5);

	/* Power cuts reach the crash device under its fault layer. */
	assert_int_equal(tc_host_power_cut(h), 1);
	(void)tc_host_close(h);        /* the cut cache cannot commit: an error is right */

	/* Without fault injection: refused, devices as they were. */
	h = assemble(f, f->ssd, f->hdd, false);
	assert_false(tc_host_fault_injection(h));
	assert_int_equal(tc_host_fault(h, f->hdd, &good, NULL), -EPERM);
	assert_non_null(strstr(f->log.last, "without fault injection"));
	assert_int_equal(tc_host_heal(h, f->hdd, NULL), -EPERM);
	assert_int_equal(tc_host_device_at(h, 1, &hd), 0);
	assert_false(hd.fault_injection);
	assert_false(hd.fault.armed);
	assert_int_equal(tc_host_close(h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backing_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_and_refusals, setup, teardown),
	};
	return cmocka_run_group_tests_name("host fault injection", tests, NULL, NULL) ? 1 : 0;
}
