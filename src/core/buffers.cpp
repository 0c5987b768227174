#include "core/buffers.hpp"

#include "core/limit.hpp"
#include "core/runtime.hpp"
#include "core/stats.hpp"

namespace gpumem::detail {

BufferTable &buffer_table() { static BufferTable table; return table; }

namespace buffers {

namespace {

size_t round_up(size_t n, size_t g) { return (n + g - 1) / g * g; }

status_t resolve(gpumem_buffer_t buffer, BufferObject **out)
{
    BufferObject *b = buffer ? buffer_table().get(handle_bits(buffer)) : nullptr;
    if (!b)
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "buffer %p is not a live gpumem buffer (destroyed, never created, "
                    "or from before gpumem_finalize)", static_cast<void *>(buffer));
    *out = b;
    return GPUMEM_SUCCESS;
}

// VMM: map physical memory so that [base, base + bytes) is backed.
status_t vmm_grow(Runtime &rt, BufferObject &b, size_t bytes)
{
    size_t target = round_up(bytes, b.granularity);
    if (target <= b.mapped)
        return GPUMEM_SUCCESS;
    size_t chunk = target - b.mapped;
    void *phys = nullptr;
    if (status_t st = rt.backend->vmm_create(b.device, chunk, 0, &phys))
        return st;
    void *at = static_cast<char *>(b.base) + b.mapped;
    status_t st = rt.backend->vmm_map(b.device, at, chunk, 0, phys);
    if (st == GPUMEM_SUCCESS) {
        st = rt.backend->vmm_set_access(b.device, at, chunk, b.device, GPUMEM_ACCESS_READWRITE);
        if (st != GPUMEM_SUCCESS)
            rt.backend->vmm_unmap(b.device, at, chunk);
    }
    if (st != GPUMEM_SUCCESS) {
        rt.backend->vmm_release(b.device, phys);
        return st;
    }
    b.chunks.push_back(BufferChunk{phys, b.mapped, chunk});
    b.mapped = target;
    return GPUMEM_SUCCESS;
}

// VMM: give back whole chunks that lie past `bytes`.
status_t vmm_shrink(Runtime &rt, BufferObject &b, size_t bytes)
{
    while (!b.chunks.empty() && b.chunks.back().offset >= bytes) {
        BufferChunk c = b.chunks.back();
        if (status_t st = rt.backend->vmm_unmap(b.device, static_cast<char *>(b.base) + c.offset, c.size))
            return st;
        rt.backend->vmm_release(b.device, c.phys);
        b.chunks.pop_back();
        b.mapped = c.offset;
    }
    return GPUMEM_SUCCESS;
}

// Fallback: allocate, copy what survives, free the old.
status_t move_to_new_allocation(Runtime &rt, BufferObject &b, size_t new_size)
{
    void *fresh = nullptr;
    if (new_size > 0)
        if (status_t st = rt.backend->device_alloc(b.device, new_size, &fresh))
            return st;
    size_t keep = b.size < new_size ? b.size : new_size;
    if (keep > 0)
        if (status_t st = rt.backend->copy(b.device, fresh, b.base, keep, nullptr, false)) {
            rt.backend->device_free(b.device, fresh, new_size);
            return st;
        }
    if (b.base)
        rt.backend->device_free(b.device, b.base, b.capacity);
    b.base = fresh;
    b.capacity = new_size;
    return GPUMEM_SUCCESS;
}

// Everything the buffer holds goes back (destroy and finalize).
status_t give_back(Runtime &rt, BufferObject &b)
{
    status_t st = GPUMEM_SUCCESS;
    if (b.vmm) {
        st = vmm_shrink(rt, b, 0);
        if (st == GPUMEM_SUCCESS)
            st = rt.backend->vmm_free(b.device, b.base, b.reserved);
    } else if (b.base) {
        st = rt.backend->device_free(b.device, b.base, b.capacity);
    }
    return st;
}

void register_data(Runtime &rt, BufferObject &b, uint64_t handle)
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
    rt.pointers.record(a);
}

void unregister_data(Runtime &rt, BufferObject &b)
{
    Allocation gone;
    if (b.base)
        rt.pointers.take(b.base, [](const Allocation &a) { return a.kind == GPUMEM_KIND_BUFFER; }, &gone);
}

} // namespace

