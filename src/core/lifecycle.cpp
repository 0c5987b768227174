#include "core/lifecycle.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "base/log.hpp"

namespace gpumem::detail {

// initial-exec: no __tls_get_addr call on the hot path (a few bytes of the
// static TLS space glibc keeps for dlopen).
__thread CallCounter *t_calls __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_in_lifecycle = false;
std::atomic<bool> g_entry_fence{true};

namespace {

std::atomic<CallCounter *> g_counters{nullptr};

enum class Barrier { fence, shared, private_expedited };
Barrier g_barrier = Barrier::fence; // written once under the init mutex, before any runtime is published

pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

// A thread that ends gives its counter back (its count is 0: it is not inside a call).
void release_counter(void *p)
{
    auto *c = static_cast<CallCounter *>(p);
    c->rt = nullptr;
    t_calls = nullptr;
    c->in_use.store(false, std::memory_order_release);
}

void make_key() { pthread_key_create(&g_exit_key, release_counter); }

#if defined(__linux__)
long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }
#endif

} // namespace

CallCounter *register_calling_thread()
{
    pthread_once(&g_key_once, make_key);
    CallCounter *c = nullptr;
    for (CallCounter *it = g_counters.load(std::memory_order_acquire); it; it = it->next) {
        bool free_slot = false;
        if (!it->in_use.load(std::memory_order_relaxed) &&
            it->in_use.compare_exchange_strong(free_slot, true, std::memory_order_acq_rel)) {
            c = it;
            break;
        }
    }
    if (!c) {
        c = new CallCounter; // never freed: finalize may be reading it
        c->in_use.store(true, std::memory_order_relaxed);
        CallCounter *head = g_counters.load(std::memory_order_relaxed);
        do
            c->next = head;
        while (!g_counters.compare_exchange_weak(head, c, std::memory_order_acq_rel, std::memory_order_relaxed));
    }
    pthread_setspecific(g_exit_key, c);
    t_calls = c;
    return c;
}

namespace lifecycle {

void setup_barrier()
{
    static bool done = false;
    if (done)
        return;
    done = true;
#if defined(__linux__)
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) {
        g_barrier = Barrier::private_expedited;
    } else {
        long cmds = membarrier(MEMBARRIER_CMD_QUERY);
        if (cmds > 0 && (cmds & MEMBARRIER_CMD_SHARED))
            g_barrier = Barrier::shared;
    }
#endif
    if (g_barrier != Barrier::fence)
        g_entry_fence.store(false, std::memory_order_relaxed);
    else
        log(LogLevel::debug, "membarrier is not available: every gpumem call pays a memory fence");
}

void wait_for_calls()
{
    // Every thread that read the old runtime pointer has its count visible
    // after this; every thread that reads it later sees nullptr.
    std::atomic_thread_fence(std::memory_order_seq_cst);
#if defined(__linux__)
    if (g_barrier == Barrier::private_expedited)
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    else if (g_barrier == Barrier::shared)
        membarrier(MEMBARRIER_CMD_SHARED);
#endif
    CallCounter *self = t_calls;
    for (CallCounter *c = g_counters.load(std::memory_order_acquire); c; c = c->next) {
        if (c == self)
            continue;
        for (unsigned spins = 0; c->depth.load(std::memory_order_acquire) != 0; ++spins) {
            if (spins < 64) {
                sched_yield();
            } else {
                struct timespec ts = {0, 50 * 1000};
                nanosleep(&ts, nullptr);
            }
        }
    }
}

void drop_other_threads()
{
    CallCounter *self = t_calls;
    for (CallCounter *c = g_counters.load(std::memory_order_relaxed); c; c = c->next) {
        if (c == self)
            continue;
        c->depth.store(0, std::memory_order_relaxed);
        c->rt = nullptr;
        c->in_use.store(false, std::memory_order_relaxed);
    }
}

} // namespace lifecycle

} // namespace gpumem::detail
