/* SPDX-License-Identifier: MIT */
/*
 * parity.c - P and Q of RAID 5 and RAID 6 stripes, their partial updates and the
 * recovery of lost blocks, with ISA-L (the only file of the project that includes it).
 *
 * Full stripe: xor_gen (P) and pq_gen (P and Q).  The code is the systematic
 * (k + m) x k generator G = [I_k ; 1 ... 1 ; 2^0 ... 2^(k-1)]: row k is P, row k + 1 is
 * Q, the same Q as pq_gen and Linux lib/raid6.
 *
 * Read-modify-write: P and Q are linear in every data block, so a change of D_i by
 * delta changes P by delta and Q by 2^i * delta: ec_encode_data_update with the m x k
 * parity rows of G, whose tables are built once per geometry.
 *
 * Recovery: any k surviving rows of G form an invertible k x k matrix B (a Reed-Solomon
 * property of this generator for m <= 2); a lost block's row of G times B^-1 gives it
 * from the k survivors (gf_invert_matrix, ec_init_tables, ec_encode_data).  The tables
 * of each failure pattern (at most C(k + m, 2) + k + m of them) are built on first use
 * and published with a compare-and-swap, so lookups take no lock.  One lost block that
 * is not Q is the xor of the k survivors among data and P: xor_gen.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "parity.h"

struct parity_decode {
	unsigned nsrc;                  /* k */
	unsigned nlost;
	uint8_t src[PARITY_MAX_SLOTS];  /* surviving slots used, in order */
	uint8_t out[2];                 /* lost slots, in order */
	uint8_t *tables;                /* 32 * k * nlost bytes */
};

struct parity {
	unsigned k, m;
	uint8_t *gen;                   /* (k + m) x k */
	uint8_t *upd_tables;            /* m parity rows, for ec_encode_data_update */
	_Atomic(struct parity_decode *) *decode; /* (k + m)^2, by [first lost][last lost] */
};

int parity_new(unsigned k, unsigned m, struct parity **out)
{
	struct parity *p;
	unsigned n = k + m;

	*out = NULL;
	if (m < 1 || m > 2 || k < 1 || (m == 2 && k < 2) || n > PARITY_MAX_SLOTS)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->k = k;
	p->m = m;
	p->gen = calloc(n, k);
	p->upd_tables = malloc(32u * k * m);
	p->decode = calloc((size_t)n * n, sizeof(*p->decode));
	if (!p->gen || !p->upd_tables || !p->decode) {
		parity_free(p);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < k; i++)
		p->gen[i * k + i] = 1;
	uint8_t coef = 1;
	for (unsigned j = 0; j < k; j++) {
		p->gen[k * k + j] = 1;
		if (m == 2)
			p->gen[(k + 1) * k + j] = coef;
		coef = gf_mul(coef, 2);
	}
	ec_init_tables((int)k, (int)m, p->gen + k * k, p->upd_tables);
	*out = p;
	return 0;
}

void parity_free(struct parity *p)
{
	if (!p)
		return;
	if (p->decode) {
		unsigned n = p->k + p->m;
		for (unsigned i = 0; i < n * n; i++) {
			struct parity_decode *d = atomic_load(&p->decode[i]);
			if (d) {
				free(d->tables);
				free(d);
			}
		}
	}
	free(p->decode);
	free(p->upd_tables);
	free(p->gen);
	free(p);
}

uint8_t parity_gf_mul(uint8_t a, uint8_t b)
{
	return gf_mul(a, b);
}

/* ---- full stripe and partial update ------------------------------------------------ */

void parity_encode(struct parity *p, size_t len, uint8_t *const *blocks)
{
	if (p->m == 1)
		xor_gen((int)p->k + 1, (int)len, (void **)blocks);
	else
		pq_gen((int)p->k + 2, (int)len, (void **)blocks);
}

void parity_update(struct parity *p, size_t len, unsigned i, const uint8_t *delta,
		   uint8_t *const *par)
{
	ec_encode_data_update((int)len, (int)p->k, (int)p->m, (int)i, p->upd_tables,
			      (unsigned char *)delta, (unsigned char **)par);
}

