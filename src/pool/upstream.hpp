// What gpumem's own pool needs from below: a source of large chunks.
// The pool owns this interface; each backend implements it over its memory
// (host memfd arenas, GPU device memory), so the pool knows no backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/error.hpp"

namespace gpumem::detail {

// A source of large chunks for gpumem's own pool (src/pool).  The pool carves
// blocks out of chunks; the upstream only hands chunks out and takes them back.
class PoolUpstream {
public:
    virtual ~PoolUpstream() = default;
    // Chunk sizes are multiples of this (a power of two).
    virtual size_t granularity() const = 0;
    // A new chunk of exactly `size` bytes.  OUT_OF_MEMORY when none is left.
    virtual status_t allocate(size_t size, void **ptr) = 0;
    // Give a whole chunk back (ptr and size as allocated).
    virtual void deallocate(void *ptr, size_t size) = 0;
    // False for an imported pool: it maps another process's memory and cannot grow.
    virtual bool can_allocate() const { return true; }

    // Paged chunks: allocate() only reserves address space, and the pool backs
    // and releases the pages under its blocks one page-run at a time, so the
    // memory under free holes can go back while the chunk stays (fragmentation
    // then costs address space, not memory).  0: chunks are backed whole.
    virtual size_t page_size() const { return 0; }
    // Back [ptr, ptr + size) (whole pages of one chunk, none backed yet).
    virtual status_t back(void *ptr, size_t size);
    // Release the memory under [ptr, ptr + size) (whole backed pages of one
    // chunk, no work pending on them).  The pool unbacks a chunk's pages
    // before it deallocates the chunk.
    virtual void unback(void *ptr, size_t size);
    // 0: pages go back one by one, whatever back() covered.  Else what one
    // back() call backs is one unit that goes back whole (unback covers whole
    // units), and the pool backs at most this many pages per call: a GPU's
    // driver charges per physical allocation, not per page (docs/benchmarks.md).
    virtual size_t unit_pages() const { return 0; }
    // Back [ptr, ptr + size) (pages of one chunk, none backed yet) as `count`
    // units of unit_bytes[i] bytes each, in address order, all or nothing: a
    // GPU upstream maps one physical allocation per unit and sets every
    // device's access over the whole range in one call.  By default one
    // back() per unit.
    virtual status_t back_units(void *ptr, size_t size, const size_t *unit_bytes, size_t count);
    // Up to `bytes` of the physical memory that unback() unmaps may be kept
    // for the next back_units of the same size instead of released (a GPU
    // driver charges ~20 us per create); 0 releases what is kept.  The pool
    // keeps only while it moves pages (gives some back to back others), so
    // kept memory never outlasts one of its calls.
    virtual void keep_handles(size_t) {}
    // The largest unit kept (keep_handles) of at most `most` bytes, or 0:
    // the pool lays a run's units out over kept ones so that a move
    // creates nothing.
    virtual size_t kept_fit(size_t) const { return 0; }
    // Give `device` read-write access to the memory mapped now and to what is
    // mapped later (gpumem_pool_set_access).  Chunks whose memory every device
    // that can reach it already reaches need nothing; paged chunks mapped for
    // their owner alone (RDMA-capable ones) map their pages for `device` too.
    virtual status_t grant_access(int32_t) { return GPUMEM_SUCCESS; }
    // Wait until no queued work touches any chunk (before the pool, going
    // away, unbacks pages whose frees may not have completed).
    virtual void quiesce() {}
    // True when `stream` (a backend stream; nullptr: `device`'s default
    // stream) has no work left to run, asked without waiting: frees still
    // queued on an idle stream have completed, so their pages may go.
    // False when unsure.
    virtual bool stream_idle(void *, int32_t) { return false; }
    // Wait until `stream` (as above) has no work left; false when that failed
    // or cannot be done.
    virtual bool stream_wait(void *, int32_t) { return false; }
    // A mark in `stream`'s order (an event; `mark` one made before, or
    // nullptr for a new one): once it has passed, what was queued before it
    // has finished.  nullptr when none could be recorded.
    virtual void *record_mark(void *, int32_t, void *) { return nullptr; }
    virtual bool mark_passed(void *) { return false; }
    virtual void drop_mark(void *) {}

    // Sharing between processes (POSIX fd).  The defaults say "not shareable".
    virtual bool shareable() const { return false; }
    // A new descriptor for the whole pool memory; the caller closes it.
    virtual status_t export_fd(int *fd);
    // Position of `ptr` inside the shared memory, and the pool's identity.
    virtual status_t offset_of(const void *ptr, uint64_t *offset, uint64_t *pool_id) const;
    // Address in this process of `offset` (after checking `pool_id`), valid for `size` bytes.
    virtual status_t address_of(uint64_t offset, uint64_t size, uint64_t pool_id, void **ptr);
};

} // namespace gpumem::detail
