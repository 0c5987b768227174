// One-line messages to stderr, prefixed "gpumem:", filtered by GPUMEM_LOG.
#pragma once

namespace gpumem::detail {

enum class LogLevel : int { error = 0, warn = 1, info = 2, debug = 3 };

// The threshold, set from GPUMEM_LOG by the options module.
void set_log_threshold(LogLevel level);
bool log_enabled(LogLevel level);
void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace gpumem::detail
