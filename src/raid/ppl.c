/* SPDX-License-Identifier: MIT */
/*
 * ppl.c - the partial-parity log of RAID 5 and RAID 6: its entry codec, and recovery
 * at the assembly of a dirty array (docs/raid.md, "The write hole").
 *
 * The design is Linux md's PPL (Documentation/driver-api/md/raid5-ppl.rst,
 * drivers/md/raid5-ppl.c); the code is ours.  Before a partial-stripe update writes
 * its data and parity, the parity of the data it does NOT modify (the partial parity,
 * PP) goes to the log of the stripe's P member.  After a crash the parity of that
 * stripe is recomputed as PP plus the parity of the modified chunks as they are on
 * the members now, whatever mix of old and new they hold; a chunk rebuilt from that
 * parity (a member lost after the crash) then holds what it held before the update,
 * where a stale parity would have corrupted it: the write hole.
 *
 *   member area 4 MiB .. 8 MiB: slot 0 | slot 1 | ... (raid_ppl_slots of them)
 *   slot: header (4 KiB) | PP of P, rows [lo, hi) | PP of Q (RAID 6), rows [lo, hi)
 *
 * md logs P only (RAID 5).  RAID 6 here logs both partial parities, P's and Q's, in
 * one entry on the P member: Q is linear in the data as P is (Q = sum 2^j D_j), so
 * the same recovery recomputes both.  While P's member is lost the entry goes to Q's
 * member instead (Q is then what a lost data chunk is rebuilt from); once P's slot
 * is written again, the first update of a stripe that logged on Q wipes that older
 * entry after its own is durable, so a stale one is never replayed.  With both
 * parity members lost nothing needs recovery (the data are all there).  A full-stripe
 * write logs a header alone (parity 0, no partial parity), as md's PPL does: recovery
 * recomputes that stripe's parity from its data.  Entries never span slots; a slot is
 * reused once the update it logged is durable (raid56.c: after a flush of the members
 * on a whole array, at completion of its FUA writes otherwise).  Per stripe only the
 * entry with the highest sequence number counts; the numbering starts again at every
 * assembly, so no entry may outlive one: the log is wiped at every assembly, after
 * recovery, and on a spare or a replacement as it joins (it may have been a member
 * before).  During a replace, entries and wipes go to both the successor and the old
 * member, and recovery reads the old member's log: it holds everything a log without
 * the replace would.
 *
 * Header (little-endian):
 *   0 magic u32 "TCPL", 4 version u32, 8 uuid[16], 24 seq u64, 32 stripe u64,
 *   40 lo u32, 44 hi u32, 48 parity u32, 52 touched u32, 56 pp_csum u64,
 *   64 ws[32] u32, 192 we[32] u32, 320 in_pp u32, 324..4087 reserved (zero),
 *   4088 XXH64 of 0..4087.
 *
 * A slot of in_pp (its member lost when the update was written, so the new data of
 * its rows lives in the parity alone) has that new data left in the partial parity:
 * recovery then gives the parity that makes those rows read back as the new data,
 * where md's rule ("if a dirty disk of a stripe is lost, no PPL recovery") keeps a
 * parity that a torn update leaves matching nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <xxhash.h>

#include "raid.h"
#include "parity.h"

#define PPL_OFF_WS 64u
#define PPL_OFF_WE (PPL_OFF_WS + 4u * TC_ARRAY_MAX_MEMBERS)
#define PPL_OFF_IN_PP (PPL_OFF_WE + 4u * TC_ARRAY_MAX_MEMBERS)
#define PPL_OFF_RESERVED (PPL_OFF_IN_PP + 4u)
#define PPL_OFF_CSUM (RAID_PPL_HDR - 8u)

#define put32 raid_put32
#define put64 raid_put64
#define get32 raid_get32
#define get64 raid_get64

static bool zero_bytes(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

uint64_t raid_ppl_slot_size(uint32_t chunk, unsigned m)
{
	return RAID_PPL_HDR + (uint64_t)m * chunk;
}

unsigned raid_ppl_slots(uint32_t chunk, unsigned m)
{
	uint64_t n = RAID_PPL_AREA / raid_ppl_slot_size(chunk, m);
	return n > RAID_PPL_MAX_SLOTS ? RAID_PPL_MAX_SLOTS : (unsigned)n;
}

void raid_ppl_encode(const struct raid_ppl_entry *e, void *buf)
{
	uint8_t *b = buf;

	memset(b, 0, RAID_PPL_HDR);
	put32(b + 0, RAID_PPL_MAGIC);
	put32(b + 4, RAID_PPL_VERSION);
	memcpy(b + 8, e->uuid, 16);
	put64(b + 24, e->seq);
	put64(b + 32, e->stripe);
	put32(b + 40, e->lo);
	put32(b + 44, e->hi);
	put32(b + 48, e->parity);
	put32(b + 52, e->touched);
	put64(b + 56, e->pp_csum);
	for (unsigned d = 0; d < TC_ARRAY_MAX_MEMBERS; d++) {
		put32(b + PPL_OFF_WS + 4 * d, e->ws[d]);
		put32(b + PPL_OFF_WE + 4 * d, e->we[d]);
	}
	put32(b + PPL_OFF_IN_PP, e->in_pp);
	put64(b + PPL_OFF_CSUM, XXH64(b, PPL_OFF_CSUM, 0));
}

#define refuse(st, why, whylen, ...) \
	raid_refuse(st, why, whylen, "partial-parity log entry: ", __VA_ARGS__)

enum raid_sb_status raid_ppl_decode(const void *buf, size_t len, const uint8_t *uuid,
				    unsigned k, unsigned m, uint32_t chunk,
				    struct raid_ppl_entry *out, char *why, size_t whylen)
{
	const uint8_t *b = buf;
	struct raid_ppl_entry e;

	enum raid_sb_status hs = raid_check_header(b, len, RAID_PPL_HDR, RAID_PPL_MAGIC,
						   RAID_PPL_VERSION, "partial-parity log entry: ",
						   why, whylen);
	if (hs != RAID_SB_OK)
		return hs;
	memset(&e, 0, sizeof(e));
	memcpy(e.uuid, b + 8, 16);
	e.seq = get64(b + 24);
	e.stripe = get64(b + 32);
	e.lo = get32(b + 40);
	e.hi = get32(b + 44);
	e.parity = get32(b + 48);
	e.touched = get32(b + 52);
	e.pp_csum = get64(b + 56);
	for (unsigned d = 0; d < TC_ARRAY_MAX_MEMBERS; d++) {
		e.ws[d] = get32(b + PPL_OFF_WS + 4 * d);
		e.we[d] = get32(b + PPL_OFF_WE + 4 * d);
	}
	e.in_pp = get32(b + PPL_OFF_IN_PP);
	if (memcmp(e.uuid, uuid, 16))
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "uuid is another array's");
	if (e.seq == 0)
		return refuse(RAID_SB_BAD_FIELD, why, whylen, "seq is 0 (the first entry is 1)");
	if (e.parity != m && e.parity != 0)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "parity %u is neither the array's %u nor 0 (a full-stripe write)",
			      e.parity, m);
	if (e.lo >= e.hi || e.hi > chunk || e.lo % 512 || e.hi % 512)
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "rows %u..%u are not 512-byte rows within the chunk (%u)", e.lo,
			      e.hi, chunk);
	uint32_t all = k >= 32 ? UINT32_MAX : (1u << k) - 1;
	if (!e.touched || (e.touched & ~all))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "touched 0x%08x is not a non-empty set of the %u data slots",
			      e.touched, k);
	for (unsigned d = 0; d < TC_ARRAY_MAX_MEMBERS; d++) {
		bool t = d < k && (e.touched & (1u << d));
		if (t ? e.ws[d] < e.lo || e.ws[d] >= e.we[d] || e.we[d] > e.hi ||
			e.ws[d] % 512 || e.we[d] % 512
		      : e.ws[d] || e.we[d])
			return refuse(RAID_SB_BAD_FIELD, why, whylen,
				      "slot %u rows %u..%u are not %s", d, e.ws[d], e.we[d],
				      t ? "512-byte rows within the entry's" : "zero (not touched)");
	}
	if (e.parity == 0 && (e.lo != 0 || e.hi != chunk || e.touched != all))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "no partial parity (a full-stripe write) but rows %u..%u of slots "
			      "0x%08x, not every chunk whole", e.lo, e.hi, e.touched);
	if ((e.in_pp & ~e.touched) || (e.in_pp && !e.parity))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "in_pp 0x%08x is not a set of the modified slots 0x%08x of an "
			      "entry with partial parity", e.in_pp, e.touched);
	if (!zero_bytes(b + PPL_OFF_RESERVED, PPL_OFF_CSUM - PPL_OFF_RESERVED))
		return refuse(RAID_SB_BAD_FIELD, why, whylen,
			      "reserved bytes %u..%u are not zero", PPL_OFF_RESERVED,
			      PPL_OFF_CSUM - 1);
	if (out)
		*out = e;
	return RAID_SB_OK;
}

/* ---- recovery --------------------------------------------------------------------- */