status_t create(Runtime &rt, gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device)
{
    if (status_t st = check_device(rt, device))
        return st;
    const DeviceState &dev = *rt.devices[device];
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
                    rt.disabled(feature_vmm) ? "disabled by GPUMEM_DISABLE" : "not supported", device);
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
    b->reserved = b->mapped = b->capacity = 0;
    b->chunks.clear();
    status_t st = GPUMEM_SUCCESS;
    if (vmm) {
        b->granularity = dev.caps.vmm_granularity;
        if (max_size > SIZE_MAX - b->granularity)
            st = fail(GPUMEM_ERROR_OUT_OF_MEMORY, "max_size %zu cannot be reserved", max_size);
        else
            b->reserved = round_up(max_size, b->granularity);
        if (st == GPUMEM_SUCCESS)
            st = rt.backend->vmm_reserve(b->device, b->reserved, 0, nullptr, &b->base);
        if (st == GPUMEM_SUCCESS && (st = vmm_grow(rt, *b, size)) != GPUMEM_SUCCESS) {
            rt.backend->vmm_free(b->device, b->base, b->reserved);
            b->base = nullptr;
        }
    } else {
        st = move_to_new_allocation(rt, *b, size);
    }
    if (st != GPUMEM_SUCCESS)
        return st;
    if (!vmm)
        note_fallback(rt, feature_vmm, device, "growable buffers allocate, copy and free on resize, so their "
                      "address may change");
    b->size = size;
    register_data(rt, *b, handle);
    account_alloc(GPUMEM_KIND_BUFFER, b->base, size, device, !vmm);
    *buffer = handle_from_bits<gpumem_buffer_t>(reservation.publish());
    return GPUMEM_SUCCESS;
}

status_t resize(Runtime &rt, gpumem_buffer_t buffer, size_t new_size)
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
        status_t st = new_size > old_size ? vmm_grow(rt, *b, new_size) : vmm_shrink(rt, *b, new_size);
        if (st)
            return st;
        rt.pointers.resize(b->base, new_size);
    } else if (new_size != old_size) {
        unregister_data(rt, *b);
        status_t st = move_to_new_allocation(rt, *b, new_size);
        if (st) {
            register_data(rt, *b, handle_bits(buffer));
            return st;
        }
        b->size = new_size;
        register_data(rt, *b, handle_bits(buffer));
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

status_t destroy(Runtime &rt, gpumem_buffer_t buffer)
{
    BufferObject *b = nullptr;
    if (status_t st = resolve(buffer, &b))
        return st;
    std::unique_lock<std::mutex> lock(b->mutex);
    if (!buffer_table().retire(handle_bits(buffer)))
        return fail(GPUMEM_ERROR_INVALID_HANDLE, "buffer %p was destroyed by another thread", static_cast<void *>(buffer));
    unregister_data(rt, *b);
    status_t st = give_back(rt, *b);
    account_free(GPUMEM_KIND_BUFFER, b->base, b->size, b->device, !b->vmm);
    b->base = nullptr;
    b->size = 0;
    lock.unlock();
    buffer_table().recycle(handle_bits(buffer));
    return st;
}

void release_all(Runtime &rt, size_t *leaked)
{
    for (uint64_t h : buffer_table().live_handles()) {
        BufferObject *b = buffer_table().get(h);
        if (!b)
            continue;
        ++*leaked;
        if (b->vmm) {
            for (const BufferChunk &c : b->chunks) {
                rt.backend->vmm_unmap(b->device, static_cast<char *>(b->base) + c.offset, c.size);
                rt.backend->vmm_release(b->device, c.phys);
            }
            rt.backend->vmm_free(b->device, b->base, b->reserved);
        } else if (b->base) {
            rt.backend->device_free(b->device, b->base, b->capacity);
        }
        b->chunks.clear();
        buffer_table().destroy(h);
    }
}

} // namespace buffers
} // namespace gpumem::detail
