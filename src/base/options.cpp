#include "base/options.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

namespace {

// Each malformed variable is reported once per process, not at every init.
std::atomic<uint32_t> g_warned{0};

void warn_once(uint32_t bit, const char *variable, const char *value, const char *expected)
{
    if (!(g_warned.fetch_or(bit) & bit))
        log(LogLevel::warn, "ignoring %s=\"%s\": expected %s; using the default", variable, value, expected);
}

const char *env(const char *name)
{
    // secure_getenv returns NULL in setuid/setgid processes: the environment
    // of an unprivileged caller must not steer a privileged program.
    const char *value = secure_getenv(name);
    return (value && *value) ? value : nullptr;
}

bool equals(const std::string &a, const char *b) { return strcasecmp(a.c_str(), b) == 0; }

std::string trimmed(std::string s)
{
    size_t begin = s.find_first_not_of(" \t");
    size_t end = s.find_last_not_of(" \t");
    return begin == std::string::npos ? std::string() : s.substr(begin, end - begin + 1);
}

} // namespace

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

    if (const char *value = env("GPUMEM_LOG")) {
        std::string v = trimmed(value);
        if (equals(v, "error")) set_log_threshold(LogLevel::error);
        else if (equals(v, "warn") || equals(v, "warning")) set_log_threshold(LogLevel::warn);
        else if (equals(v, "info")) set_log_threshold(LogLevel::info);
        else if (equals(v, "debug")) set_log_threshold(LogLevel::debug);
        else {
            set_log_threshold(LogLevel::warn);
            warn_once(1u << 0, "GPUMEM_LOG", value, "error, warn, info or debug");
        }
    } else {
        set_log_threshold(LogLevel::warn);
    }

    if (const char *value = env("GPUMEM_BACKEND")) {
        std::string v = trimmed(value);
        if (equals(v, "auto")) options.backend = GPUMEM_BACKEND_AUTO;
        else if (equals(v, "host")) options.backend = GPUMEM_BACKEND_HOST;
        else if (equals(v, "cuda")) options.backend = GPUMEM_BACKEND_CUDA;
        else if (equals(v, "hip")) options.backend = GPUMEM_BACKEND_HIP;
        else warn_once(1u << 1, "GPUMEM_BACKEND", value, "auto, host, cuda or hip");
        options.backend_forced = options.backend != GPUMEM_BACKEND_AUTO;
    }

    if (const char *value = env("GPUMEM_DISABLE")) {
        std::string list = value;
        size_t start = 0;
        while (start <= list.size()) {
            size_t comma = list.find(',', start);
            if (comma == std::string::npos)
                comma = list.size();
            std::string item = trimmed(list.substr(start, comma - start));
            start = comma + 1;
            if (item.empty()) continue;
            if (equals(item, "managed")) options.disabled |= feature_managed;
            else if (equals(item, "pools")) options.disabled |= feature_pools;
            else if (equals(item, "vmm")) options.disabled |= feature_vmm;
            else if (equals(item, "ipc")) options.disabled |= feature_ipc;
            else if (equals(item, "host_register")) options.disabled |= feature_host_register;
            else warn_once(1u << 2, "GPUMEM_DISABLE", value,
                           "a comma list of managed, pools, vmm, ipc, host_register (unknown items skipped)");
        }
    }

    if (const char *value = env("GPUMEM_FALLBACK")) {
        std::string v = trimmed(value);
        if (equals(v, "allow")) options.fallback_allowed = true;
        else if (equals(v, "deny")) options.fallback_allowed = false;
        else warn_once(1u << 3, "GPUMEM_FALLBACK", value, "allow or deny");
    }

    if (const char *value = env("GPUMEM_PINNED_CACHE")) {
        char *end = nullptr;
        errno = 0;
        unsigned long long bytes = std::strtoull(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-')
            warn_once(1u << 4, "GPUMEM_PINNED_CACHE", value, "a number of bytes (0 turns the cache off)");
        else
            options.pinned_cache_bytes = bytes;
    }

    options.cuda_library = env("GPUMEM_CUDA_LIBRARY");
    options.hip_library = env("GPUMEM_HIP_LIBRARY");
    return options;
}

} // namespace gpumem::detail
