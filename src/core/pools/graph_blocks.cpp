// Graph-private memory in gpumem's own pool (design note: graph_blocks.hpp).
#include "core/pools/graph_blocks.hpp"

#include <algorithm>
#include <vector>

#include "base/log.hpp"
#include "core/capture.hpp"
#include "core/pools/pools.hpp"
#include "core/stats.hpp"
#include "core/streams.hpp"
#include "core/trace.hpp"

namespace gpumem::detail {

struct GraphBlocks::Graph {
    uint64_t capture = 0;
    int32_t device = 0;
    StreamState state; // the graph's own stream, as the pools see it
    struct Block {
        void *ptr;
        pool::Pool *pool;
        size_t size;            // what the block can hold
        StreamState *freed_on;  // set while freed in the capture: reusable on this stream
        uint64_t freed_on_id;
        bool user_holds;        // allocated to the caller and not freed by it (counted as live)
    };
    std::vector<Block> blocks;
    bool orphaned = false; // its runtime is gone: the callback only deletes it
};

namespace {

// Graphs the runtime has destroyed, queued by its thread for the next reap.
// Process-wide and leaked: a graph may outlive gpumem_finalize.
struct Retired {
    std::mutex mutex;
    std::vector<void *> graphs; // non-empty: GraphBlocks::retired_ is set
};
Retired &retired()
{
    static Retired *r = new Retired;
    return *r;
}

} // namespace

// On the runtime's thread: no runtime call, no gpumem lock but the queue's.
void GraphBlocks::on_destroyed(void *graph)
{
    Retired &r = retired();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto *g = static_cast<Graph *>(graph);
    if (g->orphaned) {
        delete g;
        return;
    }
    try {
        r.graphs.push_back(g);
    } catch (...) {
        // No room to queue it: its blocks stay the graph's (a leak, logged at finalize).
        return;
    }
    retired_.store(true, std::memory_order_release);
}

GraphBlocks::~GraphBlocks() { release_all(); }

GraphBlocks::Graph *GraphBlocks::graph_for(const CaptureState &capture, int32_t device, status_t *st)
{
    auto it = by_capture_.find(capture.id);
    if (it != by_capture_.end())
        return it->second;
    auto *g = new Graph;
    g->capture = capture.id;
    g->device = device;
    init_stream_state(g->state, device, nullptr, false);
    by_capture_.emplace(capture.id, g);
    StreamCapture *sc = parts_.capture.runtime();
    *st = sc ? sc->on_graph_destroyed(capture.graph, &GraphBlocks::on_destroyed, g)
             : fail(GPUMEM_ERROR_NOT_SUPPORTED, "this backend has no graphs");
    if (*st != GPUMEM_SUCCESS) {
        by_capture_.erase(capture.id);
        delete g;
        return nullptr;
    }
    return g;
}

status_t GraphBlocks::allocate(pool::Pool *pool, size_t size, StreamState &stream, const CaptureState &capture,
                               void **ptr)
{
    std::lock_guard<std::mutex> lock(mutex_);
    status_t st = GPUMEM_SUCCESS;
    Graph *g = graph_for(capture, stream.device, &st);
    if (!g)
        return fail(st,
                    "cannot allocate %zu bytes from gpumem's own pool on stream %p, which is capturing a graph "
                    "(capture %llu): %s. The pool must know when the graph is destroyed to take its blocks back; "
                    "allocate before the capture, or use the vendor's pool (docs/graphs.md)",
                    size, stream.native, static_cast<unsigned long long>(capture.id), last_error_message());
    // A block this capture freed on this stream: in stream order inside the graph.
    for (Graph::Block &b : g->blocks)
        if (b.freed_on == &stream && b.freed_on_id == stream.id && b.pool == pool && b.size == size) {
            b.freed_on = nullptr;
            b.freed_on_id = 0;
            b.user_holds = true;
            *ptr = b.ptr;
            return GPUMEM_SUCCESS;
        }
    g->blocks.reserve(g->blocks.size() + 1);
    owner_.reserve(owner_.size() + 1);
    {
        capture::Relaxed relaxed(parts_.capture); // a new chunk must not invalidate the capture
        pool::CaptureScope in_capture;  // and nothing goes back by decay inside it
        if (status_t st2 = pool::allocate(pool, size, g->state, ptr))
            return st2;
    }
    g->blocks.push_back(Graph::Block{*ptr, pool, size, nullptr, 0, true});
    owner_.emplace(*ptr, g);
    trace::on_graph_block(g->capture, *ptr, size, g->device);
    owned_.store(owner_.size(), std::memory_order_relaxed);
    return GPUMEM_SUCCESS;
}

status_t GraphBlocks::free(void *ptr, StreamState &stream, const CaptureState &capture, bool *handled)
{
    *handled = false;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = owner_.find(ptr);
    const bool capturing = capture.status == CaptureState::Status::active;
    if (it == owner_.end()) {
        if (!capturing)
            return GPUMEM_SUCCESS;
        // A block made before the capture, freed in it: the graph frees it at
        // every launch, so it becomes the graph's until the graph goes.
        pool::Allocation a;
        if (!pool::lookup(ptr, &a) || a.base != ptr || a.imported)
            return GPUMEM_SUCCESS; // not a live block's base: the pool's free explains
        status_t st = GPUMEM_SUCCESS;
        Graph *g = graph_for(capture, stream.device, &st);
        if (!g)
            return fail(st,
                        "cannot free %p on stream %p, which is capturing a graph (capture %llu): %s. Free it before "
                        "the capture or after the graph's launches (docs/graphs.md)",
                        ptr, stream.native, static_cast<unsigned long long>(capture.id), last_error_message());
        g->blocks.push_back(Graph::Block{ptr, a.pool, a.size, &stream, stream.id, false});
        owner_.emplace(ptr, g);
        trace::on_graph_block(g->capture, ptr, a.size, g->device);
        owned_.store(owner_.size(), std::memory_order_relaxed);
        *handled = true;
        return GPUMEM_SUCCESS;
    }
    Graph *g = it->second;
    auto b = std::find_if(g->blocks.begin(), g->blocks.end(), [&](const Graph::Block &x) { return x.ptr == ptr; });
    if (!b->user_holds)
        return fail(GPUMEM_ERROR_INVALID_POINTER, "%p was already freed (its graph keeps it until the graph is destroyed)",
                    ptr);
    b->user_holds = false;
    // In its own capture: reusable there in this stream's order.  Elsewhere
    // (after the capture): the graph keeps it, and nothing changes.
    if (capturing && capture.id == g->capture) {
        b->freed_on = &stream;
        b->freed_on_id = stream.id;
    }
    *handled = true;
    return GPUMEM_SUCCESS;
}

// The graph's launches have finished.  The blocks the caller has freed go
// back on the graph's own stream, which is then done with (they are free for
// every stream).  A block the caller still holds stays the caller's, an
// ordinary block from now on: PyTorch keeps a graph's static outputs past
// the graph, and frees them later.
void GraphBlocks::give_back(Graph *g)
{
    capture::Relaxed relaxed(parts_.capture);
    uint64_t bytes = 0, blocks = 0;
    for (const Graph::Block &b : g->blocks) {
        owner_.erase(b.ptr);
        if (b.user_holds)
            continue;
        bytes += b.size;
        ++blocks;
        if (pool::deallocate(b.ptr, g->state, nullptr) != GPUMEM_SUCCESS)
            log(LogLevel::warn, "graph block %p (capture %llu) was no longer live", b.ptr,
                static_cast<unsigned long long>(g->capture));
    }
    trace::on_graph_release(g->capture, blocks, bytes, g->device);
    pool::on_completed(g->state, g->state.close_epoch());
    pool::on_stream_destroyed(g->state);
    owned_.store(owner_.size(), std::memory_order_relaxed);
}

void GraphBlocks::reap()
{
    std::vector<void *> graphs;
    {
        Retired &r = retired();
        std::lock_guard<std::mutex> lock(r.mutex);
        graphs.swap(r.graphs);
        retired_.store(false, std::memory_order_release);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (void *p : graphs) {
        auto *g = static_cast<Graph *>(p);
        by_capture_.erase(g->capture);
        give_back(g);
        log(LogLevel::debug, "graph of capture %llu destroyed: %zu block(s) back in their pools",
            static_cast<unsigned long long>(g->capture), g->blocks.size());
        delete g;
    }
}

uint64_t GraphBlocks::graph_of(const void *base) const
{
    if (!any_owned())
        return 0;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = owner_.find(base);
    return it == owner_.end() ? 0 : it->second->capture;
}

void GraphBlocks::release_all()
{
    std::vector<Graph *> live;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto &[capture, g] : by_capture_)
            live.push_back(g);
        by_capture_.clear();
        owner_.clear();
        owned_.store(0, std::memory_order_relaxed);
    }
    // Under the queue's lock, which every destructor callback takes: a graph
    // is either queued already (destroyed, not reaped: deleted here, its
    // blocks go with the pools) or orphaned before its callback can run
    // (which then deletes it, whenever the graph goes).
    Retired &r = retired();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (Graph *g : live) {
        if (std::find(r.graphs.begin(), r.graphs.end(), g) != r.graphs.end())
            continue;
        if (!g->blocks.empty())
            log(LogLevel::warn, "a graph of capture %llu still holds %zu block(s) of gpumem's own pool at "
                "gpumem_finalize; destroy graphs before finalizing", static_cast<unsigned long long>(g->capture),
                g->blocks.size());
        g->orphaned = true;
    }
    for (void *p : r.graphs)
        delete static_cast<Graph *>(p);
    r.graphs.clear();
    retired_.store(false, std::memory_order_release);
}

} // namespace gpumem::detail
