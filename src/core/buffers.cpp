#include "core/buffers.hpp"

#include "core/devices.hpp"
#include "core/limit.hpp"
#include "core/pointers.hpp"
#include "core/stats.hpp"

namespace gpumem::detail {

BufferTable &buffer_table() { static BufferTable table; return table; }

namespace {

status_t resolve(gpumem_buffer_t buffer, BufferObject **out)
{
    BufferObject *b = buffer ? buffer_table().get(handle_bits(buffer)) : nullptr;
    if (!b)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "buffer %p is not a live gpumem buffer (destroyed, never created, "
                    "or from before gpumem_finalize)", static_cast<void *>(buffer));
    *out = b;
    return GPUMEM_SUCCESS;
}

} // namespace

// Fallback: allocate, copy what survives, free the old.
status_t Buffers::move_to_new_allocation(BufferObject &b, size_t new_size)
{
    void *fresh = nullptr;
    if (new_size > 0)
        if (status_t st = memory_->device_alloc(b.device, new_size, &fresh))
            return st;
    size_t keep = b.size < new_size ? b.size : new_size;
    if (keep > 0)
        if (status_t st = memory_->copy(b.device, fresh, b.base, keep, nullptr, CopyMode::sync)) {
            memory_->device_free(b.device, fresh, new_size);
            return st;
        }
    if (b.base)
        memory_->device_free(b.device, b.base, b.capacity);
    b.base = fresh;
    b.capacity = new_size;
    return GPUMEM_SUCCESS;
}

// Everything the buffer holds goes back (destroy).
status_t Buffers::give_back(BufferObject &b)
{
    if (b.vmm)
        return vmm_.release(b.range);
    if (b.base)
        return memory_->device_free(b.device, b.base, b.capacity);
    return GPUMEM_SUCCESS;
}

void Buffers::register_data(BufferObject &b, uint64_t handle)
{
    if (!b.base)
        return;
    Allocation a;
    a.base = reinterpret_cast<uintptr_t>(b.base);
    a.size = b.size;
    a.kind = GPUMEM_KIND_BUFFER;
    a.device = b.device;
    a.emulated = !b.vmm;
    a.device_pointer = b.base;
    a.owner = handle;
    pointers_.record(a);
}

void Buffers::unregister_data(BufferObject &b)
{
    Allocation gone;
    if (b.base)
        pointers_.take(b.base, [](const Allocation &a) { return a.kind == GPUMEM_KIND_BUFFER; }, &gone);
}

status_t Buffers::create(gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device)
{
    if (status_t st = devices_.check(device))
        return st;
    const DeviceState &dev = devices_[device];
    if (max_size == 0)
        max_size = dev.caps.total_memory;
    if (size > max_size)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "size %zu is larger than max_size %zu", size, max_size);
    bool vmm = dev.vmm_level == GPUMEM_SUPPORT_NATIVE;
    if (status_t st = limit::check(GPUMEM_KIND_BUFFER, device, size))
        return st;
    if (dev.vmm_level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "virtual memory management is %s on device %d and GPUMEM_FALLBACK=deny refuses the "
                    "allocate-copy-free fallback for growable buffers",
                    devices_.disabled(feature_vmm) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
    // Published once filled; an error below gives the slot back unpublished.
    BufferTable::Reservation reservation(buffer_table());
    const uint64_t handle = reservation.handle();
    BufferObject *b = &reservation.object();
    std::lock_guard<std::mutex> lock(b->mutex);
    b->device = device;
    b->size = 0;
    b->max_size = max_size;
    b->vmm = vmm;
    b->base = nullptr;
    b->range = GrowableRange{};
    b->capacity = 0;
    status_t st = vmm ? vmm_.reserve_growable(device, max_size, size, &b->range)
                      : move_to_new_allocation(*b, size);
    if (st != GPUMEM_SUCCESS)
        return st;
    if (vmm)
        b->base = b->range.base;
    if (!vmm)
        devices_.note_fallback(feature_vmm, device, "growable buffers allocate, copy and free on resize, so their "
                      "address may change");
    b->size = size;
    register_data(*b, handle);
    account_alloc(GPUMEM_KIND_BUFFER, b->base, size, device, !vmm);
    *buffer = handle_from_bits<gpumem_buffer_t>(reservation.publish());
    return GPUMEM_SUCCESS;
}

