/* SPDX-License-Identifier: MIT */
/*
 * metadata.c - persistent metadata: superblock writes, the group commit of line
 * metadata, and loading (recovery) at open.
 *
 * Line metadata lives in 4 KiB blocks of 253 entries, each block a shadow pair: a
 * commit writes a changed block to the copy that does not hold its newest valid
 * version, so a torn or lost write leaves the previous version intact.  A commit:
 *
 *   snapshot changed blocks   (under per-block locks; lines dirty in the snapshot get
 *        |                     TC_LINE_DISK_DIRTY, which forbids reusing their slot)
 *   FLUSH cache device        (every data write completed before is durable)
 *   write blocks              (each to its other copy, with the commit's sequence)
 *   FLUSH cache device        (the new mappings are durable)
 *   complete waiters          (FLUSH requests, FUA writes); clear TC_LINE_DISK_DIRTY
 *                              of lines the snapshot recorded clean
 *
 * At most one commit runs; waiters that arrive meanwhile wait for the next one, which
 * starts as soon as the running one ends (group commit: one commit serves them all).
 * docs/format.md states the protocol and why recovery after it is safe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache_priv.h"

static void commit_start_locked(struct tc_cache *c);

int tc_meta_init(struct tc_cache *c)
{
	struct tc_meta *m = &c->meta;
	m->cache = c;
	m->nblocks = (uint32_t)c->sb.md_blocks;
	pthread_mutex_init(&m->lock, NULL);
	m->block_dirty = calloc(m->nblocks, 1);
	m->copy_latest = calloc(m->nblocks, 1);
	m->block_locks = calloc(m->nblocks, sizeof(*m->block_locks));
	m->scratch = calloc(1, sizeof(*m->scratch));
	if (!m->block_dirty || !m->copy_latest || !m->block_locks || !m->scratch)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nblocks; i++)
		pthread_mutex_init(&m->block_locks[i], NULL);
	return 0;
}

void tc_meta_fini(struct tc_cache *c)
{
	struct tc_meta *m = &c->meta;
	if (m->block_locks)
		for (uint32_t i = 0; i < m->nblocks; i++)
			pthread_mutex_destroy(&m->block_locks[i]);
	free(m->block_locks);
	free((void *)m->block_dirty);
	free(m->copy_latest);
	free(m->scratch);
	free(m->snap_blocks);
	free(m->snap_buf);
	free(m->ios);
	free(m->iovs);
	pthread_mutex_destroy(&m->lock);
}

/* ---- superblocks ------------------------------------------------------------------- */

