// Paging: a paged pool backs only the pages under its blocks.  The page and
// unit bits of a chunk, backing pages before a block is carved (back_for),
// giving back the pages under free blocks (unback_free), and the deferred
// decommit: the budget, its decay and the purge.  Every function here runs
// with Pool::mu held.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <new>

#include "base/error.hpp"
#include "base/log.hpp"
#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

// Design note: paging of pool chunks
//
// Why.  Best fit keeps holes between live blocks (about a fifth of a 1 GiB
// live set in RMM's random_allocations), and a pool whose chunks are backed
// whole holds the memory of every hole.  As address space the holes cost
// nothing: a pool that backs only the pages under its blocks keeps the
// holes and gives back their memory.
//
// How.  Where the upstream pages its chunks (PoolUpstream::page_size: the
// host backend's anonymous mappings, the kernel's pages released with
// MADV_DONTNEED; on a GPU with VMM a reservation whose pages are mapped one
// physical allocation at a time, make_paged_device_upstream in
// backends/backend.cpp), a chunk is address space and a bit per page says
// what is backed (Chunk::backed).  Before carving a block, back_for backs
// the pages it touches.  If that would take the pool past its budget (the
// most its blocks needed, with 1/kSlack of slack, at least kMinSlackPages)
// by more than an allowance, it first flushes the stream caches and unbacks
// the pages wholly inside runs of free blocks whose frees completed, largest
// runs first, skipping runs under kMinUnback (unback_free); within the
// allowance the pages over the budget go back later ("Design note: deferred
// decommit" below).  On a
// GPU the driver charges per physical allocation, not per page, so pages are
// backed in units of up to unit_pages (Chunk::unit_starts; twice that once
// the pool is large) and a unit goes
// back whole: a block's inner pages form its units, and a page it shares
// with a neighbour is a unit alone.  A synchronisation over the release
// threshold and trim_to unback free pages before they release whole chunks.
//
// Limits.  Pages go back only from free blocks whose frees completed (see
// "Design note: stream order", stream_state.hpp) and only on the slow path: a block
// in a stream cache stays backed, and nothing on the hot path changes.  A
// hole's edge pages stay with its live neighbours; where pages are as large
// as the typical hole (2 MiB on a GPU) that leaves part of the holes'
// memory held, and each unit backed or given back costs tens of
// microseconds of driver time (docs/semantics.md, docs/benchmarks.md).
// RESERVED_MEM_* count backed bytes; max_size bounds the address space, and
// so the memory.
//
// Design note: deferred decommit
//
// Why.  Pages given back on the allocating thread put the driver in the
// step: an unmap waits for the device (about 1 ms on an H200), and a pool
// that gives back pages at its budget backs others a moment later (a
// variable-shape DDP run made about 150 unmaps, 3,000 set-access and 1,600
// creates per 45 steps a rank that way; docs/benchmarks.md).  Allocators
// that give memory back well do it late and in batches: mimalloc delays
// purges and coalesces the pending ranges, jemalloc lets dirty pages decay
// over time, PyTorch's expandable segments set access once per run.
//
// How.  (1) A fit prefers memory already backed (find_free): a larger hole
// whose pages are backed beats a tight one that needs the driver.  (2) The
// budget is the larger of what the blocks need now (in use + slack) and
// budget_high, the most the pool held within its budget: an overshoot does
// not raise it.  Backing past the budget by up to 1/kDefer of the use (at
// least kMinSlackPages / 2) is allowed on the spot, and only arms a
// deadline (purge_at, kPurgeDelayNs away).
// (3) What is over the budget goes back at the deadline, checked with one
// clock read on a later slow-path call of the pool (purge_if_due), at a
// trim, at a synchronisation over the release threshold, or under pressure:
// past the allowance, or when backing fails for lack of memory (then
// everything free goes).  (4) At each deadline budget_high decays: the part
// that none of the last decay_window periods needed halves, so a pool whose
// use fell gives memory back over a few periods after the window, and one
// whose peak comes back within the window none.  A period's need counts the
// overshoots its backing made, and the budget keeps what the window needed
// again up to 1/kDefer over it (with_recurring): a loop whose shapes leave
// the same holes every step backs its overshoot once, not every period.  (5) Pages
// go back as runs of adjacent free blocks whose frees completed, largest
// first, each run one unmap of its whole units (unback_free, unback_pages).
// (6) A run of pages is backed in one upstream call (back_units): a map per
// unit and one set-access for the run carrying every device; where the pool
// moves pages (gives some back to back others at once) the physical
// allocations unmapped are kept and mapped again (keep_handles), not
// released and created: the run's units take the kept units' sizes (kept_fit).
//
// Limits.  No background thread: a program that stops calling the pool
// keeps its overshoot until it synchronises through gpumem, trims or
// allocates again.  The purge runs on the caller's thread under the pool's
// lock (the hot path takes no pool lock; other threads' slow paths wait).
// A capture's blocks are allocated in a CaptureScope (pool.hpp): nothing
// goes back then but under a failed backing, so a deadline or an overshoot
// that falls in a capture waits for the thread's next call outside it (the
// pool's driver calls run in the relaxed capture mode, where the driver
// accepts them: tests/fakes/fake_api_vmm.cpp).  Peak memory rises by at most
// the allowance and 1/kDefer of the budget, more while a capture allocates.

