#include "core/managed.hpp"

#include <memory>
#include <mutex>
#include <string>

#include "core/capture.hpp"
#include "core/limit.hpp"
#include "core/devices.hpp"
#include "core/pinned.hpp"
#include "core/pointers.hpp"
#include "core/streams.hpp"

namespace gpumem::detail {

namespace {

// Emulated managed memory: one pointer valid on host and device, on every device.
constexpr uint32_t k_emulation_flags = GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE;

int64_t location_bit(int32_t device) { return int64_t{1} << (device + 1); }

} // namespace

status_t Managed::find_range(const void *ptr, size_t count, managed::Range *out) const
{
    if (!ptr)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "ptr is NULL");
    if (count == 0)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "count is 0: give the number of bytes of the range");
    Allocation a;
    if (!pointers_.find_record(ptr, &a) || a.kind != GPUMEM_KIND_MANAGED)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not managed memory (gpumem_managed_alloc)", ptr);
    size_t off = reinterpret_cast<uintptr_t>(ptr) - a.base;
    if (count > a.size - off)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "range %p + %zu bytes runs past the end of the managed allocation at %p "
                    "of %zu bytes", ptr, count, reinterpret_cast<void *>(a.base), a.size);
    out->attrs = a.managed;
    out->offset = off;
    out->emulated = a.emulated;
    return GPUMEM_SUCCESS;
}

status_t Managed::check_location(int32_t device) const
{
    if (device == GPUMEM_DEVICE_HOST)
        return GPUMEM_SUCCESS;
    return devices_.check(device);
}

void managed::note_prefetch(const Range &range, size_t count, int32_t device)
{
    std::lock_guard<std::mutex> lock(range.attrs->mutex);
    range.attrs->last_prefetch.set(range.offset, range.offset + count, device);
}

status_t Managed::alloc(size_t size, uint32_t flags, void **ptr)
{
    int32_t device = current_device();
    if (status_t st = devices_.check(device))
        return st;
    int32_t level = devices_[device].managed_level;
    if (level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "managed memory is %s on device %d and GPUMEM_FALLBACK=deny refuses to emulate it with mapped "
                    "pinned memory", devices_.why_absent(feature_managed, device),
                    device);
    if (status_t st = limit::check(GPUMEM_KIND_MANAGED, device, size))
        return st;
    Allocation a;
    a.kind = GPUMEM_KIND_MANAGED;
    a.device = device;
    a.size = size;
    a.flags = flags;
    a.managed = std::make_shared<ManagedAttributes>();
    a.managed->attach_flags = flags;
    void *p = nullptr;
    if (level == GPUMEM_SUPPORT_NATIVE) {
        if (status_t st = runtime_.managed_alloc(device, size, flags, &p))
            return st;
        a.device_pointer = p;
    } else {
        // One pointer valid on host and device: mapped, portable pinned memory.
        if (status_t st = pinned_.alloc_mapped(size, k_emulation_flags, &p, &a.device_pointer))
            return st;
        a.emulated = true;
        devices_.note_fallback(feature_managed, device, "emulating managed memory with mapped pinned host memory");
    }
    a.base = reinterpret_cast<uintptr_t>(p);
    pointers_.record_new(a);
    *ptr = p;
    return GPUMEM_SUCCESS;
}

status_t Managed::release(const Allocation &a, bool finalizing)
{
    if (a.emulated)
        return pinned_.release(a, k_emulation_flags, finalizing);
    return runtime_.managed_free(a.device, reinterpret_cast<void *>(a.base), a.size);
}

// Prefetch and advice are hints.  A device whose managed pages do not
// migrate on access (CUDA without concurrent managed access, AMD without
// XNACK) cannot take a hint placed on it: its runtime refuses or ignores it,
// and the pages move at first use anyway.  The core skips such a hint, or
// takes the runtime's refusal of one as done, and says so at debug level, so
// a program runs the same on every device.
namespace {


bool refused_as_hint(status_t st)
{
    return st == GPUMEM_ERROR_NOT_SUPPORTED || st == GPUMEM_ERROR_INVALID_VALUE || st == GPUMEM_ERROR_INVALID_DEVICE;
}

} // namespace

