// Which threads are inside a gpumem call, so that gpumem_finalize (and fork)
// can wait for them before the runtime goes.
//
// The hot path must stay cheap and must not share a written cache line
// between threads, so each thread counts its own calls (nesting included: a
// trace callback may call gpumem) in a CallCounter of its own, written with
// plain stores.  The slow side is asymmetric: gpumem_finalize unpublishes the
// runtime, then membarrier(2) makes every running thread pass a full barrier,
// after which a thread either shows a non-zero count (finalize waits for it
// to drop to zero) or will see no runtime (and goes to the init path).  Where
// membarrier is missing both sides use a seq_cst fence instead.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/sharing.hpp"

namespace gpumem::detail {

struct Runtime;

// Every call writes its thread's counter twice: no two threads' counters share a line.
struct alignas(k_false_sharing_range) CallCounter {
    std::atomic<uint32_t> depth{0}; // gpumem calls this thread is inside (nested ones too)
    Runtime *rt = nullptr;          // the runtime of the outermost call (this thread only)
    std::atomic<bool> in_use{false};
    CallCounter *next = nullptr;    // the list of every counter, never shrunk (counters are reused)
};

// The calling thread's counter (nullptr until its first call).  __thread,
// initial-exec: a plain %fs access on the hot path (a C++ thread_local
// declared extern would go through a TLS wrapper call).
extern __thread CallCounter *t_calls __attribute__((tls_model("initial-exec")));
// True until membarrier is known to work: the entry then needs a real fence.
extern std::atomic<bool> g_entry_fence;
// The thread holds the init mutex (inside gpumem_init or gpumem_finalize).
extern __thread bool t_in_lifecycle;

CallCounter *register_calling_thread();

// After a thread's count went up and before it reads the runtime pointer.
inline void entry_barrier()
{
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (g_entry_fence.load(std::memory_order_relaxed)) [[unlikely]]
        std::atomic_thread_fence(std::memory_order_seq_cst);
}

namespace lifecycle {
// Once, at the first init: register for membarrier (or fall back to fences).
void setup_barrier();
// After the runtime was unpublished: wait until no thread is inside a call
// (the calling thread's own count is not waited for).
void wait_for_calls();
// In a fork child: the other threads are gone, so are their counters.
void drop_other_threads();
} // namespace lifecycle

} // namespace gpumem::detail
