/* SPDX-License-Identifier: MIT */
/*
 * model.h - the reference model the stress and I/O-error tests check tiercache against.
 *
 * The model knows, for every 512-byte sector of every volume, which values that sector may
 * hold: while the engine runs (invariant 1 of docs/architecture.md) and after a power cut
 * and recovery (invariant 2).  It never looks at the engine; the test drives both with the
 * same requests and compares what the engine returns with what the model allows.
 *
 * Per sector the model keeps the ordered history of the writes applied to it since its
 * durability base.  Writes to one sector never overlap in time (the drivers never have
 * two overlapping requests in flight), so a sector's history is totally ordered and at
 * most its last entry is still in flight.  An entry is one of
 *   WRITE(w)   data = tc_model_pattern(volume, sector, w)
 *   ZEROES     a write of zeros (write-zeroes, and the initial content of a volume)
 *   DISCARD    afterwards the sector reads as its previous value or zeros
 * and a write that completed with an error is kept as "this value or the previous one".
 *
 * Invariant 1: a sector with no write in flight reads as its newest entry (for DISCARD
 * and failed writes: or the previous value, recursively).
 * Durability: a FLUSH covers the writes completed before it was submitted; when it
 * completes, each sector's base rises to its newest entry completed before that
 * submission.  A FUA write raises its sectors' base to itself when it completes.
 * Invariant 2: after a crash a sector holds the value of its base entry (resolved as
 * above) or of any later entry, in flight or not.  Nothing else: never garbage, never
 * another sector's or another volume's data.
 *
 * Data pattern: a sector written by write w in volume v at sector s carries a 32-byte
 * header (magic, v, s, w, checksum) and a fill derived from a hash of (v, s, w), so a
 * wrong sector found on a read is named exactly: zeros, garbage, a damaged pattern,
 * write w of another sector or volume, or a stale write of this sector.
 *
 * Memory: one 16-byte slot per sector plus small per-sector vectors that exist only
 * while a sector has history beyond its base; histories are compacted whenever a base
 * rises.  Not thread-safe: the drivers run everything on one thread.
 */
#ifndef TC_STRESS_MODEL_H
#define TC_STRESS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_MODEL_SECTOR 512u
#define TC_MODEL_MAGIC 0x54535354u   /* "TSST" little-endian: a test pattern sector */

/* What a write request did to its sectors. */
enum tc_model_kind {
	TC_MODEL_WRITE = 0,
	TC_MODEL_ZEROES = 1,
	TC_MODEL_DISCARD = 2,
};

/* Which rule a check applies. */
enum tc_model_rule {
	TC_MODEL_CURRENT = 1,     /* invariant 1: the newest value(s) */
	TC_MODEL_RECOVERED = 2,   /* invariant 2: the base value or any later one */
};

struct tc_model;

/* tc_model_new - a model of @nvolumes volumes of @sizes[i] bytes (multiples of 512),
 * all zeros and durable.  Returns NULL on allocation failure. */
struct tc_model *tc_model_new(unsigned nvolumes, const uint64_t *sizes);
void tc_model_free(struct tc_model *m);

unsigned tc_model_volumes(const struct tc_model *m);
uint64_t tc_model_sectors(const struct tc_model *m, unsigned vol);

/* ---- data pattern -------------------------------------------------------------- */

/* tc_model_pattern - the 512 bytes that write @write_id leaves in sector @sector of
 * volume @vol.  Deterministic; write ids start at 1. */
void tc_model_pattern(unsigned vol, uint64_t sector, uint32_t write_id, uint8_t *out);

/* tc_model_fill - the data of a write: @nsectors patterns from @first_sector on. */
void tc_model_fill(unsigned vol, uint64_t first_sector, uint64_t nsectors,
		   uint32_t write_id, uint8_t *buf);

/* What a 512-byte buffer holds, as far as the pattern tells. */
enum tc_found_kind {
	TC_FOUND_ZEROES = 0,
	TC_FOUND_WRITE = 1,       /* an intact pattern: vol, sector, write_id are valid */
	TC_FOUND_DAMAGED = 2,     /* pattern header with a bad checksum or fill (torn) */
	TC_FOUND_GARBAGE = 3,     /* anything else */
};

struct tc_found {
	enum tc_found_kind kind;
	unsigned vol;
	uint64_t sector;
	uint32_t write_id;
};

void tc_model_identify(const uint8_t *buf, struct tc_found *out);

/* ---- driving the model ----------------------------------------------------------- */

/* tc_model_new_write_id - a fresh write id (1, 2, 3, ...). */
uint32_t tc_model_new_write_id(struct tc_model *m);

/*
 * tc_model_submit - a WRITE (@write_id), ZEROES or DISCARD of @nsectors from @first
 * was submitted: append an in-flight entry to each sector.  The caller guarantees that
 * none of these sectors has a write in flight (tc_model_busy()).
 */
void tc_model_submit(struct tc_model *m, unsigned vol, uint64_t first, uint64_t nsectors,
		     enum tc_model_kind kind, uint32_t write_id);

/*
 * tc_model_complete - the request submitted by tc_model_submit() on these sectors
 * completed with @result (0 or -errno).  Success: the entries become completed, and
 * with @fua durable.  Failure: each entry becomes "this value or the previous one".
 */
void tc_model_complete(struct tc_model *m, unsigned vol, uint64_t first, uint64_t nsectors,
		       int result, bool fua);

/* tc_model_busy - whether a sector of [first, first + nsectors) has a write in flight. */
bool tc_model_busy(const struct tc_model *m, unsigned vol, uint64_t first,
		   uint64_t nsectors);

/* A FLUSH of volume @vol: tc_model_flush_begin() at submission returns a token that
 * tc_model_flush_end() takes at completion (nothing happens if @result != 0). */
uint64_t tc_model_flush_begin(struct tc_model *m, unsigned vol);
void tc_model_flush_end(struct tc_model *m, unsigned vol, uint64_t token, int result);

/* ---- checking ----------------------------------------------------------------- */

/*
 * tc_model_check - whether @buf (512 bytes) is a value sector @sector of volume @vol
 * may hold under @rule.  On a mismatch (returns false) and @msg != NULL, writes
 * "found <what>, allowed <list>" into @msg.  TC_MODEL_CURRENT must not be asked for a
 * sector with a write in flight (returns false with a message saying so).
 */
bool tc_model_check(const struct tc_model *m, unsigned vol, uint64_t sector,
		    const uint8_t *buf, enum tc_model_rule rule, char *msg, size_t msglen);

/* tc_model_allowed - the allowed list alone, e.g. "zeros, write 12, write 15". */
void tc_model_allowed(const struct tc_model *m, unsigned vol, uint64_t sector,
		      enum tc_model_rule rule, char *out, size_t outlen);

/*
 * tc_model_collapse - after a restart (crash or clean), when every device was reopened
 * from its file: the sector holds the value in @buf (which tc_model_check() accepted),
 * durably.  Its history becomes that single value, which is also its new base.  Writes
 * in flight at a crash never complete; collapsing drops them too.
 */
void tc_model_collapse(struct tc_model *m, unsigned vol, uint64_t sector,
		       const uint8_t *buf);

/* tc_model_history_len - entries kept for a sector (for tests of the model itself). */
unsigned tc_model_history_len(const struct tc_model *m, unsigned vol, uint64_t sector);

#endif /* TC_STRESS_MODEL_H */