status_t Buffers::resize(gpumem_buffer_t buffer, size_t new_size)
{
    BufferObject *b = nullptr;
    if (status_t st = resolve(buffer, &b))
        return st;
    std::lock_guard<std::mutex> lock(b->mutex);
    if (new_size > b->max_size)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "new_size %zu is larger than the buffer's max_size %zu", new_size,
                    b->max_size);
    size_t old_size = b->size;
    void *old_base = b->base;
    if (new_size > old_size)
        if (status_t st = limit::check(GPUMEM_KIND_BUFFER, b->device, new_size - old_size))
            return st;
    if (b->vmm) {
        status_t st = new_size > old_size ? vmm_.grow(b->range, new_size) : vmm_.shrink(b->range, new_size);
        if (st)
            return st;
        if (b->range.base == b->base) {
            pointers_.resize(b->base, new_size);
        } else { // moved: its reservation was smaller than max_size (Vmm::reserve_room)
            unregister_data(*b);
            b->base = b->range.base;
            b->size = new_size;
            register_data(*b, handle_bits(buffer));
        }
    } else if (new_size != old_size) {
        unregister_data(*b);
        status_t st = move_to_new_allocation(*b, new_size);
        if (st) {
            register_data(*b, handle_bits(buffer));
            return st;
        }
        b->size = new_size;
        register_data(*b, handle_bits(buffer));
    }
    b->size = new_size;
    // A resize counts as a free of the old extent and an allocation of the new
    // one, in the statistics and the trace alike.
    if (new_size != old_size) {
        account_free(GPUMEM_KIND_BUFFER, old_base, old_size, b->device, !b->vmm);
        account_alloc(GPUMEM_KIND_BUFFER, b->base, new_size, b->device, !b->vmm);
    }
    return GPUMEM_SUCCESS;
}

namespace buffers {

status_t data(gpumem_buffer_t buffer, void **ptr)
{
    BufferObject *b = nullptr;
    if (status_t st = resolve(buffer, &b))
        return st;
    std::lock_guard<std::mutex> lock(b->mutex);
    *ptr = b->base;
    return GPUMEM_SUCCESS;
}

status_t size(gpumem_buffer_t buffer, size_t *size)
{
    BufferObject *b = nullptr;
    if (status_t st = resolve(buffer, &b))
        return st;
    std::lock_guard<std::mutex> lock(b->mutex);
    *size = b->size;
    return GPUMEM_SUCCESS;
}

} // namespace buffers

status_t Buffers::destroy(gpumem_buffer_t buffer)
{
    BufferObject *b = nullptr;
    if (status_t st = resolve(buffer, &b))
        return st;
    std::unique_lock<std::mutex> lock(b->mutex);
    if (!buffer_table().retire(handle_bits(buffer)))
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "buffer %p was destroyed by another thread", static_cast<void *>(buffer));
    unregister_data(*b);
    status_t st = give_back(*b);
    account_free(GPUMEM_KIND_BUFFER, b->base, b->size, b->device, !b->vmm);
    b->base = nullptr;
    b->size = 0;
    lock.unlock();
    buffer_table().recycle(handle_bits(buffer));
    return st;
}

void Buffers::release_all(size_t *leaked)
{
    for (uint64_t h : buffer_table().live_handles()) {
        BufferObject *b = buffer_table().get(h);
        if (!b)
            continue;
        ++*leaked;
        if (b->vmm)
            vmm_.discard(b->range);
        else if (b->base)
            memory_->device_free(b->device, b->base, b->capacity);
        buffer_table().destroy(h);
    }
}

} // namespace gpumem::detail