bool Managed::pages_stay(int32_t device) const
{
    return device >= 0 && device < devices_.count() && !devices_[device].caps.managed_migrates;
}

status_t Managed::prefetch_range(int32_t device, const void *ptr, size_t count, int32_t target, void *stream)
{
    if (pages_stay(target)) {
        log(LogLevel::debug, "prefetch of %zu bytes at %p to device %d skipped: its managed pages do not migrate",
            count, ptr, target);
        return GPUMEM_SUCCESS;
    }
    return runtime_.prefetch(device, ptr, count, target, stream);
}

status_t Managed::prefetch(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream)
{
    managed::Range range;
    if (status_t st = find_range(ptr, count, &range))
        return st;
    if (status_t st = check_location(device))
        return st;
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    // Emulated managed memory lives in host memory: nothing moves.
    if (!range.emulated) {
        // The runtimes cannot record a prefetch in a graph (probe: refused, capture invalidated).
        if (status_t st = capture_.refuse_if_capturing(s->state, "a prefetch of managed memory"))
            return st;
        if (status_t st = prefetch_range(s->state.device, ptr, count, device, s->state.native))
            return st;
    }
    note_prefetch(range, count, device);
    return GPUMEM_SUCCESS;
}

status_t Managed::advise(const void *ptr, size_t count, int32_t advice, int32_t device)
{
    managed::Range range;
    if (status_t st = find_range(ptr, count, &range))
        return st;
    const std::shared_ptr<ManagedAttributes> &attrs = range.attrs;
    const size_t offset = range.offset;
    const bool emulated = range.emulated;
    switch (advice) {
    case GPUMEM_ADVISE_SET_READ_MOSTLY:
    case GPUMEM_ADVISE_UNSET_READ_MOSTLY:
    case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION:
        break; // the device is ignored, as by the vendors
    case GPUMEM_ADVISE_SET_PREFERRED_LOCATION:
    case GPUMEM_ADVISE_SET_ACCESSED_BY:
    case GPUMEM_ADVISE_UNSET_ACCESSED_BY:
        if (status_t st = check_location(device))
            return st;
        break;
    case GPUMEM_ADVISE_SET_COARSE_GRAIN:
    case GPUMEM_ADVISE_UNSET_COARSE_GRAIN:
        // Only managed memory with coherence grains takes it (the current
        // device's, where the runtime applies it): accepted elsewhere and without effect.
        if (emulated || !devices_[current_device()].caps.coarse_grain_advice)
            return GPUMEM_SUCCESS;
        break;
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "advice %d is not a GPUMEM_ADVISE_* value", advice);
    }
    if (!emulated) {
        // Advice placed on a device (a location or an accessor) names it; the
        // rest applies where the runtime puts it, the current device.
        const bool located = advice == GPUMEM_ADVISE_SET_PREFERRED_LOCATION || advice == GPUMEM_ADVISE_SET_ACCESSED_BY ||
                             advice == GPUMEM_ADVISE_UNSET_ACCESSED_BY;
        const int32_t on = located ? device : current_device();
        if (located && pages_stay(on)) {
            log(LogLevel::debug, "advice %d for device %d skipped: its managed pages do not migrate", advice, on);
        } else {
            capture::Relaxed relaxed(capture_); // advice is no stream work: it must invalidate no capture
            const std::string kept = last_error_message();
            status_t st = runtime_.advise(current_device(), ptr, count, advice, device);
            if (st != GPUMEM_SUCCESS && pages_stay(on) && refused_as_hint(st)) {
                log(LogLevel::debug, "advice %d refused where managed pages do not migrate (%s): skipped", advice,
                    last_error_message());
                fail(GPUMEM_SUCCESS, "%s", kept.c_str());
                st = GPUMEM_SUCCESS;
            }
            if (st != GPUMEM_SUCCESS)
                return st;
        }
    }
    std::lock_guard<std::mutex> lock(attrs->mutex);
    size_t end = offset + count;
    switch (advice) {
    case GPUMEM_ADVISE_SET_READ_MOSTLY: attrs->read_mostly.set(offset, end, 1); break;
    case GPUMEM_ADVISE_UNSET_READ_MOSTLY: attrs->read_mostly.set(offset, end, 0); break;
    case GPUMEM_ADVISE_SET_PREFERRED_LOCATION: attrs->preferred_location.set(offset, end, device); break;
    case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION:
        attrs->preferred_location.set(offset, end, GPUMEM_LOCATION_INVALID);
        break;
    case GPUMEM_ADVISE_SET_ACCESSED_BY:
        attrs->accessed_by.update(offset, end, [&](int64_t v) { return v | location_bit(device); });
        break;
    case GPUMEM_ADVISE_UNSET_ACCESSED_BY:
        attrs->accessed_by.update(offset, end, [&](int64_t v) { return v & ~location_bit(device); });
        break;
    default: break;
    }
    return GPUMEM_SUCCESS;
}

