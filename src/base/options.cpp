// The options table: every environment variable gpumem reads, with its
// default, its parser and its help text, read once at init.
#include "base/options.hpp"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

namespace {

bool equals(const std::string &a, const char *b) { return strcasecmp(a.c_str(), b) == 0; }

constexpr const char *k_disable_items = "managed, pools, vmm, ipc, host_register";

std::string trimmed(const std::string &s)
{
    size_t begin = s.find_first_not_of(" \t");
    size_t end = s.find_last_not_of(" \t");
    return begin == std::string::npos ? std::string() : s.substr(begin, end - begin + 1);
}

// Each parser reads the raw value; false means malformed (the field keeps
// its default, except where the help says otherwise).  A value that is only
// partly understood is taken as far as it goes and returns true with `note`
// saying what was ignored and what was done instead: the warning says both.
bool parse_log(const char *raw, Options &o, std::string &)
{
    std::string v = trimmed(raw);
    if (equals(v, "error")) o.log_level = LogLevel::error;
    else if (equals(v, "warn") || equals(v, "warning")) o.log_level = LogLevel::warn;
    else if (equals(v, "info")) o.log_level = LogLevel::info;
    else if (equals(v, "debug")) o.log_level = LogLevel::debug;
    else return false;
    return true;
}

// The backends by name: GPUMEM_BACKEND's values and what backend_name answers.
struct BackendName {
    int32_t id;
    const char *name;
};
constexpr BackendName k_backend_names[] = {
    {GPUMEM_BACKEND_AUTO, "auto"},
    {GPUMEM_BACKEND_HOST, "host"},
    {GPUMEM_BACKEND_CUDA, "cuda"},
    {GPUMEM_BACKEND_HIP, "hip"},
};

bool parse_backend(const char *raw, Options &o, std::string &)
{
    std::string v = trimmed(raw);
    for (const BackendName &b : k_backend_names) {
        if (equals(v, b.name)) {
            o.backend = b.id;
            o.backend_forced = o.backend != GPUMEM_BACKEND_AUTO;
            return true;
        }
    }
    return false;
}

// Known items apply even when another item is unknown: a user who writes
// "pools,nonsense" wants pools disabled and has a typo to fix, so the warning
// names what is skipped and says what is disabled.
bool parse_disable(const char *raw, Options &o, std::string &note)
{
    std::string list = raw, unknown;
    for (size_t start = 0; start <= list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos)
            comma = list.size();
        std::string item = trimmed(list.substr(start, comma - start));
        start = comma + 1;
        if (item.empty())
            continue;
        uint32_t bit = 0;
        for (uint32_t f = 1; f <= feature_last; f <<= 1)
            if (equals(item, feature_name(static_cast<Feature>(f))))
                bit = f;
        if (bit)
            o.disabled |= bit;
        else
            unknown += (unknown.empty() ? "'" : ", '") + item + "'";
    }
    if (!unknown.empty()) {
        std::string done;
        for (uint32_t f = 1; f <= feature_last; f <<= 1)
            if (o.disabled & f)
                done += (done.empty() ? "" : ", ") + std::string(feature_name(static_cast<Feature>(f)));
        note = "ignoring " + unknown + " (expected " + k_disable_items + "); " +
               (done.empty() ? std::string("no feature disabled") : "disabling " + done);
    }
    return true;
}

bool parse_fallback(const char *raw, Options &o, std::string &)
{
    std::string v = trimmed(raw);
    if (equals(v, "allow")) o.fallback_allowed = true;
    else if (equals(v, "deny")) o.fallback_allowed = false;
    else return false;
    return true;
}

// A whole decimal number: no sign, no suffix, no overflow.
bool parse_count(const std::string &raw, uint64_t *out)
{
    std::string v = trimmed(raw);
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
        return false;
    errno = 0;
    unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
    if (errno)
        return false;
    *out = n;
    return true;
}

// A size in bytes, as the table's size entries say: a whole number and an optional unit,
// K, M, G or T alone, with "iB" or with "B", in any case, or B.  Every unit
// is a power of 1024, "MB" too: memory sizes are meant so, and the memory
// options users already write read them so (Docker's --memory=256m or 256MB,
// mimalloc's MIMALLOC_* sizes), so one spelling never means two sizes.
// Overflow is malformed.
bool parse_size(const char *raw, uint64_t *out)
{
    std::string v = trimmed(raw);
    size_t digits = v.find_first_not_of("0123456789");
    if (digits == std::string::npos)
        return parse_count(v, out);
    uint64_t number = 0;
    if (digits == 0 || !parse_count(v.substr(0, digits), &number))
        return false;
    std::string unit = trimmed(v.substr(digits));
    static const char k_units[] = "KMGT";
    unsigned shift = 0;
    const char *u = unit.empty() ? nullptr : std::strchr(k_units, std::toupper(static_cast<unsigned char>(unit[0])));
    if (u && *u) {
        shift = 10 * unsigned(u - k_units + 1);
        std::string rest = unit.substr(1); // "256Mi" (Kubernetes' spelling) too
        if (!rest.empty() && !equals(rest, "iB") && !equals(rest, "B") && !equals(rest, "i"))
            return false;
    } else if (!equals(unit, "B")) {
        return false;
    }
    if (shift && number > (UINT64_MAX >> shift))
        return false;
    *out = number << shift;
    return true;
}

