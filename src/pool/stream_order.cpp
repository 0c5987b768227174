// Stream order: when a freed block may serve another stream.  What the core
// tells the pool about streams and events (completions, synchronisations,
// event marks and waits, streams going away), and the pool's side of it: the
// requester's dependencies, the sweep that untags completed frees, and the
// marks by which a paged pool learns which queued frees completed.  See
// "Design note: stream order in gpumem's own pool", stream_state.hpp.
#include <algorithm>
#include <new>

#include "pool/pool_internal.hpp"
#include "pool/registry.hpp"

namespace gpumem::detail::pool {

std::atomic<uint64_t> g_completion_gen{1};

namespace {

bool freed_on(const Block &b, uint64_t stream_id) { return b.tag_id == stream_id; }

} // namespace

// ---------------------------------------------------------------------------
// Streams and events

void on_completed(StreamState &stream, uint64_t epoch)
{
    uint64_t seen = stream.completed_epoch.load(std::memory_order_relaxed);
    while (seen < epoch)
        if (stream.completed_epoch.compare_exchange_weak(seen, epoch, std::memory_order_acq_rel)) {
            g_completion_gen.fetch_add(1, std::memory_order_acq_rel);
            break;
        }
}

void apply_release_thresholds(int32_t device)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mu);
    for (Pool *p : r.pools) {
        if (p->imported || (device >= 0 && p->device != device))
            continue;
        std::lock_guard<std::mutex> lock(p->mu);
        // What completed before this synchronisation is free for every stream now.
        for (StreamCache *c : p->caches) {
            std::lock_guard<SpinLock> cache_lock(c->mu);
            c->released_epoch = completed_epoch(*c->stream);
        }
        p->sweep(true);
        if (p->reserved > p->release_threshold) {
            // The contract's release wins over strict mode's quarantine:
            // memory given back is not reused, which is what the quarantine guards.
            p->release_quarantined(0);
            p->flush_caches(nullptr);
            p->release_free_chunks(p->release_threshold);
            p->reset_budget();
        }
    }
}

EventMark mark(StreamState &stream)
{
    return EventMark{&stream, stream.id, stream.close_epoch()};
}

void add_dependency(StreamState &waiter, const EventMark &mark)
{
    if (!mark.stream || mark.stream_id == waiter.id)
        return;
    std::lock_guard<std::mutex> lock(waiter.deps_mutex);
    for (auto &dep : waiter.deps) {
        if (dep.first == mark.stream_id) {
            dep.second = std::max(dep.second, mark.epoch);
            return;
        }
    }
    try {
        waiter.deps.emplace_back(mark.stream_id, mark.epoch);
    } catch (const std::bad_alloc &) {
        // Forgetting an ordering only means less reuse.
    }
}

void on_stream_destroyed(StreamState &stream)
{
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> registry_lock(r.mu);
        for (Pool *p : r.pools) {
            std::lock_guard<std::mutex> lock(p->mu);
            // The stream's work has finished: its frees are safe for everyone.
            for (Pool::Quarantined &q : p->quarantine)
                if (q.stream == &stream && q.stream_id == stream.id)
                    q.stream = nullptr;
            if (StreamCache *c = find_cache(p, stream))
                detach_cache(*p, c, true);
            p->untag_stream(stream.id);
            p->drop_marks(stream.id);
        }
    }
    {
        std::lock_guard<std::mutex> lock(stream.caches_mutex);
        stream.caches.clear();
    }
    {
        std::lock_guard<std::mutex> lock(stream.deps_mutex);
        stream.deps.clear();
    }
    stream.free_epoch.store(0, std::memory_order_release);
    stream.completed_epoch.store(0, std::memory_order_release);
    g_completion_gen.fetch_add(1, std::memory_order_acq_rel);
}

// ---------------------------------------------------------------------------
// The pool's side (Pool::mu held)

Requester Pool::requester(StreamState &s)
{
    Requester r{&s, s.id, nullptr};
    if (follow_event_dependencies) {
        std::lock_guard<std::mutex> lock(s.deps_mutex);
        if (!s.deps.empty()) {
            try {
                deps.assign(s.deps.begin(), s.deps.end());
                r.deps = &deps;
            } catch (const std::bad_alloc &) {
                // Follow none: that only ever means less reuse.
            }
        }
    }
    return r;
}

void Pool::untag_where(bool (*pred)(const Block &, uint64_t), uint64_t arg)
{
    scratch.clear();
    try {
        index.for_each([&](Block *b) {
            if (b->tag_stream && pred(*b, arg))
                scratch.push_back(b);
        });
    } catch (const std::bad_alloc &) {
        // Untag what was collected; the rest waits for the next sweep.
    }
    for (Block *b : scratch) {
        // Adjacent tagged blocks always have different streams, so no block
        // collected here is merged away before its turn; check anyway.
        if (b->state.load(std::memory_order_relaxed) != kFree || !b->tag_stream)
            continue;
        index.remove(b);
        clear_tag(b);
        insert_coalesced(b);
    }
    scratch.clear();
}

void Pool::sweep(bool synchronised)
{
    if (!index.tagged())
        return;
    uint64_t gen = g_completion_gen.load(std::memory_order_acquire);
    if (!synchronised && (!allow_opportunistic || gen == swept_gen))
        return;
    swept_gen = gen;
    untag_where(free_completed, 0);
}

void Pool::untag_stream(uint64_t stream_id)
{
    if (index.tagged())
        untag_where(freed_on, stream_id);
}

// Frees queued on a GPU stream complete, as far as the pool knows, only when
// the program synchronises through gpumem, and a framework that synchronises
// through the vendor never does: without asking, a paged pool could give no
// page back (see "Design note: stream order", stream_state.hpp).  Asking costs a query per stream (and an event record on a busy
// one), paid on the slow path only: when the pool is over its budget, and
// every sixteenth of its use freed (find_fit).  A busy stream is waited for
// only when the pool would otherwise grow far past its budget, or is out of
// memory (a framework's stream always is busy, and a wait stalls its
// pipeline): else the mark recorded now tells the next time.  Under mu, a tagged
// block's stream is alive (a destroyed stream's blocks are untagged, and its
// marks dropped, under mu first).
void Pool::learn_completed_frees(bool wait)
{
    constexpr size_t kMaxAsked = 8;
    StreamState *asked[kMaxAsked];
    size_t n = 0;
    index.for_each([&](Block *b) {
        StreamState *s = b->tag_stream;
        if (!s || n == kMaxAsked || s->id != b->tag_id || free_completed(*b, 0))
            return;
        for (size_t i = 0; i < n; ++i)
            if (asked[i] == s)
                return;
        asked[n++] = s;
    });
    for (size_t i = 0; i < n; ++i) {
        StreamState &s = *asked[i];
        StreamMark *m = nullptr;
        for (StreamMark &x : marks)
            if (x.stream == &s && x.stream_id == s.id)
                m = &x;
        if (m && m->pending && upstream->mark_passed(m->mark)) {
            on_completed(s, m->epoch);
            m->pending = false;
        }
        const uint64_t epoch = s.close_epoch(); // before asking: the frees the answer covers
        if (upstream->stream_idle(s.native, s.device) || (wait && upstream->stream_wait(s.native, s.device))) {
            on_completed(s, epoch);
            continue;
        }
        if (m && m->pending)
            continue; // the older mark passes sooner
        void *mark = upstream->record_mark(s.native, s.device, m ? m->mark : nullptr);
        if (!mark) {
            if (m) { // record_mark dropped it
                m->mark = nullptr;
                m->pending = false;
            }
            continue;
        }
        try {
            if (!m)
                m = &marks.emplace_back(StreamMark{&s, s.id, 0, mark, false});
        } catch (const std::bad_alloc &) {
            upstream->drop_mark(mark); // knowing less only means giving back less
            continue;
        }
        m->mark = mark;
        m->epoch = epoch;
        m->pending = true;
    }
}

void Pool::drop_marks(uint64_t stream_id)
{
    for (size_t i = 0; i < marks.size();) {
        if (stream_id && marks[i].stream_id != stream_id) {
            ++i;
            continue;
        }
        if (marks[i].mark)
            upstream->drop_mark(marks[i].mark);
        marks[i] = marks.back();
        marks.pop_back();
    }
}

} // namespace gpumem::detail::pool