status_t Managed::range_attribute(void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count) const
{
    managed::Range range;
    if (status_t st = find_range(ptr, count, &range))
        return st;
    const std::shared_ptr<ManagedAttributes> &attrs = range.attrs;
    const size_t offset = range.offset;
    std::lock_guard<std::mutex> lock(attrs->mutex);
    size_t end = offset + count;
    int32_t *out = static_cast<int32_t *>(data);
    int64_t v = 0;
    switch (attribute) {
    case GPUMEM_RANGE_READ_MOSTLY:
        *out = attrs->read_mostly.all_of(offset, end) ? 1 : 0;
        break;
    case GPUMEM_RANGE_PREFERRED_LOCATION:
        *out = attrs->preferred_location.uniform(offset, end, &v) ? static_cast<int32_t>(v) : GPUMEM_LOCATION_INVALID;
        break;
    case GPUMEM_RANGE_LAST_PREFETCH_LOCATION:
        *out = attrs->last_prefetch.uniform(offset, end, &v) ? static_cast<int32_t>(v) : GPUMEM_LOCATION_INVALID;
        break;
    case GPUMEM_RANGE_ACCESSED_BY: {
        int64_t mask = attrs->accessed_by.all_of(offset, end);
        size_t slots = data_size / sizeof(int32_t), n = 0;
        for (int32_t d = GPUMEM_DEVICE_HOST; d < devices_.count() && n < slots; ++d)
            if (mask & location_bit(d))
                out[n++] = d;
        for (; n < slots; ++n)
            out[n] = GPUMEM_LOCATION_INVALID;
        break;
    }
    }
    return GPUMEM_SUCCESS;
}

status_t Managed::attach(gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags)
{
    StreamObject *s = nullptr;
    if (status_t st = resolve_stream(devices_, stream, &s))
        return st;
    Allocation a;
    if (!pointers_.find_record_base(ptr, &a) || a.kind != GPUMEM_KIND_MANAGED)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is not the start of a managed allocation", ptr);
    if (length != 0 && length != a.size)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "length %zu: managed memory attaches whole (give 0 or the allocation's size %zu)", length, a.size);
    if (!a.emulated) {
        // Not recordable in a graph either (probe: refused, capture invalidated).
        if (status_t st = capture_.refuse_if_capturing(s->state, "attaching managed memory to a stream"))
            return st;
        if (status_t st = runtime_.stream_attach(s->state.device, s->state.native, ptr, a.size, flags))
            return st;
    }
    std::lock_guard<std::mutex> lock(a.managed->mutex);
    a.managed->attach_flags = flags;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail
