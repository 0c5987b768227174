// Status codes and the thread-local last-error message.
// A leaf module: every layer may report failures through it.
#pragma once

#include <cstdint>

#include "gpumem/gpumem.h"

namespace gpumem::detail {

using status_t = gpumem_status_t;

// Record a failure for the calling thread and return its status, so that
// `return fail(GPUMEM_ERROR_INVALID_VALUE, "...", ...);` reads naturally.
// The message says what was asked, what failed and what to do.
status_t fail(status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Prefix the current last-error message with context ("gpumem_malloc: ...").
void prefix_error(const char *context);

const char *last_error_message();
const char *status_name(status_t status);

} // namespace gpumem::detail