namespace {

// A paged pool backs at most 1/kSlack more than its blocks use before it gives
// back pages under free blocks (host, RMM's pattern: 1/16 left 1.10 at a 1 GiB
// live set, 1/24 1.07, 1/32 1.05 for 12% more time; docs/benchmarks.md), or
// up to its high-water mark if that is more (see back_for).
constexpr uint64_t kSlack = 24;
// ...and at least this many pages more.  On a GPU each unit backed and given
// back costs tens to hundreds of microseconds of driver time (access is set
// for every peer device, and an unmap waits for the device), while a small
// pool's 1/kSlack is less than a unit: CuPy's loop of temporaries (a live
// set of tens of MiB) then gave pages back and backed them again about once
// per 50 iterations, 1.33x the time of its unpaged pool on a 4-GPU H100
// (docs/benchmarks.md).  32 pages: 64 MiB on the H100, 128 KiB on the host.
constexpr uint64_t kMinSlackPages = 32;
// Holes smaller than this are not worth a call each when the pool only
// trims back to its budget (trimming to a target takes them too).
constexpr uint64_t kMinUnback = uint64_t(64) << 10;
// Pages short of the budget after what completed went back: from this many
// the pool waits for busy streams' queued frees rather than grow (back_for).
constexpr uint64_t kWaitShortfall = 64 * kMiB;
// Deferred decommit ("Design note: deferred decommit" above): backing may
// take the pool up to 1/kDefer of what its blocks use (at least
// kMinSlackPages / 2) over its budget before it gives pages back on the
// allocating thread; what is over the budget goes back kPurgeDelayNs later,
// on a later call of the pool, and the high-water mark's part that the last
// Pool::decay_window periods (GPUMEM_POOL_DECAY) did not need halves then.
constexpr uint64_t kDefer = 16;
constexpr uint64_t kPurgeDelayNs = 1000000000; // 1 s
// Units grow with the pool: a unit has one page per kPagesPerUnitStep pages
// held, from the upstream's unit_pages up to twice that (2 MiB pages, 8-page
// units: 8 pages up to 4 GiB held, 16 from 8 GiB).
constexpr uint64_t kPagesPerUnitStep = 256;

// Page bits, a word at a time (a 4 MiB block spans 1024 host pages).
// The first page in [i, end) whose bit is `on`, or end.
size_t next_bit(const std::vector<uint64_t> &bits, size_t i, size_t end, bool on)
{
    while (i < end) {
        uint64_t word = bits[i / 64];
        if (!on)
            word = ~word;
        word &= ~uint64_t(0) << (i % 64);
        if (word)
            return std::min(end, i / 64 * 64 + size_t(__builtin_ctzll(word)));
        i = i / 64 * 64 + 64;
    }
    return end;
}

size_t next_page(const Chunk &c, size_t i, size_t end, bool on) { return next_bit(c.backed, i, end, on); }

// The bits [i, stop) of their word (stop within i's word).
uint64_t span_mask(size_t i, size_t stop)
{
    return (stop - i == 64 ? ~uint64_t(0) : ((uint64_t(1) << (stop - i)) - 1)) << (i % 64);
}

// How many of the bits [first, end) are set, a word at a time.
size_t count_bits(const std::vector<uint64_t> &bits, size_t first, size_t end)
{
    size_t n = 0;
    for (size_t i = first; i < end;) {
        const size_t stop = std::min(end, i / 64 * 64 + 64);
        n += size_t(__builtin_popcountll(bits[i / 64] & span_mask(i, stop)));
        i = stop;
    }
    return n;
}

void set_bits(std::vector<uint64_t> &bits, size_t first, size_t end, bool on)
{
    for (size_t i = first; i < end;) {
        const size_t stop = std::min(end, i / 64 * 64 + 64);
        const uint64_t mask = span_mask(i, stop);
        if (on)
            bits[i / 64] |= mask;
        else
            bits[i / 64] &= ~mask;
        i = stop;
    }
}

void set_pages(Chunk &c, size_t first, size_t end, bool on) { set_bits(c.backed, first, end, on); }

bool unit_starts_at(const Chunk &c, size_t i) { return (c.unit_starts[i / 64] >> (i % 64)) & 1u; }

// With units: the page after the unit that holds backed page i (the next
// unit's first page, or the next page not backed).
size_t unit_end(const Chunk &c, size_t i, size_t pages)
{
    return std::min(next_bit(c.unit_starts, i + 1, pages, true), next_page(c, i + 1, pages, false));
}

// Pages [first, end) of b's first `bytes`: every page they touch.
void pages_touched(const Chunk &c, size_t page, const char *ptr, size_t bytes, size_t *first, size_t *end)
{
    const size_t from = size_t(ptr - c.base);
    *first = from / page;
    *end = (from + bytes + page - 1) / page;
}

// Pages wholly inside [ptr, ptr + bytes).
void pages_inside(const Chunk &c, size_t page, const char *ptr, size_t bytes, size_t *first, size_t *end)
{
    const size_t from = size_t(ptr - c.base);
    *first = (from + page - 1) / page;
    *end = std::max(*first, (from + bytes) / page);
}

// The page from which [it, end) holds `want` backed pages (a word at a
// time), or `first` when [first, end) holds fewer.
size_t backed_tail(const Chunk &c, size_t first, size_t end, size_t want)
{
    for (size_t i = end; i > first && want;) {
        const size_t w = (i - 1) / 64, lo = std::max(first, w * 64);
        uint64_t word = c.backed[w];
        if (i - w * 64 < 64)
            word &= (uint64_t(1) << (i - w * 64)) - 1;
        word &= ~uint64_t(0) << (lo - w * 64);
        const size_t n = size_t(__builtin_popcountll(word));
        if (n < want) {
            want -= n;
            i = lo;
            continue;
        }
        for (;;) {
            const unsigned top = 63u - unsigned(__builtin_clzll(word));
            if (--want == 0)
                return w * 64 + top;
            word &= ~(uint64_t(1) << top);
        }
    }
    return first;
}

} // namespace

