// Growable buffers: on native VMM the address never moves (a growable range
// of the VMM service: physical memory is mapped after the old); without VMM,
// resize allocates, copies and frees.
#pragma once

#include <mutex>

#include "core/handles.hpp"
#include "core/vmm.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class DeviceMemory;
class Pointers;
class Devices;

struct BufferObject {
    std::mutex mutex;
    int32_t device = 0;
    size_t size = 0;
    size_t max_size = 0;
    bool vmm = false;     // native VMM: the address never moves
    void *base = nullptr; // data address
    GrowableRange range;  // VMM: the address space and the memory mapped into it
    size_t capacity = 0;  // fallback: bytes allocated
};
using BufferTable = HandleTable<BufferObject, HandleType::buffer>;
BufferTable &buffer_table();

// Growable buffers: the buffer table's objects, their memory and records.
class Buffers {
public:
    // `runtime` for its devices and the fallback log, `vmm` to grow in
    // place, `pointers` to record the data, and once the backend is open its
    // DeviceMemory facet for the allocate-copy-free fallback: nothing else.
    Buffers(const Devices &devices, Vmm &vmm, Pointers &pointers) : devices_(devices), vmm_(vmm), pointers_(pointers) {}
    void open(DeviceMemory &memory) { memory_ = &memory; }

    status_t create(gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device);
    status_t resize(gpumem_buffer_t buffer, size_t new_size);
    status_t destroy(gpumem_buffer_t buffer);
    // gpumem_finalize: buffers never destroyed (counted in *leaked).
    void release_all(size_t *leaked);

private:
    status_t move_to_new_allocation(BufferObject &b, size_t new_size);
    status_t give_back(BufferObject &b);
    void register_data(BufferObject &b, uint64_t handle);
    void unregister_data(BufferObject &b);

    const Devices &devices_;
    Vmm &vmm_;
    Pointers &pointers_;
    DeviceMemory *memory_ = nullptr;
};

namespace buffers {

status_t data(gpumem_buffer_t buffer, void **ptr);
status_t size(gpumem_buffer_t buffer, size_t *size);

} // namespace buffers
} // namespace gpumem::detail
