#include "base/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace gpumem::detail {

namespace {
// Long enough for a message naming a call, its arguments and the remedy, and
// for the state of memory that every OUT_OF_MEMORY message carries
// (core/inspect).  On the heap: the library's static TLS must stay small, as
// it may be dlopen'ed (by Python, for one) into a process whose static TLS
// space is nearly full; 256 bytes of TLS serve if the heap is exhausted.
constexpr size_t k_capacity = 4096;
constexpr size_t k_fallback_capacity = 256;
thread_local std::unique_ptr<char[]> t_heap_message;
thread_local char t_fallback_message[k_fallback_capacity] = "";

char *message_buffer(size_t *capacity)
{
    if (!t_heap_message) {
        t_heap_message.reset(new (std::nothrow) char[k_capacity]());
        if (t_heap_message)
            std::snprintf(t_heap_message.get(), k_capacity, "%s", t_fallback_message);
    }
    if (t_heap_message) {
        *capacity = k_capacity;
        return t_heap_message.get();
    }
    *capacity = k_fallback_capacity;
    return t_fallback_message;
}
} // namespace

status_t fail(status_t status, const char *fmt, ...)
{
    size_t capacity = 0;
    char *message = message_buffer(&capacity);
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(message, capacity, fmt, ap);
    va_end(ap);
    return status;
}

void prefix_error(const char *context)
{
    size_t capacity = 0;
    char *message = message_buffer(&capacity);
    // Shift the message right and write "context: " in front (truncating the tail).
    size_t head = strnlen(context, 200) + 2;
    if (head >= capacity)
        return;
    size_t tail = strnlen(message, capacity - 1);
    if (tail > capacity - 1 - head)
        tail = capacity - 1 - head;
    std::memmove(message + head, message, tail);
    message[head + tail] = '\0';
    std::memcpy(message, context, head - 2);
    message[head - 2] = ':';
    message[head - 1] = ' ';
}

const char *last_error_message() { return t_heap_message ? t_heap_message.get() : t_fallback_message; }

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