bool parse_pinned_cache(const char *raw, Options &o, std::string &)
{
    return parse_size(raw, &o.pinned_cache_bytes);
}

bool parse_cuda_library(const char *raw, Options &o, std::string &)
{
    o.cuda_library = raw;
    return true;
}

bool parse_hip_library(const char *raw, Options &o, std::string &)
{
    o.hip_library = raw;
    return true;
}

// "0" or "1".
bool parse_flag(const char *raw, bool *out)
{
    std::string v = trimmed(raw);
    if (v != "0" && v != "1")
        return false;
    *out = v == "1";
    return true;
}

bool parse_host_strict(const char *raw, Options &o, std::string &) { return parse_flag(raw, &o.host_strict); }

// Seeing and debugging memory (0.2).
bool parse_trace(const char *raw, Options &o, std::string &)
{
    o.trace_path = raw;
    return true;
}

// A count of events, not a size: no units.
bool parse_trace_max(const char *raw, Options &o, std::string &)
{
    uint64_t count = 0;
    if (!parse_count(raw, &count) || count == 0)
        return false;
    o.trace_max = count;
    return true;
}

bool parse_backtrace(const char *raw, Options &o, std::string &) { return parse_flag(raw, &o.backtrace); }
bool parse_pool_paged(const char *raw, Options &o, std::string &) { return parse_flag(raw, &o.pool_paged); }
bool parse_pool_decay(const char *raw, Options &o, std::string &)
{
    uint64_t seconds = 0;
    if (!parse_count(raw, &seconds) || seconds < 1 || seconds > 60)
        return false;
    o.pool_decay_s = uint32_t(seconds);
    return true;
}

// A size (parse_size), or "N%" (1 to 100) of each device's memory.
// A cap of nothing is well formed but meaningless (every allocation refused): its warning says
// so, rather than that a size was expected.
bool parse_limit(const char *raw, Options &o, std::string &note)
{
    static const char k_zero[] = "a cap of 0 would refuse every allocation; unset GPUMEM_LIMIT for no cap, or give "
                                 "a size above 0";
    std::string v = trimmed(raw);
    if (!v.empty() && v.back() == '%') {
        uint64_t percent = 0;
        if (parse_count(v.substr(0, v.size() - 1), &percent) && percent == 0)
            note = k_zero;
        if (!parse_count(v.substr(0, v.size() - 1), &percent) || percent < 1 || percent > 100)
            return false;
        o.limit_percent = uint32_t(percent);
        o.limit_bytes = 0;
        return true;
    }
    uint64_t bytes = 0;
    if (!parse_size(v.c_str(), &bytes))
        return false;
    if (bytes == 0) {
        note = k_zero;
        return false;
    }
    o.limit_bytes = bytes;
    o.limit_percent = 0;
    return true;
}

// "0", "1" or a path (anything else, taken as the cache's directory).
// A cache directory is named by a path with a '/' in it (./cache, /var/cache/gpumem): a bare
// word is a flag mistyped ("2", "true", "yes"), which must not create a directory of that name.
bool parse_selftest(const char *raw, Options &o, std::string &why)
{
    std::string v = trimmed(raw);
    if (v == "0" || v == "1") {
        o.selftest = v == "1";
        o.selftest_cache = nullptr;
        return true;
    }
    if (v.find('/') == std::string::npos) {
        why = "expected 0, 1 or a directory's path with a '/' in it (./" + v + " for a directory here)";
        return false;
    }
    o.selftest = true;
    o.selftest_cache = raw;
    return true;
}

