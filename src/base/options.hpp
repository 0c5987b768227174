// Options read once from the environment at init: one table (options.cpp)
// names each variable with its default, parser and help text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/log.hpp"

namespace gpumem::detail {

// Features GPUMEM_DISABLE can turn off.
enum Feature : uint32_t {
    feature_managed = 1u << 0,
    feature_pools = 1u << 1,
    feature_vmm = 1u << 2,
    feature_ipc = 1u << 3,
    feature_host_register = 1u << 4,
    feature_last = feature_host_register,
};

struct Options {
    int32_t backend = 0;       // GPUMEM_BACKEND_*, 0 = auto (no variable)
    bool backend_forced = false; // GPUMEM_BACKEND named one
    uint32_t disabled = 0;     // Feature bits
    bool fallback_allowed = true;
    uint64_t pinned_cache_bytes = uint64_t{1} << 30; // GPUMEM_PINNED_CACHE
    const char *cuda_library = nullptr; // GPUMEM_CUDA_LIBRARY
    const char *hip_library = nullptr;  // GPUMEM_HIP_LIBRARY
    LogLevel log_level = LogLevel::warn; // GPUMEM_LOG
    bool host_strict = false;            // GPUMEM_HOST_STRICT (host backend only)
    // Seeing and debugging memory (0.2).
    const char *trace_path = nullptr;  // GPUMEM_TRACE: Chrome-trace file written at finalize or exit
    uint64_t trace_max = 1000000;      // GPUMEM_TRACE_MAX: events kept (the newest)
    bool backtrace = false;            // GPUMEM_BACKTRACE=1: record allocation backtraces
    uint64_t limit_bytes = 0;          // GPUMEM_LIMIT in bytes (0: no cap) ...
    uint32_t limit_percent = 0;        // ... or in percent of each device's memory (1-100)
    bool pool_paged = true;            // GPUMEM_POOL_PAGED: own pools give back the memory under free holes
    uint32_t pool_decay_s = 4;         // GPUMEM_POOL_DECAY: seconds a paged own pool keeps what its peak needed
    // Memory that explains itself (0.4).
    bool selftest = false;               // GPUMEM_SELFTEST=1 or a path: test each feature at init
    const char *selftest_cache = nullptr; // GPUMEM_SELFTEST=path: the results are cached there
};

// One row of the options table.
struct OptionSpec {
    const char *name;          // the environment variable
    const char *default_value; // as a user would write it ("" = unset)
    const char *expected;      // what a well-formed value looks like
    const char *help;          // what it does
    // false: malformed (the default is used).  true with a note: taken in part, the
    // note says what was ignored and what was done (both go into the warning).
    bool (*parse)(const char *value, Options &options, std::string &note);
};

// Read the environment (ignored in setuid/setgid processes); a malformed
// value is reported once with a warning and the default is used, a value
// taken in part (GPUMEM_DISABLE with an unknown item) once with a warning
// that says what was ignored and what applies.  Also sets the log threshold
// from GPUMEM_LOG.
Options read_options();

const char *feature_name(Feature feature);
// "auto", "host", "cuda", "hip" (the values GPUMEM_BACKEND takes); "unknown" for any other id.
const char *backend_name(int32_t backend);

} // namespace gpumem::detail