int tc_cache_sb_write(struct tc_cache *c)
{
	if (c->readonly) {
		tc_err(c->ctx, "cache %s: opened read-only for inspection; refusing to write "
		       "its superblock", c->dev->name);
		return -EROFS;
	}
	uint8_t *buf = tc_alloc_buf(TC_CACHE_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	c->sb.generation++;
	pthread_mutex_lock(&c->meta.lock);
	c->sb.commit_seq = c->meta.done_seq;
	pthread_mutex_unlock(&c->meta.lock);
	tc_fmt_cache_sb_encode(&c->sb, buf);
	int target = !c->sb_latest;
	int r = tc_dev_pwrite(c->dev, buf, TC_CACHE_SB_SIZE, (uint64_t)target * TC_CACHE_SB_SIZE, 0);
	if (!r)
		r = tc_dev_flush(c->dev);
	free(buf);
	if (r) {
		tc_cache_error(c, NULL, "superblock write", r);
		return r;
	}
	c->sb_latest = target;
	return 0;
}

int tc_backing_sb_write(struct tc_volume *v)
{
	if (v->cache->readonly) {
		tc_err(v->cache->ctx, "backing %s (volume \"%s\"): opened read-only for "
		       "inspection; refusing to write its superblock", v->backing->name, v->name);
		return -EROFS;
	}
	uint8_t *buf = tc_alloc_buf(TC_BACKING_SB_SIZE);
	if (!buf)
		return -ENOMEM;
	/* A fallback release (request.c) may have written a newer superblock behind this
	 * copy's back: carry its generation and attach generation forward. */
	pthread_mutex_lock(&v->release_lock);
	if (v->release_state == TC_RELEASE_DONE) {
		v->bsb.attach_gen = v->release_attach_gen;
		if (v->bsb.generation < v->release_gen) {
			v->bsb.generation = v->release_gen;
			v->bsb_latest = v->release_target;
		}
	}
	pthread_mutex_unlock(&v->release_lock);
	v->bsb.generation++;
	tc_fmt_backing_sb_encode(&v->bsb, buf);
	int target = !v->bsb_latest;
	int r = tc_dev_pwrite(v->backing, buf, TC_BACKING_SB_SIZE,
			      (uint64_t)target * TC_BACKING_SB_SIZE, 0);
	if (!r)
		r = tc_dev_flush(v->backing);
	free(buf);
	if (r) {
		tc_err(v->cache->ctx, "backing %s (volume \"%s\"): superblock write failed: %s",
		       v->backing->name, v->name, strerror(-r));
		return r;
	}
	v->bsb_latest = target;
	return 0;
}

/* ---- commit ---------------------------------------------------------------------- */

/* Encode block @b from the line array into @buf; lines recorded dirty get
 * TC_LINE_DISK_DIRTY before the snapshot can reach the disk. */
static void snapshot_block(struct tc_cache *c, uint32_t b, uint8_t *buf)
{
	struct tc_md_block *blk = c->meta.scratch;
	uint32_t first = b * TC_MD_ENTRIES_PER_BLOCK;
	uint32_t n = c->nslots - first;
	if (n > TC_MD_ENTRIES_PER_BLOCK)
		n = TC_MD_ENTRIES_PER_BLOCK;
	memset(blk, 0, sizeof(*blk));
	blk->index = b;
	blk->seq = c->meta.seq;
	memcpy(blk->cache_uuid, c->sb.uuid, 16);
	blk->nentries = (uint16_t)n;
	pthread_mutex_lock(&c->meta.block_locks[b]);
	for (uint32_t i = 0; i < n; i++) {
		struct tc_line *l = &c->lines[first + i];
		if (!l->vol || !l->valid)
			continue;   /* free, or mapped with nothing valid: nothing to recover */
		blk->e[i].vol = l->vol;
		blk->e[i].line_no = l->line_no;
		blk->e[i].valid = l->valid;
		blk->e[i].dirty = l->dirty;
		if (l->dirty)
			tc_line_flags_set(l, TC_LINE_DISK_DIRTY);
	}
	pthread_mutex_unlock(&c->meta.block_locks[b]);
	tc_fmt_md_block_encode(blk, buf);
}

/*
 * The steps of a commit (tc_meta.step): each names the I/O round that has just
 * completed; commit_step() runs it, advancing the step first.
 */
enum commit_step_id {
	COMMIT_DATA_FLUSHED = 0,   /* first FLUSH done: write the snapshot's blocks */
	COMMIT_BLOCKS_WRITTEN,     /* block writes done: FLUSH again */
	COMMIT_BLOCKS_FLUSHED,     /* second FLUSH done (or a failure): finish */
	COMMIT_FINISHED,           /* finished early: nothing to write */
};

static void commit_step(struct tc_meta *m);

static void commit_io_done(struct tc_io *io, int result)
{
	struct tc_meta *m = io->private_data;
	if (result < 0)
		__atomic_store_n(&m->err, result, __ATOMIC_RELAXED); /* any failure will do */
	if (__atomic_sub_fetch(&m->pending, 1, __ATOMIC_ACQ_REL) == 0)
		commit_step(m);
}

static void commit_flush(struct tc_meta *m)
{
	struct tc_io *io = &m->ios[m->nsnap];
	memset(io, 0, sizeof(*io));
	io->op = TC_OP_FLUSH;
	io->done = commit_io_done;
	io->private_data = m;
	__atomic_store_n(&m->pending, 1, __ATOMIC_RELEASE);
	tc_dev_submit(m->cache->dev, io);
}

static void commit_write_blocks(struct tc_meta *m)
{
	struct tc_cache *c = m->cache;
	__atomic_store_n(&m->pending, (int)m->nsnap + 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < m->nsnap; i++) {
		uint32_t b = m->snap_blocks[i];
		int copy = !m->copy_latest[b];
		struct tc_io *io = &m->ios[i];
		memset(io, 0, sizeof(*io));
		m->iovs[i].iov_base = m->snap_buf + (size_t)i * TC_MD_BLOCK_SIZE;
		m->iovs[i].iov_len = TC_MD_BLOCK_SIZE;
		io->op = TC_OP_WRITE;
		io->offset = c->sb.md_offset + ((uint64_t)b * 2 + (uint64_t)copy) * TC_MD_BLOCK_SIZE;
		io->length = TC_MD_BLOCK_SIZE;
		io->iov = &m->iovs[i];
		io->iovcnt = 1;
		io->done = commit_io_done;
		io->private_data = m;
		tc_dev_submit(c->dev, io);
	}
	if (__atomic_sub_fetch(&m->pending, 1, __ATOMIC_ACQ_REL) == 0)
		commit_step(m);
}

static void commit_finish(struct tc_meta *m)
{
	struct tc_cache *c = m->cache;
	int err = m->err;
	if (!err) {
		for (uint32_t i = 0; i < m->nsnap; i++) {
			uint32_t b = m->snap_blocks[i];
			m->copy_latest[b] = !m->copy_latest[b];
			/* Lines this commit recorded clean may be reused from now on. */
			struct tc_md_block_disk *d = (struct tc_md_block_disk *)
				(m->snap_buf + (size_t)i * TC_MD_BLOCK_SIZE);
			uint32_t first = b * TC_MD_ENTRIES_PER_BLOCK;
			uint32_t n = c->nslots - first;
			if (n > TC_MD_ENTRIES_PER_BLOCK)
				n = TC_MD_ENTRIES_PER_BLOCK;
			for (uint32_t j = 0; j < n; j++)
				if (!d->e[j].dirty)
					tc_line_flags_clear(&c->lines[first + j], TC_LINE_DISK_DIRTY);
		}
		atomic_fetch_add(&c->commits, 1);
		atomic_fetch_add(&c->commit_blocks, m->nsnap);
	} else {
		/* Nothing is known about the copies we wrote: write them again next time;
		 * TC_LINE_DISK_DIRTY stays set where it was (conservative). */
		for (uint32_t i = 0; i < m->nsnap; i++)
			atomic_store(&m->block_dirty[m->snap_blocks[i]], 1);
		if (!c->readonly)
			tc_cache_error(c, NULL, "metadata commit", err);
	}
	free(m->snap_buf);
	m->snap_buf = NULL;

	pthread_mutex_lock(&m->lock);
	m->done_seq = m->seq;
	m->running = false;
	m->last_commit_ns = tc_ctx_now(c->ctx);
	struct tc_commit_waiter *ready = NULL, **pp = &m->waiters;
	while (*pp) {
		struct tc_commit_waiter *w = *pp;
		if (w->target <= m->done_seq) {
			*pp = w->next;
			w->next = ready;
			ready = w;
		} else {
			pp = &w->next;
		}
	}
	if (m->waiters || m->again) {
		m->again = false;
		commit_start_locked(c);
	}
	pthread_mutex_unlock(&m->lock);
	while (ready) {
		struct tc_commit_waiter *n = ready->next;
		ready->fn(ready, err);
		ready = n;
	}
}

static void commit_step(struct tc_meta *m)
{
	int step = m->step++;
	if (m->err && step < COMMIT_BLOCKS_FLUSHED)
		step = COMMIT_BLOCKS_FLUSHED;   /* stop issuing I/O after a failure */
	switch (step) {
	case COMMIT_DATA_FLUSHED:
		if (m->nsnap) {
			commit_write_blocks(m);
			break;
		}
		m->step = COMMIT_FINISHED;
		commit_finish(m);
		break;
	case COMMIT_BLOCKS_WRITTEN:
		commit_flush(m);
		break;
	case COMMIT_BLOCKS_FLUSHED:
	default:
		commit_finish(m);
		break;
	}
}

static void commit_start_work(struct tc_work *w)
{
	struct tc_meta *m = (struct tc_meta *)((char *)w - offsetof(struct tc_meta, work));
	commit_flush(m);   /* COMMIT_DATA_FLUSHED runs when it completes */
}

static void commit_refuse_work(struct tc_work *w)
{
	struct tc_meta *m = (struct tc_meta *)((char *)w - offsetof(struct tc_meta, work));
	commit_finish(m);
}

/* Snapshot and start a commit (meta lock held, none running). */
static void commit_start_locked(struct tc_cache *c)
{
	struct tc_meta *m = &c->meta;
	m->running = true;
	m->seq++;
	m->err = 0;
	m->step = COMMIT_DATA_FLUSHED;
	if (c->readonly) {
		/* Inspection writes nothing: the commit finishes at once with -EROFS for
		 * its waiters, no I/O starts. */
		m->nsnap = 0;
		m->err = -EROFS;
		m->step = COMMIT_FINISHED;
		m->work.fn = commit_refuse_work;
		tc_ctx_defer(c->ctx, &m->work);
		return;
	}
	uint32_t n = 0;
	for (uint32_t b = 0; b < m->nblocks; b++)
		if (atomic_load_explicit(&m->block_dirty[b], memory_order_relaxed))
			n++;
	if (!m->snap_blocks) {
		m->snap_blocks = malloc(sizeof(uint32_t) * m->nblocks);
		m->ios = calloc(m->nblocks + 1, sizeof(*m->ios));
		m->iovs = calloc(m->nblocks + 1, sizeof(*m->iovs));
	}
	m->snap_buf = n ? tc_alloc_buf((size_t)n * TC_MD_BLOCK_SIZE) : NULL;
	if (!m->snap_blocks || !m->ios || !m->iovs || (n && !m->snap_buf)) {
		m->nsnap = 0;
		m->err = -ENOMEM;
	} else {
		uint32_t k = 0;
		for (uint32_t b = 0; b < m->nblocks && k < n; b++) {
			if (!atomic_exchange(&m->block_dirty[b], 0))
				continue;
			m->snap_blocks[k] = b;
			snapshot_block(c, b, m->snap_buf + (size_t)k * TC_MD_BLOCK_SIZE);
			k++;
		}
		m->nsnap = k;
	}
	/* The I/O starts from a work item: the caller may hold a shard lock's worth of
	 * context, and completions must never run inside submit paths. */
	m->work.fn = commit_start_work;
	tc_ctx_defer(c->ctx, &m->work);
}

void tc_meta_commit_wait(struct tc_cache *c, struct tc_commit_waiter *w)
{
	struct tc_meta *m = &c->meta;
	pthread_mutex_lock(&m->lock);
	w->target = m->seq + 1;
	w->next = m->waiters;
	m->waiters = w;
	if (!m->running)
		commit_start_locked(c);
	else
		m->again = true;
	pthread_mutex_unlock(&m->lock);
}

void tc_meta_kick(struct tc_cache *c)
{
	struct tc_meta *m = &c->meta;
	pthread_mutex_lock(&m->lock);
	if (!m->running)
		commit_start_locked(c);
	else
		m->again = true;
	pthread_mutex_unlock(&m->lock);
}

void tc_meta_tick(struct tc_cache *c, uint64_t now)
{
	struct tc_meta *m = &c->meta;
	uint64_t interval = (uint64_t)c->sb.commit_interval_ms * 1000000ull;
	pthread_mutex_lock(&m->lock);
	if (!m->running && now - m->last_commit_ns >= interval) {
		bool any = false;
		for (uint32_t b = 0; b < m->nblocks && !any; b++)
			any = atomic_load_explicit(&m->block_dirty[b], memory_order_relaxed);
		if (any)
			commit_start_locked(c);
		else
			m->last_commit_ns = now;
	}
	pthread_mutex_unlock(&m->lock);
}


struct sync_commit {
	struct tc_commit_waiter cw;
	struct tc_waiter *w;
};

static void sync_commit_done(struct tc_commit_waiter *cw, int result)
{
	tc_waiter_done(((struct sync_commit *)cw)->w, result);   /* last: on its stack */
}

int tc_meta_commit_sync(struct tc_cache *c)
{
	struct tc_waiter w;
	struct sync_commit s = { .cw.fn = sync_commit_done, .w = &w };
	tc_waiter_init(&w, c->ctx);
	tc_meta_commit_wait(c, &s.cw);
	return tc_waiter_wait(&w);
}

/* ---- load (recovery) ----------------------------------------------------------------- */

/* Seq of the block whose entry claimed a slot (for duplicate resolution). */
static int load_blocks(struct tc_cache *c, uint64_t *slot_seq, bool trust_clean)
{
	struct tc_meta *m = &c->meta;
	const uint32_t chunk = 128;   /* blocks per read: 1 MiB with both copies */
	uint8_t *buf = tc_alloc_buf((size_t)chunk * 2 * TC_MD_BLOCK_SIZE);
	struct tc_md_block *a = calloc(1, sizeof(*a)), *bb = calloc(1, sizeof(*bb));
	int r = 0;
	if (!buf || !a || !bb) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t base = 0; base < m->nblocks && !r; base += chunk) {
		uint32_t n = m->nblocks - base < chunk ? m->nblocks - base : chunk;
		r = tc_dev_pread(c->dev, buf, (uint64_t)n * 2 * TC_MD_BLOCK_SIZE,
				 c->sb.md_offset + (uint64_t)base * 2 * TC_MD_BLOCK_SIZE);
		if (r) {
			tc_err(c->ctx, "cache %s: cannot read metadata blocks %u..%u: %s",
			       c->dev->name, base, base + n - 1, strerror(-r));
			break;
		}
		for (uint32_t j = 0; j < n && !r; j++) {
			uint32_t b = base + j;
			char why0[200], why1[200];
			enum tc_fmt_status s0 = tc_fmt_md_block_decode(buf + (size_t)j * 2 *
				TC_MD_BLOCK_SIZE, b, c->units, a, why0, sizeof(why0));
			enum tc_fmt_status s1 = tc_fmt_md_block_decode(buf + ((size_t)j * 2 + 1) *
				TC_MD_BLOCK_SIZE, b, c->units, bb, why1, sizeof(why1));
			if (s0 == TC_FMT_OK && memcmp(a->cache_uuid, c->sb.uuid, 16)) {
				s0 = TC_FMT_BAD_FIELD;
				snprintf(why0, sizeof(why0), "md block %u: belongs to another cache", b);
			}
			if (s1 == TC_FMT_OK && memcmp(bb->cache_uuid, c->sb.uuid, 16)) {
				s1 = TC_FMT_BAD_FIELD;
				snprintf(why1, sizeof(why1), "md block %u: belongs to another cache", b);
			}
			m->copies_damaged += (s0 != TC_FMT_OK) + (s1 != TC_FMT_OK);
			if (s0 != TC_FMT_OK && s1 != TC_FMT_OK && m->inspecting) {
				tc_err(c->ctx, "cache %s: metadata block %u damaged in both copies "
				       "(copy 0: %s; copy 1: %s)", c->dev->name, b, why0, why1);
				m->blocks_lost++;
				continue;
			}
			struct tc_md_block *use;
			if (s0 == TC_FMT_OK && (s1 != TC_FMT_OK || a->seq >= bb->seq)) {
				use = a;
				m->copy_latest[b] = 0;
			} else if (s1 == TC_FMT_OK) {
				use = bb;
				m->copy_latest[b] = 1;
			} else {
				tc_err(c->ctx, "cache %s: metadata block %u damaged in both copies "
				       "(copy 0: %s; copy 1: %s); the lines it describes may have "
				       "held dirty data, refusing to open", c->dev->name, b, why0, why1);
				r = -EUCLEAN;
				break;
			}
			if (use->seq > m->seq)
				m->seq = use->seq;
			uint32_t first = b * TC_MD_ENTRIES_PER_BLOCK;
			for (uint32_t i = 0; i < use->nentries && first + i < c->nslots; i++) {
				const struct tc_md_entry *e = &use->e[i];
				uint32_t slot = first + i;
				if (!e->vol || !e->valid)
					continue;
				const struct tc_vol_rec *rec = &c->sb.vols[e->vol - 1];
				if (rec->id != e->vol ||
				    (e->line_no << c->line_shift) >= rec->size) {
					/* Rewritten before the id can serve a new volume
					 * (open_drop_orphans). */
					c->recovered_orphans++;
					atomic_store(&m->block_dirty[b], 1);
					if (e->dirty)
						tc_warn(c->ctx, "cache %s: md block %u entry %u: dirty "
							"line %" PRIu64 " of unknown volume %u or beyond "
							"its end; dropped", c->dev->name, b, i, e->line_no,
							e->vol);
					continue;
				}
				uint16_t valid = trust_clean ? e->valid : e->dirty;
				if (valid != e->valid)
					c->recovered_dropped++;
				if (!valid)
					continue;
				uint64_t key = tc_line_key(e->vol, (uint32_t)e->line_no);
				uint32_t other = tc_map_lookup(c, key);
				if (other != TC_SLOT_NONE) {
					/* Two entries for one line: the newer commit wins. */
					if (slot_seq[other] >= use->seq)
						continue;
					tc_map_remove(c, other);
					c->lines[other].vol = 0;
					c->lines[other].valid = c->lines[other].dirty = 0;
					c->lines[other].flags = 0;
				}
				struct tc_line *l = &c->lines[slot];
				l->vol = e->vol;
				l->line_no = (uint32_t)e->line_no;
				l->valid = valid;
				l->dirty = e->dirty;
				l->flags = e->dirty ? TC_LINE_DISK_DIRTY : 0;
				slot_seq[slot] = use->seq;
				tc_map_insert(c, slot);
			}
		}
	}
out:
	free(a);
	free(bb);
	free(buf);
	return r;
}

