// Time and thread identity for what gpumem records about its allocations
// (snapshots, the trace file).  A leaf: every layer may use it.
#pragma once

#include <cstdint>
#include <ctime>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpumem::detail {

// Monotonic nanoseconds for trace events (only read while tracing).
inline uint64_t precise_now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// The same clock at the kernel tick's resolution (1-4 ms), a few times cheaper:
// every allocation records its birth with it, so the hot path pays little.
inline uint64_t coarse_now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// The kernel's id of the calling thread (what trace viewers and debuggers show).
inline uint32_t current_thread_id()
{
    __attribute__((tls_model("initial-exec"))) static thread_local uint32_t tid = 0;
    if (!tid) [[unlikely]]
        tid = uint32_t(syscall(SYS_gettid));
    return tid;
}

// Where and when an allocation was made: kept with each allocation's record
// (the registry, the pools' block tables) and reported by snapshots.
struct Birth {
    uint64_t time_ns = 0;  // coarse_now_ns()
    void *stream = nullptr; // the gpumem_stream_t named (stream-ordered only; NULL: default)
    uint32_t thread = 0;   // current_thread_id()

    static Birth now(void *stream = nullptr) { return Birth{coarse_now_ns(), stream, current_thread_id()}; }
};

} // namespace gpumem::detail