bool Pool::backed_under(const Block &b, size_t bytes) const
{
    size_t first, end;
    pages_touched(*b.chunk, page, b.ptr, bytes, &first, &end);
    return next_page(*b.chunk, first, end, false) == end;
}

size_t Pool::unbacked_under(const Block &b, size_t bytes) const
{
    size_t first, end;
    pages_touched(*b.chunk, page, b.ptr, bytes, &first, &end);
    return (end - first) - count_bits(b.chunk->backed, first, end);
}

uint64_t Pool::slack_for(uint64_t used) const { return std::max(used / kSlack, kMinSlackPages * page); }

uint64_t Pool::backed_bytes(const Chunk &chunk) const
{
    if (!page)
        return chunk.size;
    uint64_t pages = 0;
    for (uint64_t word : chunk.backed)
        pages += uint64_t(__builtin_popcountll(word));
    return pages * page;
}

void Pool::unback_pages(Chunk &chunk, size_t first, size_t end)
{
    const size_t pages = chunk.size / page;
    for (size_t i = next_page(chunk, first, end, true); i < end; i = next_page(chunk, i, end, true)) {
        size_t run = next_page(chunk, i, end, false);
        if (unit_pages) {
            // Whole units only: one that began before `first` or ends after `end` stays.
            if (!unit_starts_at(chunk, i)) {
                i = unit_end(chunk, i, pages);
                continue;
            }
            size_t stop = i;
            for (size_t e; stop < run && (e = unit_end(chunk, stop, pages)) <= end;)
                stop = e;
            if (stop == i) {
                i = run;
                continue;
            }
            run = stop;
            set_bits(chunk.unit_starts, i, run, false);
        }
        set_pages(chunk, i, run, false);
        upstream->unback(chunk.base + i * page, (run - i) * page);
        reserved -= (run - i) * page;
        i = run;
    }
}

