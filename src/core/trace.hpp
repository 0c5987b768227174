// The trace recorder (GPUMEM_TRACE): a bounded ring of memory events in
// memory, written as Chrome-trace JSON at gpumem_finalize or exit; and the
// backtraces of live allocations (GPUMEM_BACKTRACE=1), which snapshots and
// the trace report.  Off, the hot path pays one relaxed load and a branch
// (g_watchers in core/stats.hpp); the trace callback shares that hook.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Devices;
struct Options;

// Names used by traces and snapshots (and gpumem_kind_name).
const char *public_kind_name(int32_t kind); // "device", "host_pinned", ...
// GPUMEM_POOL_MEMORY_* -> "device", "pinned", "managed"; "unknown" otherwise.
// What an allocation's memory is comes from memory_of_kind (core/pointers.hpp)
// or, for a stream-ordered block, from its pool.
const char *memory_name(int32_t memory);

// A backtrace as captured (return addresses), symbolised only when written.
using Frames = std::vector<void *>;

namespace trace {

// Init: start recording if GPUMEM_TRACE names a file, and backtraces if
// GPUMEM_BACKTRACE=1 (the devices are known by then).
void start(const Options &options, const Devices &devices, int32_t backend_id, uint64_t epoch_ns);
// gpumem_finalize: write the trace file (if recording) and stop.  Also run at
// exit for a program that never finalizes.
void finish();

// The backtrace recorded for the live allocation at `ptr` (nullptr if none).
std::shared_ptr<const Frames> backtrace_of(const void *ptr);
// Symbolised frames, one string each.
std::vector<std::string> symbolize(const Frames &frames);

// From account_alloc / account_free (core/stats.cpp); `memory` is GPUMEM_POOL_MEMORY_*.
// Only memory with an address is traced (an alloc and its free pair up by it):
// a NULL ptr (VMM physical memory, an empty fallback buffer) records nothing.
void on_alloc(int32_t kind, void *ptr, size_t bytes, int32_t device, int32_t memory, gpumem_stream_t stream,
              gpumem_pool_t pool);
void on_free(int32_t kind, void *ptr, size_t bytes, int32_t device, int32_t memory, gpumem_stream_t stream,
             gpumem_pool_t pool);
// gpumem_mem_map / gpumem_mem_unmap (core/vmm.cpp): kind virtual is traced
// as its mappings, at the address and size pointer info gives them.  The
// physical memory behind them (gpumem_mem_create / _release) has no address;
// the statistics, GPUMEM_LIMIT and the trace callback count it instead.
void on_map(void *ptr, size_t bytes, int32_t device);
void on_unmap(void *ptr, size_t bytes, int32_t device);

bool recording();
// A stream (stream != NULL), device (stream NULL) or event synchronisation.
void on_sync(gpumem_stream_t stream, int32_t device);
// A trim of a pool of `memory` (GPUMEM_POOL_MEMORY_*) gave back `released`
// bytes; the pool holds `reserved` and uses `used` after it.
void on_trim(uint64_t pool, int32_t device, int32_t memory, uint64_t released, uint64_t reserved, uint64_t used);
// gpumem's own pool gave the graph of capture `capture` the block at `ptr`
// (graph_block), or the graph was destroyed and its `blocks` blocks of
// `bytes` went back to their pools (graph_release).
void on_graph_block(uint64_t capture, const void *ptr, uint64_t bytes, int32_t device);
void on_graph_release(uint64_t capture, uint64_t blocks, uint64_t bytes, int32_t device);
// An allocation failed OUT_OF_MEMORY (core/oom_report): what it asked for and
// the report's verdict, so that a trace shows where and why (gpumem-viz marks it).
void on_oom(int32_t kind, uint64_t bytes, int32_t device, gpumem_pool_t pool, gpumem_stream_t stream,
            const char *verdict);

} // namespace trace
} // namespace gpumem::detail