const OptionSpec k_options[] = {
    {"GPUMEM_BACKEND", "auto", "auto, host, cuda or hip", "which backend gpumem_init(GPUMEM_BACKEND_AUTO) picks",
     parse_backend},
    {"GPUMEM_DISABLE", "", "a comma list of managed, pools, vmm, ipc, host_register (an unknown item is "
     "skipped with a warning; the others still apply)",
     "treat these features as absent, to exercise the fallbacks on any machine", parse_disable},
    {"GPUMEM_FALLBACK", "allow", "allow or deny",
     "deny: a missing feature is GPUMEM_ERROR_NOT_SUPPORTED instead of emulated", parse_fallback},
    {"GPUMEM_LOG", "warn", "error, warn, info or debug", "messages to stderr, one line each, prefixed gpumem:",
     parse_log},
    // Every size entry says the syntax of parse_size in the same words (the warnings and the
    // man page quote the table; the table is written out for docs/man/gen_man.py).
    {"GPUMEM_PINNED_CACHE", "1GiB",
     "a size: bytes with an optional unit K, M, G or T, or KiB, MiB, GiB, TiB (any case; powers of 1024: "
     "256M = 256MiB = 268435456); 0 turns the cache off",
     "bytes of freed pinned memory kept for reuse", parse_pinned_cache},
    {"GPUMEM_CUDA_LIBRARY", "", "a path", "the CUDA driver to load instead of libcuda.so.1", parse_cuda_library},
    {"GPUMEM_HIP_LIBRARY", "", "a path", "the HIP runtime to load instead of searching for libamdhip64",
     parse_hip_library},
    {"GPUMEM_HOST_STRICT", "0", "0 or 1",
     "1: the host backend behaves like a strict GPU (device memory faults on CPU access, stream work runs only "
     "when the program waits, freed stream-ordered memory is poisoned and held back); see docs/strict-mode.md",
     parse_host_strict},
    // Seeing and debugging memory (0.2).
    {"GPUMEM_TRACE", "", "a path (%p: the process id, %r: the MPI rank)",
     "write a Chrome-trace JSON of allocations, frees, pool growth, trims and synchronisations at gpumem_finalize or "
     "exit; a second process given the same path writes it with its pid appended",
     parse_trace},
    {"GPUMEM_TRACE_MAX", "1000000", "a positive number of events", "trace events kept in memory (the newest)",
     parse_trace_max},
    {"GPUMEM_BACKTRACE", "0", "0 or 1", "1: record each allocation's backtrace for snapshots and the trace",
     parse_backtrace},
    {"GPUMEM_LIMIT", "",
     "a size: bytes with an optional unit K, M, G or T, or KiB, MiB, GiB, TiB (any case; powers of 1024: "
     "256M = 256MiB = 268435456), or N% (1-100) of each device's memory",
     "cap on the bytes gpumem holds per device (device, managed, stream-ordered, VMM, buffers)", parse_limit},
    {"GPUMEM_POOL_PAGED", "1", "0 or 1",
     "1: gpumem's own pools of device memory give back the memory under free holes where the backend can "
     "(host backend; GPUs with VMM); 0: whole chunks",
     parse_pool_paged},
    {"GPUMEM_POOL_DECAY", "4", "whole seconds, 1 to 60",
     "a paged own pool keeps the memory its peak of the last N seconds needed; what none of them needed goes back "
     "by halves, one second apart",
     parse_pool_decay},
    // Memory that explains itself (0.4).
    {"GPUMEM_SELFTEST", "0", "0, 1 or a directory's path with a '/' in it (./cache, /var/cache/gpumem)",
     "1: at init, test each feature gpumem will rely on on each device; one that fails is GPUMEM_SUPPORT_BROKEN "
     "and falls back as if absent; a path: the same, with the results cached there per device and driver",
     parse_selftest},
};
constexpr size_t k_option_count = sizeof k_options / sizeof k_options[0];
static_assert(k_option_count <= 32, "one warned-once bit per option");

// Each malformed variable is reported once per process, not at every init.
std::atomic<uint32_t> g_warned{0};

const char *env(const char *name)
{
    // secure_getenv returns NULL in setuid/setgid processes: the environment
    // of an unprivileged caller must not steer a privileged program.
    const char *value = secure_getenv(name);
    return (value && *value) ? value : nullptr;
}

} // namespace

const char *backend_name(int32_t backend)
{
    for (const BackendName &b : k_backend_names)
        if (b.id == backend)
            return b.name;
    return "unknown";
}

const char *feature_name(Feature feature)
{
    switch (feature) {
    case feature_managed: return "managed";
    case feature_pools: return "pools";
    case feature_vmm: return "vmm";
    case feature_ipc: return "ipc";
    case feature_host_register: return "host_register";
    }
    return "unknown";
}

Options read_options()
{
    Options options;
    uint32_t malformed = 0, noted = 0;
    std::string notes[k_option_count];
    for (size_t i = 0; i < k_option_count; ++i)
        if (const char *value = env(k_options[i].name)) {
            if (!k_options[i].parse(value, options, notes[i]))
                malformed |= 1u << i;
            else if (!notes[i].empty())
                noted |= 1u << i;
        }
    // The threshold first, so that GPUMEM_LOG=error silences the warnings below.
    set_log_threshold(options.log_level);
    for (size_t i = 0; i < k_option_count; ++i) {
        uint32_t bit = 1u << i;
        if (!((malformed | noted) & bit) || (g_warned.fetch_or(bit) & bit))
            continue;
        if (malformed & bit && !notes[i].empty()) // the parser said what is wrong
            log(LogLevel::warn, "ignoring %s=\"%s\": %s; using the default", k_options[i].name,
                env(k_options[i].name), notes[i].c_str());
        else if (malformed & bit)
            log(LogLevel::warn, "ignoring %s=\"%s\": expected %s; using the default", k_options[i].name,
                env(k_options[i].name), k_options[i].expected);
        else
            log(LogLevel::warn, "%s=\"%s\": %s", k_options[i].name, env(k_options[i].name), notes[i].c_str());
    }
    return options;
}

} // namespace gpumem::detail