uint64_t Pool::unback_free(uint64_t want, const Block *keep, size_t min_block, const char *why)
{
    if (!page || want == 0)
        return 0;
    const uint64_t before = reserved;
    // Free blocks whose frees completed, in runs of neighbours: a page two
    // of them share goes back too, and each run is one unmap per run of
    // whole units.  The largest runs first: the most pages for the fewest calls.
    auto idle = [keep](const Block *x) {
        return x && x != keep && x->state.load(std::memory_order_relaxed) == kFree &&
               (!x->tag_stream || free_completed(*x, 0));
    };
    runs.clear();
    try {
        index.for_each([&](Block *b) {
            if (!idle(b) || idle(b->phys_prev))
                return; // not the first of its run
            size_t n = 0;
            for (const Block *x = b; idle(x); x = x->phys_next)
                n += x->size;
            if (n >= min_block)
                runs.emplace_back(b, n);
        });
    } catch (const std::bad_alloc &) {
        // Give back what was collected.
    }
    std::sort(runs.begin(), runs.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
    for (const auto &[b, n] : runs) {
        if (before - reserved >= want)
            break;
        size_t first, end;
        pages_inside(*b->chunk, page, b->ptr, n, &first, &end);
        // No more of a run than is wanted: its high end (blocks are carved
        // from their low end, so the low pages serve the next fits).
        const uint64_t left = want - (before - reserved);
        first = backed_tail(*b->chunk, first, end, size_t((left + page - 1) / page));
        unback_pages(*b->chunk, first, end);
    }
    runs.clear();
    const uint64_t released = before - reserved;
    if (released) {
        log(LogLevel::debug, "pool %" PRIu64 ": gave back %" PRIu64 " bytes under free blocks %s (%" PRIu64 " reserved)",
            uid, released, why, reserved);
        observe_growth(-int64_t(released));
    }
    return released;
}

void Pool::purge_due()
{
    const uint64_t now = coarse_now_ns();
    if (now < purge_at)
        return;
    purge_at = 0;
    if (!page)
        return;
    const uint64_t used = in_use(0);
    const uint64_t need_now = used + slack_for(used);
    // The part of the mark that none of the last decay_window periods needed
    // halves: a peak that comes back every few seconds (a framework's
    // largest step) keeps its pages.
    past_overshoot[purges % decay_window] = period_overshoot;
    period_overshoot = 0;
    past_need[purges++ % decay_window] = period_need;
    uint64_t needed = need_now;
    for (uint64_t n : past_need)
        needed = std::max(needed, n);
    if (budget_high > needed)
        budget_high = needed + (budget_high - needed) / 2;
    period_need = need_now;
    const uint64_t budget = with_recurring(std::max(budget_high, need_now));
    if (reserved > budget) {
        flush_caches(nullptr);
        learn_completed_frees(false);
        unback_free(reserved - budget, nullptr, kMinUnback, "at the decay deadline");
    }
    // Held over what is needed now: look again after another delay (the
    // budget decays further, or what was pending has completed by then).
    if (reserved > need_now)
        purge_at = now + kPurgeDelayNs;
}

uint64_t Pool::with_recurring(uint64_t base) const
{
    uint64_t recent = period_overshoot;
    for (uint64_t n : past_overshoot)
        recent = std::max(recent, n);
    return std::max(base, std::min(recent, base + base / kDefer));
}

void Pool::note_use()
{
    const uint64_t used = in_use(0);
    const uint64_t need = used + slack_for(used);
    period_need = std::max(period_need, need);
    // Holding more than the blocks need now: the budget may decay.
    if (!purge_at && reserved > need)
        purge_at = coarse_now_ns() + kPurgeDelayNs;
}

void Pool::reset_budget()
{
    const uint64_t used = in_use(0);
    budget_high = reserved;
    period_need = used + slack_for(used);
    for (uint64_t &n : past_need)
        n = 0;
    for (uint64_t &n : past_overshoot)
        n = 0;
    period_overshoot = 0;
    purge_at = 0;
}

status_t Pool::back_for(Block &b, size_t bytes)
{
    Chunk &chunk = *b.chunk;
    size_t first, end;
    pages_touched(chunk, page, b.ptr, bytes, &first, &end);
    if (next_page(chunk, first, end, false) == end)
        return GPUMEM_SUCCESS; // all backed: the common case once the pool is warm
    // Room for the units of any run (at most one per page) before anything changes.
    unit_bytes.reserve(end - first); // may throw std::bad_alloc: the caller reports it
    uint64_t need = 0;
    for (size_t i = next_page(chunk, first, end, false); i < end; i = next_page(chunk, i, end, false)) {
        const size_t run = next_page(chunk, i, end, true);
        need += (run - i) * page;
        i = run;
    }
    // What the blocks use once b is carved (b is still in the index);
    // blocks in stream caches count as used until they are flushed.
    uint64_t used = in_use(bytes);
    uint64_t slack = slack_for(used);
    period_need = std::max(period_need, used + slack);
    uint64_t base = std::max(used + slack, budget_high);
    const uint64_t budget = with_recurring(base);
    bool over = false; // backing past the budget proper (base)
    bool uncoalesced = false;
    bool kept = false; // upstream->keep_handles in force
    // Within the budget the memory is the pool's already (its blocks needed
    // as much before): giving pages back there only to back others again
    // costs an unmap and a map each (an unmap waits for the device) and
    // lowers no peak.  Past it by no more than the allowance, the pages over
    // it go back later (purge_due) unless the next periods need them again;
    // past that, now.
    const uint64_t allowance = std::max(used / kDefer, kMinSlackPages * page / 2);
    // Inside a capture the pool unmaps nothing to keep its budget: past the
    // allowance too it backs at once and gives back at the next deadline.
    const bool may_give_back = !in_capture_scope();
    if (reserved + need > base && (reserved + need <= budget + allowance || !may_give_back)) {
        over = true;
        period_need = std::max(period_need, reserved + need);
        period_overshoot = std::max(period_overshoot, reserved + need);
        if (reserved + need > budget && !purge_at)
            purge_at = coarse_now_ns() + kPurgeDelayNs;
    } else if (reserved + need > budget && index.inserted() >= unback_retry_at) {
        // Cached blocks of other sizes hold pages too.  b sits out the flush
        // (marked live, so nothing merges into it and it stays valid), and
        // may miss a merge with a flushed neighbour: carving b ends that.
        index.remove(&b);
        b.state.store(kLive, std::memory_order_relaxed);
        flush_caches(nullptr);
        b.state.store(kFree, std::memory_order_relaxed);
        index.insert(&b);
        uncoalesced = true;
        used = in_use(bytes);
        slack = slack_for(used);
        // What is over the budget and a quarter of the slack more, so that
        // the next carvings need not search at once (giving back more would
        // only make them back it again); when not all of it was found,
        // searching again is worth it only after half the slack more was freed.
        base = std::max(used + slack, budget_high);
        const uint64_t target = with_recurring(base);
        const uint64_t want = reserved + need > target ? reserved + need - target + slack / 4 : 0;
        uint64_t got = 0;
        if (want) {
            // The pages go back to be backed again here: up to `need` of
            // their physical memory is kept for that (back_units reuses it).
            upstream->keep_handles(size_t(need));
            kept = true;
            learn_completed_frees(false);
            got = unback_free(want, &b, kMinUnback, "to back a block past the allowance");
        }
        // Far short: waiting for the busy streams whose queued frees hold the
        // memory costs their pipelines a stall, and saves a peak that much
        // higher.  Rare (PyTorch: 7-10 waits in 120 steps, its peak 6.1 GB
        // in every run instead of 6.5 or 7.1; docs/benchmarks.md).
        if (want > got && want - got >= kWaitShortfall) {
            learn_completed_frees(true);
            got += unback_free(want - got, &b, kMinUnback, "after waiting for busy streams");
        }
        if (want > got) {
            unback_retry_at = index.inserted() + slack / 2;
        } else {
            purge_at = 0; // back within the budget: nothing left to purge
        }
    }
    // With units: the pages wholly inside the block form units of their own,
    // so that they go back whole once it is freed; an edge page (shared with
    // a neighbour) is a unit alone.
    size_t inside_first = 0, inside_end = 0;
    if (unit_pages)
        pages_inside(chunk, page, b.ptr, bytes, &inside_first, &inside_end);
    // Units grow with the pool: one physical allocation per unit, so a large
    // pool backs a block with fewer calls (up to twice the upstream's unit).
    const size_t unit_now =
        unit_pages ? std::clamp<size_t>(size_t(reserved / (uint64_t(page) * kPagesPerUnitStep)), unit_pages, 2 * unit_pages)
                   : 0;
    status_t st = GPUMEM_SUCCESS;
    uint64_t backed = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        for (size_t i = next_page(chunk, first, end, false); i < end; i = next_page(chunk, i, end, false)) {
            const size_t run = next_page(chunk, i, end, true);
            // One call per run of pages: its units are mapped and their
            // access set at once (PoolUpstream::back_units).
            unit_bytes.clear();
            for (size_t u = i, stop; u < run; u = stop) {
                if (!unit_pages)
                    stop = run;
                else if (u < inside_first || u >= inside_end)
                    stop = u + 1;
                else if (const size_t k = kept ? upstream->kept_fit((std::min(run, inside_end) - u) * page) : 0)
                    stop = u + k / page; // a unit kept from the pages given back above: no create
                else
                    stop = std::min({run, inside_end, u + unit_now});
                unit_bytes.push_back((stop - u) * page);
            }
            st = upstream->back_units(chunk.base + i * page, (run - i) * page, unit_bytes.data(), unit_bytes.size());
            if (st != GPUMEM_SUCCESS)
                break;
            set_pages(chunk, i, run, true);
            if (unit_pages)
                for (size_t k = 0, u = i; k < unit_bytes.size(); u += unit_bytes[k++] / page)
                    set_bits(chunk.unit_starts, u, u + 1, true);
            backed += (run - i) * page;
            i = run;
        }
        // Out of memory: everything free goes back (nothing kept), then once more.
        if (st == GPUMEM_ERROR_OUT_OF_MEMORY && attempt == 0 && kept) {
            upstream->keep_handles(0);
            kept = false;
        }
        if (st != GPUMEM_ERROR_OUT_OF_MEMORY || attempt == 1 || unback_free(UINT64_MAX, &b, 0, "out of device memory") == 0)
            break;
        st = GPUMEM_SUCCESS;
    }
    if (kept)
        upstream->keep_handles(0); // what was not reused goes: the books count backed pages only
    reserved += backed;
    reserved_high = std::max(reserved_high, reserved);
    // Held within the budget: the pool's memory from now on, as a high-water
    // mark that the deadlines decay.  An overshoot is not, nor what a move
    // kept of the recurring ones (with_recurring): the mark would otherwise
    // ratchet up by 1/kDefer a period.
    if (!over)
        budget_high = std::max(budget_high, std::min(reserved, base));
    if (backed) {
        log(LogLevel::debug, "pool %" PRIu64 ": backed %" PRIu64 " bytes for a block of %zu, %s (%" PRIu64 " reserved)", uid,
            backed, bytes,
            uncoalesced ? "after giving pages back" : reserved > budget ? "past the budget" : over ? "within the recurring overshoot" : "within the budget",
            reserved);
        observe_growth(int64_t(backed));
    }
    if (st != GPUMEM_SUCCESS) {
        if (uncoalesced) {
            index.remove(&b);
            insert_coalesced(&b);
        }
        char context[96];
        std::snprintf(context, sizeof context, "the pool could not back %" PRIu64 " bytes", need);
        prefix_error(context);
    }
    return st;
}

} // namespace gpumem::detail::pool