int tc_meta_load(struct tc_cache *c, bool trust_clean)
{
	uint64_t *slot_seq = calloc(c->nslots, sizeof(uint64_t));
	if (!slot_seq)
		return -ENOMEM;
	int r = load_blocks(c, slot_seq, trust_clean);
	free(slot_seq);
	if (r)
		return r;
	struct tc_meta *m = &c->meta;
	m->done_seq = m->seq;
	m->last_commit_ns = tc_ctx_now(c->ctx);
	/* Resident lines enter the policy; the others form the free list (low slots
	 * handed out first). */
	c->nfree = 0;
	c->free_head = TC_SLOT_NONE;
	uint64_t used = 0, dirty = 0;
	for (uint32_t i = c->nslots; i-- > 0;) {
		struct tc_line *l = &c->lines[i];
		if (!l->vol) {
			tc_slot_free_push(c, i);
			continue;
		}
		used++;
		if (l->dirty)
			dirty++;
	}
	for (uint32_t i = 0; i < c->nslots; i++)
		if (c->lines[i].vol)
			c->repl_ops->insert(c->repl, i);
	atomic_store(&c->used_lines, used);
	atomic_store(&c->dirty_lines, dirty);
	c->recovered_dirty = dirty;
	/* After a crash the metadata on disk still calls dropped clean units valid; the
	 * first commit must rewrite every block, or a later clean shutdown would trust
	 * them again over slots reused since. */
	if (!trust_clean)
		for (uint32_t b = 0; b < m->nblocks; b++)
			atomic_store(&m->block_dirty[b], 1);
	if (!trust_clean)
		tc_info(c->ctx, "cache %s: recovered after a crash: %" PRIu64 " dirty lines kept, "
			"%" PRIu64 " lines with clean data dropped", c->dev->name, dirty,
			c->recovered_dropped);
	return 0;
}
