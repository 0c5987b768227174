#include "core/limit.hpp"

#include <atomic>
#include <cinttypes>

#include "base/sharing.hpp"
#include "core/devices.hpp"
#include "core/pointers.hpp" // kind_name, for the messages

namespace gpumem::detail::limit {

namespace {

// Devices past this many are not capped (no machine has that many).
constexpr int32_t k_max_devices = 256;

struct alignas(k_false_sharing_range) DeviceCap {
    std::atomic<int64_t> held{0};
    std::atomic<uint64_t> cap{0}; // 0: no cap on this device
};
DeviceCap g_caps[k_max_devices];

DeviceCap *cap_of(int32_t device)
{
    return device >= 0 && device < k_max_devices ? &g_caps[device] : nullptr;
}

} // namespace

bool counts(int32_t kind)
{
    switch (kind) {
    case GPUMEM_KIND_DEVICE:
    case GPUMEM_KIND_MANAGED:
    case GPUMEM_KIND_STREAM_ORDERED:
    case GPUMEM_KIND_VIRTUAL:
    case GPUMEM_KIND_BUFFER: return true;
    default: return false;
    }
}

void configure(const Options &o, const Devices &devices)
{
    stop();
    if (!o.limit_bytes && !o.limit_percent)
        return;
    for (int32_t d = 0; d < devices.count() && d < k_max_devices; ++d) {
        uint64_t total = devices[d].caps.total_memory;
        uint64_t cap = o.limit_percent ? total / 100 * o.limit_percent + total % 100 * o.limit_percent / 100
                                       : o.limit_bytes;
        g_caps[d].cap.store(cap ? cap : 1, std::memory_order_relaxed); // 0% still caps: nothing fits
        log(LogLevel::info, "GPUMEM_LIMIT: device %d capped at %" PRIu64 " bytes", d, cap);
    }
    set_watcher(watch_limit, true);
}

void stop()
{
    set_watcher(watch_limit, false);
    for (DeviceCap &c : g_caps) {
        c.held.store(0, std::memory_order_relaxed);
        c.cap.store(0, std::memory_order_relaxed);
    }
}

uint64_t cap(int32_t device)
{
    DeviceCap *c = cap_of(device);
    return c ? c->cap.load(std::memory_order_relaxed) : 0;
}

uint64_t held(int32_t device)
{
    DeviceCap *c = cap_of(device);
    int64_t h = c ? c->held.load(std::memory_order_relaxed) : 0;
    return h > 0 ? uint64_t(h) : 0;
}

status_t check_slow(int32_t kind, int32_t device, size_t bytes)
{
    DeviceCap *c = cap_of(device);
    if (!c || !counts(kind))
        return GPUMEM_SUCCESS;
    uint64_t limit = c->cap.load(std::memory_order_relaxed);
    uint64_t now = held(device);
    if (!limit || (bytes <= limit && now <= limit - bytes))
        return GPUMEM_SUCCESS;
    return fail(GPUMEM_ERROR_OUT_OF_MEMORY,
                "cannot allocate %zu bytes of %s on device %d: gpumem holds %" PRIu64
                " bytes there and GPUMEM_LIMIT caps it at %" PRIu64 " bytes; free memory or raise GPUMEM_LIMIT",
                bytes, kind_name(kind), device, now, limit);
}

void on_alloc(int32_t kind, int32_t device, uint64_t bytes)
{
    if (DeviceCap *c = cap_of(device); c && counts(kind))
        c->held.fetch_add(int64_t(bytes), std::memory_order_relaxed);
}

void on_free(int32_t kind, int32_t device, uint64_t bytes)
{
    if (DeviceCap *c = cap_of(device); c && counts(kind))
        c->held.fetch_sub(int64_t(bytes), std::memory_order_relaxed);
}

} // namespace gpumem::detail::limit