int parity_check(struct parity *p, size_t len, uint8_t *const *blocks)
{
	if (p->m == 1)
		return xor_check((int)p->k + 1, (int)len, (void **)blocks) ? 1 : 0;
	return pq_check((int)p->k + 2, (int)len, (void **)blocks) ? 1 : 0;
}

/* ---- recovery ---------------------------------------------------------------------- */

/* Build the decode tables of the failure pattern @lost (1 or 2 slots). */
static struct parity_decode *parity_decode_build(struct parity *p, uint32_t lost)
{
	unsigned k = p->k, n = k + p->m;
	uint8_t b[PARITY_MAX_SLOTS * PARITY_MAX_SLOTS], inv[PARITY_MAX_SLOTS * PARITY_MAX_SLOTS];
	uint8_t rows[2 * PARITY_MAX_SLOTS];
	struct parity_decode *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	for (unsigned s = 0; s < n && d->nsrc < k; s++)
		if (!(lost & (1u << s)))
			d->src[d->nsrc++] = (uint8_t)s;
	for (unsigned s = 0; s < n; s++)
		if (lost & (1u << s))
			d->out[d->nlost++] = (uint8_t)s;
	for (unsigned r = 0; r < k; r++)
		memcpy(b + r * k, p->gen + d->src[r] * k, k);
	if (gf_invert_matrix(b, inv, (int)k) < 0) {
		free(d);
		return NULL;
	}
	/* Lost row of G times B^-1: coefficients over the k survivors. */
	for (unsigned l = 0; l < d->nlost; l++) {
		const uint8_t *g = p->gen + d->out[l] * k;
		for (unsigned j = 0; j < k; j++) {
			uint8_t c = 0;
			for (unsigned t = 0; t < k; t++)
				c ^= gf_mul(g[t], inv[t * k + j]);
			rows[l * k + j] = c;
		}
	}
	d->tables = malloc(32u * k * d->nlost);
	if (!d->tables) {
		free(d);
		return NULL;
	}
	ec_init_tables((int)k, (int)d->nlost, rows, d->tables);
	return d;
}

int parity_recover(struct parity *p, size_t len, uint8_t *const *blocks, uint32_t lost)
{
	unsigned k = p->k, m = p->m, n = k + m;
	unsigned nlost = (unsigned)__builtin_popcount(lost);

	if (nlost == 0)
		return 0;
	if (nlost > m || (lost >> n))
		return -EINVAL;
	unsigned first = (unsigned)__builtin_ctz(lost);
	unsigned last = 31u - (unsigned)__builtin_clz(lost);

	if (nlost == 1 && first <= k) {
		/* A data block or P: the xor of the others among data and P. */
		void *v[PARITY_MAX_SLOTS];
		unsigned c = 0;
		for (unsigned s = 0; s <= k; s++)
			if (s != first)
				v[c++] = blocks[s];
		v[c++] = blocks[first];
		xor_gen((int)c, (int)len, v);
		return 0;
	}
	_Atomic(struct parity_decode *) *slot = &p->decode[first * n + last];
	struct parity_decode *d = atomic_load_explicit(slot, memory_order_acquire);
	if (!d) {
		struct parity_decode *nd = parity_decode_build(p, lost), *expect = NULL;
		if (!nd)
			return -ENOMEM;
		if (atomic_compare_exchange_strong_explicit(slot, &expect, nd,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			d = nd;
		} else {
			free(nd->tables);
			free(nd);
			d = expect;
		}
	}
	unsigned char *src[PARITY_MAX_SLOTS], *out[2];
	for (unsigned i = 0; i < d->nsrc; i++)
		src[i] = blocks[d->src[i]];
	for (unsigned i = 0; i < d->nlost; i++)
		out[i] = blocks[d->out[i]];
	ec_encode_data((int)len, (int)k, (int)d->nlost, d->tables, src, out);
	return 0;
}