/* The member of data slot @d (d = k: P, k + 1: Q) in stripe @s: raid56.c's layout. */
static unsigned ppl_member(unsigned n, unsigned m, uint64_t s, unsigned d)
{
	unsigned pd = n - 1 - (unsigned)(s % n), k = n - m;

	if (d == k)
		return pd;
	if (d == k + 1)
		return (pd + 1) % n;
	return (pd + m + d) % n;
}

struct ppl_found {
	struct raid_ppl_entry e;
	unsigned member, slot;
};

/* The devices of recovery: the slots' (@dev), the old members of replaces (@old,
 * NULL: none), the checkpoints of members being rebuilt (@valid). */
struct ppl_devs {
	tc_dev *const *dev, *const *old;
	const uint64_t *valid;
};

/* The device of slot @d of stripe @s when it holds valid data there: present, and
 * (a member being rebuilt) the stripe below its checkpoint, or else the old member
 * of its replace, which takes every write (array.c). */
static tc_dev *ppl_dev(const struct ppl_devs *v, unsigned n, unsigned m, uint32_t chunk,
		       uint64_t s, unsigned d)
{
	unsigned x = ppl_member(n, m, s, d);
	if (v->valid && s * chunk >= v->valid[x])
		return v->old ? v->old[x] : NULL;
	return v->dev[x];
}

