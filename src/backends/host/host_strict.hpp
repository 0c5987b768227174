// Strict host mode (GPUMEM_HOST_STRICT=1): the host backend refuses what a
// GPU would refuse, so that a program which runs clean here behaves the same
// on a GPU.  Two parts, both owned by HostBackend when strict:
//
// DeviceViews: device-kind memory (gpumem_malloc, the chunks of non-shareable
// pools) is a memfd mapped twice.  The user's view is PROT_NONE, so a CPU
// dereference faults; the fault handler names the allocation.  A private
// read-write alias serves gpumem's own copies and fills.  Nothing is ever
// mprotect'ed back and forth, so other threads never see a window.
//
// DeferredWork: stream work (async copies and fills) is queued and runs, in
// order, only when the program synchronises, queries or waits on an event, so
// a missing synchronise reads stale data as it may on a GPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/error.hpp"

namespace gpumem::detail::host {

// One entry of the table the fault handler reads.  Never freed (recycled), so
// the handler can walk the list without a lock; `base` is 0 while unused.
struct FaultRecord {
    FaultRecord *next = nullptr; // written once, before the record is published
    std::atomic<uintptr_t> base{0};
    std::atomic<size_t> size{0};
    std::atomic<const char *> what{nullptr};     // "device allocation", "pool chunk"
    std::atomic<const char *> made_by{nullptr};  // public function, or nullptr
    std::atomic<const void *> caller{nullptr};   // its caller's return address
    std::atomic<bool> freed{false};              // kept reserved after its free
};

class DeviceViews {
public:
    DeviceViews(); // installs the fault handler (once per process)
    ~DeviceViews();
    DeviceViews(const DeviceViews &) = delete;
    DeviceViews &operator=(const DeviceViews &) = delete;

    // `len` bytes (a multiple of the page size) aligned to `align`, the
    // user's view PROT_NONE.  `requested` (the size asked for) and `what`
    // name it in fault reports.
    status_t map(size_t len, size_t requested, size_t align, const char *what, void **user);
    // The memory goes; the user's address range stays reserved (PROT_NONE,
    // no memory) for a while, so that a late touch is reported as a touch of
    // freed memory and a late gpumem call as INVALID_POINTER.  False when
    // `user` is not a live view's base.
    bool unmap(void *user);
    // Where gpumem itself reads and writes [p, p+n): its alias when `p` lies
    // in a view, else `p` (host memory, or another kind the CPU may touch).
    // INVALID_POINTER when it lies in freed device memory; `what` names the
    // operand ("destination") in the message.
    status_t accessible(const void *p, size_t n, const char *what, void **out) const;

private:
    struct View {
        size_t len;
        char *alias; // nullptr once freed
        FaultRecord *record;
    };
    // Freed ranges kept reserved: at most this many, oldest released first.
    static constexpr size_t k_freed_kept = 4096;
    mutable std::shared_mutex mutex_;
    std::map<uintptr_t, View> views_;  // by the user's base, live and freed
    std::deque<uintptr_t> freed_;      // freed views, oldest first
    std::vector<FaultRecord *> spare_; // recycled fault records
};

// Queued stream work.  Streams are the backend's native pointers (nullptr =
// the default stream, which, like CUDA's legacy default stream, is ordered
// with every other blocking stream of the device; `nonblocking` marks the
// work of a GPUMEM_STREAM_NON_BLOCKING stream, which it is not ordered with).
class DeferredWork {
public:
    // Enqueue on `stream`; the pointers are already where gpumem may access them.
    void copy(void *stream, bool nonblocking, void *dst, const void *src, size_t n);
    void fill(void *stream, bool nonblocking, void *dst, unsigned char byte, size_t n);
    // `count` elements of `size` bytes (2 or 4) set to `value`.
    void fill_elements(void *stream, bool nonblocking, void *dst, uint32_t value, unsigned size, size_t count);
    // fn(user) in the stream's order (gpumem_launch_host_func).
    void host_fn(void *stream, bool nonblocking, void (*fn)(void *), void *user);
    // What an event recorded on `stream` now stands for.
    uint64_t mark();
    // Run `stream`'s work up to `upto` (inclusive; UINT64_MAX: all of it),
    // and whatever that work is ordered after (`nonblocking`: nothing of
    // another stream).
    void run_stream(void *stream, bool nonblocking, uint64_t upto);
    void run_all();

private:
    enum class Kind { copy, fill, host_fn };
    struct Op {
        uint64_t seq = 0;
        void *stream = nullptr;
        bool nonblocking = false;
        Kind kind = Kind::copy;
        void *dst = nullptr;
        const void *src = nullptr;
        size_t n = 0;           // copy: bytes; fill: elements
        uint32_t value = 0;     // fill: the element's value
        unsigned size = 1;      // fill: the element's bytes (1, 2, 4)
        void (*fn)(void *) = nullptr; // host_fn
        void *user = nullptr;
    };
    void enqueue(const Op &op);
    static void run(const Op &op);
    std::mutex mutex_; // held while work runs: one runner at a time, in order
    std::list<Op> ops_; // by seq
    uint64_t next_seq_ = 1;
};

struct StrictMode {
    DeviceViews views;
    DeferredWork work;
};

} // namespace gpumem::detail::host
