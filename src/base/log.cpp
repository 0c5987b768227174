#include "base/log.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace gpumem::detail {

namespace {
std::atomic<int> g_threshold{static_cast<int>(LogLevel::warn)};
const char *const k_level_names[] = {"error", "warn", "info", "debug"};
} // namespace

void set_log_threshold(LogLevel level) { g_threshold.store(static_cast<int>(level), std::memory_order_relaxed); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_threshold.load(std::memory_order_relaxed); }

void log(LogLevel level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    // One write per line so that lines from several threads never interleave.
    std::fprintf(stderr, "gpumem: %s: %s\n", k_level_names[static_cast<int>(level)], line);
}

} // namespace gpumem::detail