/* The device whose log recovery reads for slot @i: for a replace in progress the old
 * member's (raid56.c writes entries to both devices while it runs, so the old
 * member's log holds those and the older ones still in its slots, as a member's log
 * would without a replace; the successor's lacks the entries from before the replace
 * began), else the slot's. */
static tc_dev *ppl_log_dev(const struct ppl_devs *v, unsigned i)
{
	return v->old && v->old[i] ? v->old[i] : v->dev[i];
}

static int ppl_apply(tc_ctx *ctx, const char *name, const struct ppl_devs *v, unsigned n,
		     unsigned m, uint32_t chunk, uint64_t data_offset, struct parity *par,
		     const struct ppl_found *f, const uint8_t *pp, bool *kept)
{
	const struct raid_ppl_entry *e = &f->e;
	unsigned k = n - m;
	size_t len = e->hi - e->lo;
	uint64_t base = data_offset + e->stripe * chunk;
	uint8_t *mem = aligned_alloc(PARITY_ALIGN, len * (2 * m + 1));
	int r = 0;

	if (!mem)
		return -ENOMEM;
	uint8_t *P[2] = { mem, mem + len }, *delta = mem + len * m;
	uint8_t *cur = delta + len;     /* m blocks: the parity on the members now */
	if (e->parity)
		memcpy(mem, pp, len * m);
	else
		memset(mem, 0, len * m);        /* a full-stripe write: parity from the data */
	uint64_t keep_lo = 0, keep_hi = 0;      /* rows of a missing modified chunk */
	for (unsigned d = 0; d < k && !r; d++) {
		if (!(e->touched & (1u << d)) || (e->in_pp & (1u << d)))
			continue;       /* not modified, or its new data in the PP already */
		tc_dev *md = ppl_dev(v, n, m, chunk, e->stripe, d);
		if (!md) {
			if (keep_hi == keep_lo || e->ws[d] < keep_lo)
				keep_lo = e->ws[d];
			if (e->we[d] > keep_hi)
				keep_hi = e->we[d];
			continue;
		}
		memset(delta, 0, len);
		r = tc_dev_io(md, TC_OP_READ, 0, delta + (e->ws[d] - e->lo), e->we[d] - e->ws[d],
			      base + e->ws[d]);
		if (!r)
			parity_update(par, len, d, delta, P);
	}
	*kept = !r && keep_hi > keep_lo;
	if (*kept) {
		for (unsigned p = 0; p < m && !r; p++) {
			tc_dev *pdv = ppl_dev(v, n, m, chunk, e->stripe, k + p);
			if (!pdv)
				continue;
			r = tc_dev_io(pdv, TC_OP_READ, 0, cur + p * len, len, base + e->lo);
			if (!r)
				memcpy(P[p] + (keep_lo - e->lo), cur + p * len + (keep_lo - e->lo),
				       keep_hi - keep_lo);
		}
	}
	/* To the slot's device (rebuilt or valid), and to the old member of a replace,
	 * from which a copy resumed at the checkpoint takes these rows again. */
	for (unsigned p = 0; p < m && !r; p++) {
		unsigned x = ppl_member(n, m, e->stripe, k + p);
		tc_dev *to[2] = { v->dev[x], v->old ? v->old[x] : NULL };
		for (unsigned t = 0; t < 2 && !r; t++)
			if (to[t])
				r = tc_dev_io(to[t], TC_OP_WRITE, TC_IO_FUA, P[p], len, base + e->lo);
	}
	if (r)
		tc_err(ctx, "array %s: partial-parity log: stripe %" PRIu64 ": recovery I/O "
		       "failed: %s", name, e->stripe, strerror(-r));
	free(mem);
	return r;
}

