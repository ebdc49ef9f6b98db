/* SPDX-License-Identifier: MIT */
/*
 * parity.h - parity maths of the RAID 5 and RAID 6 levels, over ISA-L.
 *
 * A stripe of k data blocks D_0..D_{k-1} and m parity blocks (m = 1: P; m = 2: P and
 * Q), every block @len bytes.  P = xor of D_j; Q = sum of 2^j * D_j over GF(2^8) with
 * the polynomial 0x11d (the convention of Linux lib/raid6 and ISA-L's pq_gen).  Blocks
 * are given as one array of k + m pointers in slot order: data 0..k-1, then P, then Q.
 * Every pointer must be 32-byte aligned (PARITY_ALIGN) and @len a multiple of 32.
 */
#ifndef TC_RAID_PARITY_H
#define TC_RAID_PARITY_H

#include <stddef.h>
#include <stdint.h>

#define PARITY_ALIGN 64u        /* buffer alignment used by the array layer (>= 32) */
#define PARITY_MAX_SLOTS 32u    /* k + m at most */

struct parity;

/* parity_new - the coding state of a k + m geometry (1 <= m <= 2, k >= 2 for m = 2,
 * k + m <= PARITY_MAX_SLOTS).  Returns 0 and *@out, -EINVAL, -ENOMEM. */
int parity_new(unsigned k, unsigned m, struct parity **out);
void parity_free(struct parity *p);

/* parity_encode - compute the parity blocks from the data blocks (full stripe). */
void parity_encode(struct parity *p, size_t len, uint8_t *const *blocks);

/* parity_update - patch the parity blocks @par[0..m-1] in place for a change of data
 * block @i, given @delta = old data xor new data (read-modify-write). */
void parity_update(struct parity *p, size_t len, unsigned i, const uint8_t *delta,
		   uint8_t *const *par);

/*
 * parity_recover - rebuild the blocks whose slot bits are set in @lost (at most m of
 * them, data or parity) from the others.  Returns 0, or -EINVAL when more than m are
 * lost, -ENOMEM (decode tables).  The decode tables of each failure pattern are built
 * once and kept.
 */
int parity_recover(struct parity *p, size_t len, uint8_t *const *blocks, uint32_t lost);

/* parity_check - 0 when the parity blocks match the data, else 1. */
int parity_check(struct parity *p, size_t len, uint8_t *const *blocks);

/* GF(2^8) multiplication (ISA-L's gf_mul), for layers and tests that need a coefficient. */
uint8_t parity_gf_mul(uint8_t a, uint8_t b);

#endif /* TC_RAID_PARITY_H */
