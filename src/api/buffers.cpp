// Growable buffers (core/buffers: VMM growth, or the allocate-copy-free fallback).
#include "api/entry.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT gpumem_status_t gpumem_buffer_create(gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_buffer_create");
    return entry("gpumem_buffer_create", [&](Runtime &rt) {
        GPUMEM_REQUIRE(buffer, "buffer is NULL: pass the address of a gpumem_buffer_t");
        const status_t st = rt.buffers.create(buffer, size, max_size, device);
        return device < 0 ? oom::note_current(st, GPUMEM_KIND_BUFFER, size)
                          : oom::note(st, device, GPUMEM_KIND_BUFFER, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_buffer_resize(gpumem_buffer_t buffer, size_t new_size)
{
    GPUMEM_RECORD_CALL_SITE("gpumem_buffer_resize");
    return entry("gpumem_buffer_resize", [&](Runtime &rt) {
        return oom::note_current(rt.buffers.resize(buffer, new_size), GPUMEM_KIND_BUFFER, new_size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_buffer_data(gpumem_buffer_t buffer, void **ptr)
{
    return entry("gpumem_buffer_data", [&](Runtime &) {
        GPUMEM_REQUIRE(ptr, "ptr is NULL: pass the address of a pointer");
        return buffers::data(buffer, ptr);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_buffer_size(gpumem_buffer_t buffer, size_t *size)
{
    return entry("gpumem_buffer_size", [&](Runtime &) {
        GPUMEM_REQUIRE(size, "size is NULL: pass the address of a size_t");
        return buffers::size(buffer, size);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_buffer_destroy(gpumem_buffer_t buffer)
{
    return entry("gpumem_buffer_destroy", [&](Runtime &rt) { return rt.buffers.destroy(buffer); });
}
