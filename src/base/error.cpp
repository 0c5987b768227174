#include "base/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace gpumem::detail {

namespace {
// Long enough for a message naming a call, its arguments and the remedy, and
// for the state of memory that every OUT_OF_MEMORY message carries (core/inspect).
thread_local char t_message[4096] = "";
} // namespace

status_t fail(status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(t_message, sizeof t_message, fmt, ap);
    va_end(ap);
    return status;
}

void prefix_error(const char *context)
{
    // Shift the message right and write "context: " in front (truncating the tail).
    size_t head = strnlen(context, 200) + 2;
    size_t tail = strnlen(t_message, sizeof t_message - 1);
    if (tail > sizeof t_message - 1 - head)
        tail = sizeof t_message - 1 - head;
    std::memmove(t_message + head, t_message, tail);
    t_message[head + tail] = '\0';
    std::memcpy(t_message, context, head - 2);
    t_message[head - 2] = ':';
    t_message[head - 1] = ' ';
}

const char *last_error_message() { return t_message; }

const char *status_name(status_t status)
{
    switch (status) {
    case GPUMEM_SUCCESS: return "GPUMEM_SUCCESS";
    case GPUMEM_ERROR_INVALID_VALUE: return "GPUMEM_ERROR_INVALID_VALUE";
    case GPUMEM_ERROR_OUT_OF_MEMORY: return "GPUMEM_ERROR_OUT_OF_MEMORY";
    case GPUMEM_ERROR_NOT_SUPPORTED: return "GPUMEM_ERROR_NOT_SUPPORTED";
    case GPUMEM_ERROR_NO_DEVICE: return "GPUMEM_ERROR_NO_DEVICE";
    case GPUMEM_ERROR_INVALID_DEVICE: return "GPUMEM_ERROR_INVALID_DEVICE";
    case GPUMEM_ERROR_INVALID_POINTER: return "GPUMEM_ERROR_INVALID_POINTER";
    case GPUMEM_ERROR_INVALID_HANDLE: return "GPUMEM_ERROR_INVALID_HANDLE";
    case GPUMEM_ERROR_BACKEND_UNAVAILABLE: return "GPUMEM_ERROR_BACKEND_UNAVAILABLE";
    case GPUMEM_ERROR_BACKEND: return "GPUMEM_ERROR_BACKEND";
    case GPUMEM_ERROR_IPC: return "GPUMEM_ERROR_IPC";
    case GPUMEM_ERROR_BUSY: return "GPUMEM_ERROR_BUSY";
    default: return "GPUMEM_ERROR_UNKNOWN";
    }
}

} // namespace gpumem::detail