int raid_ppl_recover(tc_ctx *ctx, const char *name, tc_dev *const *dev,
		     tc_dev *const *old, const uint64_t *valid, unsigned n, unsigned m,
		     uint32_t chunk, uint64_t data_offset, const uint8_t *uuid)
{
	unsigned k = n - m, nslots = raid_ppl_slots(chunk, m);
	uint64_t ssize = raid_ppl_slot_size(chunk, m);
	struct ppl_found *found = calloc((size_t)n * nslots + 1, sizeof(*found));
	const struct ppl_devs v = { dev, old, valid };
	uint8_t *area = aligned_alloc(4096, (size_t)ssize * nslots);
	struct parity *par = NULL;
	unsigned nfound = 0, nkept = 0;
	int r = 0, recovered = 0;
	char why[200], kept_list[200] = "";
	size_t used = 0;

	if (!found || !area || !nslots || parity_new(k, m, &par) < 0) {
		r = nslots ? -ENOMEM : -EINVAL;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		tc_dev *ld = ppl_log_dev(&v, i);
		if (!ld)
			continue;
		r = tc_dev_io(ld, TC_OP_READ, 0, area, ssize * nslots, RAID_PPL_OFFSET);
		if (r) {
			tc_err(ctx, "array %s: member %s: reading the partial-parity log failed: %s",
			       name, ld->name, strerror(-r));
			goto out;
		}
		for (unsigned j = 0; j < nslots; j++) {
			const uint8_t *h = area + ssize * j;
			struct raid_ppl_entry e;
			if (get32(h) != RAID_PPL_MAGIC)
				continue;       /* an empty slot */
			if (raid_ppl_decode(h, RAID_PPL_HDR, uuid, k, m, chunk, &e, why,
					    sizeof(why)) != RAID_SB_OK) {
				tc_warn(ctx, "array %s: member %s: log slot %u ignored: %s", name,
					ld->name, j, why);
				continue;
			}
			/* On the stripe's P member, or (RAID 6) its Q member, which logs
			 * while P's is lost. */
			if (e.stripe >= ld->size / chunk ||
			    (ppl_member(n, m, e.stripe, k) != i &&
			     (m < 2 || ppl_member(n, m, e.stripe, k + 1) != i))) {
				tc_warn(ctx, "array %s: member %s: log slot %u ignored: stripe %"
					PRIu64 " has its parity on other members", name,
					ld->name, j, e.stripe);
				continue;
			}
			/* A torn entry: the update it announced never started. */
			if (XXH64(h + RAID_PPL_HDR, (size_t)e.parity * (e.hi - e.lo), 0) != e.pp_csum)
				continue;
			found[nfound++] = (struct ppl_found){ e, i, j };
		}
	}
	/* Per stripe the newest entry; the slots are few, so a quadratic pass is fine. */
	for (unsigned x = 0; x < nfound && !r; x++) {
		bool newest = true;
		for (unsigned y = 0; y < nfound; y++)
			if (y != x && found[y].e.stripe == found[x].e.stripe &&
			    found[y].e.seq > found[x].e.seq)
				newest = false;
		if (!newest)
			continue;
		r = tc_dev_io(ppl_log_dev(&v, found[x].member), TC_OP_READ, 0, area, ssize,
			      RAID_PPL_OFFSET + ssize * found[x].slot);
		bool kept = false;
		if (!r)
			r = ppl_apply(ctx, name, &v, n, m, chunk, data_offset, par, &found[x],
				      area + RAID_PPL_HDR, &kept);
		if (!r)
			recovered++;
		if (kept && nkept < 8)
			used += (size_t)snprintf(kept_list + used, sizeof(kept_list) - used, "%s%"
						 PRIu64, nkept ? ", " : "", found[x].e.stripe);
		nkept += kept;
	}
	/* One line for them all: the log keeps the entries of completed updates too (a
	 * slot is reused only when needed), so most of these were not in flight. */
	if (!r && nkept)
		tc_warn(ctx, "array %s: partial-parity log: %u stripes had a logged write into a "
			"chunk on a member missing or being rebuilt (stripes %s%s): where such a "
			"write was in flight at the crash, its rows keep their parity and what it "
			"left there is lost", name, nkept, kept_list, nkept > 8 ? ", ..." : "");
	if (!r && recovered)
		tc_warn(ctx, "array %s: partial-parity log: parity of %d stripes written at the "
			"crash recomputed", name, recovered);
out:
	parity_free(par);
	free(area);
	free(found);
	return r < 0 ? r : recovered;
}

int raid_ppl_wipe(tc_ctx *ctx, const char *name, tc_dev *const *dev, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!dev[i])
			continue;
		int r = tc_dev_io(dev[i], TC_OP_WRITE_ZEROES, TC_IO_FUA, NULL, RAID_PPL_AREA,
				  RAID_PPL_OFFSET);
		if (r) {
			tc_err(ctx, "array %s: member %s: clearing the partial-parity log failed: "
			       "%s", name, dev[i]->name, strerror(-r));
			return r;
		}
	}
	return 0;
}
