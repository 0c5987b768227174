// The one door between the core and gpumem's own pool allocator (src/pool/):
// what the core's streams and events tell the pools about stream order, and
// what the snapshots, the pointer directory and the trace read from them.
// Only this header and the pools service's own files (builtin_pool,
// graph_blocks) name pool::, so a reader of the core sees in one place what
// the allocator needs from it; every function here is inline and costs
// nothing over the call it forwards.
#pragma once

#include <vector>

#include "pool/pool.hpp"

namespace gpumem::detail::own_pools {

// --- Stream order (src/pool/stream_state.hpp, "Design note: stream order") ---

// True once this process made one of gpumem's own pools; until then the thin
// paths skip the stream-order bookkeeping below.
inline bool ordering_in_use() { return pool::ordering_in_use(); }
// Frees queued on `stream` up to `epoch` have run on the device.
inline void stream_passed(StreamState &stream, uint64_t epoch) { pool::on_completed(stream, epoch); }
// The stream is going away: its cached blocks become free for every stream.
inline void stream_destroyed(StreamState &stream) { pool::on_stream_destroyed(stream); }
// gpumem_event_record: the stream and its free epoch now.
inline EventMark event_recorded(StreamState &stream) { return pool::mark(stream); }
// gpumem_stream_wait_event: `waiter` runs after the frees `mark` covers.
inline void stream_waited(StreamState &waiter, const EventMark &mark) { pool::add_dependency(waiter, mark); }

// --- What the rest of the core reads or is told ---

using SegmentView = pool::SegmentView;
using FreeBlockView = pool::FreeBlockView;
// Every segment of every own pool with its free blocks (a moment's picture).
inline void segments(std::vector<SegmentView> *out) { pool::inspect(nullptr, out); }
using PoolView = pool::PoolView;
// Every own pool with its rules, and every segment (a moment's picture).
inline void views(std::vector<PoolView> *pools, std::vector<SegmentView> *segments) { pool::inspect(pools, segments); }
// A chunk's address range goes back to its upstream (the pointer directory
// remembers it was freed); called with the pool's lock held.
inline void on_chunk_released(pool::ReleaseObserver observer) { pool::set_release_observer(observer); }
// A pool grew or gave memory back (the trace); called with the pool's lock held.
inline void on_growth(pool::GrowthObserver observer) { pool::set_growth_observer(observer); }
// A fork child: forget every pool without releasing anything (the parent's).
inline void forget_all() { pool::forget_all(); }

} // namespace gpumem::detail::own_pools
