// Design note: graph-private memory in gpumem's own pool.
//
// Why: a graph captured on a stream replays its copies, fills and kernels on
// every launch, long after the capture, into the blocks it allocated while
// being captured.  If such a block went back to the pool at the captured
// free, a later allocation outside the graph could receive it, and every
// replay would then write into someone else's memory.  The vendor's pools
// solve this with graph memory nodes; gpumem's own pool gives the graph
// blocks that it owns until the graph is destroyed.
//
// How:
//   - An allocation on a capturing stream takes a block for the capture
//     (one Graph per capture sequence).  A block freed earlier in the same
//     capture on the same stream serves it again (stream order inside the
//     graph); else a new block comes from the pool on the Graph's own stream
//     state, which no other stream's pending frees reach, so no work queued
//     outside the graph can still touch it.
//   - A free on a capturing stream hands the block to that capture (the
//     graph frees it at each launch; nobody else gets it until the graph
//     goes).  A free of a graph's block outside its capture is taken as
//     done and changes nothing: the graph still owns it.
//   - At the first block of a capture, a user object is attached to the
//     graph being built (StreamCapture::on_graph_destroyed).  Its destructor,
//     which the runtime runs on its own thread once the graph and all its
//     executable graphs are gone and their launches have finished, only
//     queues the Graph; the next pool call on a gpumem thread (reap) gives
//     back the blocks the caller has freed.  A block the caller still holds
//     stays the caller's, an ordinary block whose free later is an ordinary
//     free: a block returns once both the graph and the caller are done with
//     it, in either order (PyTorch keeps a graph's static outputs past the
//     graph).  An aborted or invalidated capture destroys its graph, so its
//     blocks come back the same way.
// Limits: a runtime without user objects cannot say when a graph goes, so an
// own-pool allocation on a capturing stream is NOT_SUPPORTED there.  Blocks
// freed in a capture are reused only on the stream that freed them (a fork
// to another stream of the capture gets new blocks).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "backends/backend.hpp"
#include "pool/pool.hpp"

namespace gpumem::detail {

struct PoolParts;

class GraphBlocks {
public:
    explicit GraphBlocks(const PoolParts &parts) : parts_(parts) {}
    ~GraphBlocks();
    GraphBlocks(const GraphBlocks &) = delete;
    GraphBlocks &operator=(const GraphBlocks &) = delete;

    // Hot-path tests (one relaxed load each).
    bool any_owned() const { return owned_.load(std::memory_order_relaxed) != 0; }
    static bool any_retired() { return retired_.load(std::memory_order_acquire); }

    // A block of `size` bytes from `pool` for the capture `capture` (active) on `stream`.
    status_t allocate(pool::Pool *pool, size_t size, StreamState &stream, const CaptureState &capture, void **ptr);
    // A free of `ptr` on `stream` (`capture`: what the stream captures).
    // *handled false: neither a graph's block nor a free in a capture (the
    // pool frees it as usual).  *size: the block's size when handled.
    status_t free(void *ptr, StreamState &stream, const CaptureState &capture, bool *handled);
    // Give the blocks of destroyed graphs back to their pools.
    void reap();
    // The capture whose graph owns the block at `base` (0: none).
    uint64_t graph_of(const void *base) const;
    // gpumem_finalize: the pools go, so forget every block (a graph destroyed
    // later finds its Graph orphaned).
    void release_all();

private:
    struct Graph;
    static void on_destroyed(void *graph);
    Graph *graph_for(const CaptureState &capture, int32_t device, status_t *st);
    void give_back(Graph *g);

    const PoolParts &parts_;
    mutable std::mutex mutex_;
    std::unordered_map<uint64_t, Graph *> by_capture_; // graphs not yet destroyed
    std::unordered_map<const void *, Graph *> owner_;  // block -> its graph
    std::atomic<size_t> owned_{0};                     // owner_.size()
    // Set while graphs wait in the retired queue (graph_blocks.cpp; set on the
    // runtime's thread, under the queue's lock).  Inline, constant-initialised
    // and trivially destroyed: every allocation with capture reads it without
    // a call, and the runtime's callback may still set it at exit.
    static inline std::atomic<bool> retired_{false};
};

} // namespace gpumem::detail
