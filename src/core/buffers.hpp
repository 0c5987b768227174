// Growable buffers: on native VMM the address never moves (physical memory is
// mapped after the old); without VMM, resize allocates, copies and frees.
#pragma once

#include <mutex>
#include <vector>

#include "core/handles.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

struct Runtime;

struct BufferChunk {
    void *phys;
    size_t offset; // from the buffer's base
    size_t size;
};

struct BufferObject {
    std::mutex mutex;
    int32_t device = 0;
    size_t size = 0;
    size_t max_size = 0;
    bool vmm = false;          // native VMM: the address never moves
    void *base = nullptr;      // data address
    size_t reserved = 0;       // VMM: bytes of address space
    size_t mapped = 0;         // VMM: bytes mapped from base
    size_t capacity = 0;       // fallback: bytes allocated
    size_t granularity = 0;
    std::vector<BufferChunk> chunks;
};
using BufferTable = HandleTable<BufferObject, HandleType::buffer>;
BufferTable &buffer_table();

namespace buffers {

status_t create(Runtime &rt, gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device);
status_t resize(Runtime &rt, gpumem_buffer_t buffer, size_t new_size);
status_t data(gpumem_buffer_t buffer, void **ptr);
status_t size(gpumem_buffer_t buffer, size_t *size);
status_t destroy(Runtime &rt, gpumem_buffer_t buffer);
// gpumem_finalize: buffers never destroyed (counted in *leaked).
void release_all(Runtime &rt, size_t *leaked);

} // namespace buffers
} // namespace gpumem::detail
