// Sharing between processes: exporting a pool's memory and its pointers, and
// importing a pointer into a pool made from another process's handle.  As in
// CUDA, an exported pointer is only valid while the exporting process keeps
// the allocation alive: the pool does not hold it for the importer.
#include <cinttypes>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "base/error.hpp"
#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {
namespace {

// What gpumem_pool_export_pointer writes into the 64 opaque bytes.
struct ExportedPointer {
    uint32_t magic;
    uint32_t version;
    uint64_t offset;  // in the exporting pool's shared memory
    uint64_t pool_id; // identity of that memory, checked by the importer
    uint64_t size;    // bytes the exporter asked for
    unsigned char unused[32];
};
static_assert(sizeof(ExportedPointer) == sizeof(gpumem_pool_ptr_export_data_t), "export data is 64 bytes");
constexpr uint32_t kExportMagic = 0x58504d47; // "GMPX"
constexpr uint32_t kExportVersion = 1;

} // namespace

status_t export_fd(Pool *p, int *fd)
{
    if (!p->upstream->shareable())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "this pool's memory cannot be shared; create the pool with handle_types = GPUMEM_HANDLE_POSIX_FD");
    return p->upstream->export_fd(fd);
}

status_t export_pointer(void *ptr, gpumem_pool_ptr_export_data_t *data)
{
    Allocation block;
    if (!g_live.find(ptr, &block))
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "%p is not the start of a live pool allocation; export the pointer the allocation returned", ptr);
    Pool *p = block.pool;
    if (!p->upstream->shareable())
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the pool of %p cannot share memory; create it with handle_types = GPUMEM_HANDLE_POSIX_FD", ptr);
    ExportedPointer e{};
    e.magic = kExportMagic;
    e.version = kExportVersion;
    e.size = block.size;
    status_t st = p->upstream->offset_of(ptr, &e.offset, &e.pool_id);
    if (st != GPUMEM_SUCCESS)
        return st;
    std::memcpy(data, &e, sizeof e);
    return GPUMEM_SUCCESS;
}

status_t import_pointer(Pool *p, const gpumem_pool_ptr_export_data_t *data, void **ptr)
{
    if (!p->imported)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "pointers can only be imported into a pool made by gpumem_pool_import_from_shareable_handle");
    ExportedPointer e;
    std::memcpy(&e, data, sizeof e);
    if (e.magic != kExportMagic || e.version != kExportVersion)
        return fail(GPUMEM_ERROR_INVALID_VALUE,
                    "the export data was not written by gpumem_pool_export_pointer of this gpumem version");
    if (e.size == 0 || e.size > kMaxRequest)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the export data names an allocation of %" PRIu64 " bytes", e.size);
    void *addr = nullptr;
    status_t st = p->upstream->address_of(e.offset, e.size, e.pool_id, &addr);
    if (st != GPUMEM_SUCCESS)
        return st;
    try {
        std::lock_guard<std::mutex> lock(p->mu);
        if (p->destroyed)
            return fail(GPUMEM_ERROR_INVALID_HANDLE, "the pool was destroyed");
        auto chunk = std::make_unique<Chunk>();
        Block *b = p->arena.get();
        b->ptr = static_cast<char *>(addr);
        b->size = round_up(e.size, kGranule);
        b->requested = e.size;
        b->chunk = chunk.get();
        b->pool = p;
        b->imported = true;
        b->born_thread = current_thread_id();
        b->born_ns = coarse_now_ns();
        b->state.store(kLive, std::memory_order_relaxed);
        chunk->base = b->ptr;
        chunk->size = b->size;
        chunk->pool = p;
        chunk->first = b;
        chunk->imported = true;
        try {
            p->chunks.reserve(p->chunks.size() + 1);
            chunk_map::add(chunk.get());
        } catch (...) {
            b->reset();
            p->arena.put(b);
            throw;
        }
        if (!g_live.insert_unique(b)) {
            chunk_map::remove(chunk.get());
            b->reset();
            p->arena.put(b);
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%p is already imported; free it before importing it again", addr);
        }
        p->chunks.push_back(chunk.release());
        p->base_used += int64_t(b->size);
        p->base_live += 1;
        if (p->base_used > p->base_limit)
            p->rebalance_usage(this_thread());
        *ptr = addr;
        return GPUMEM_SUCCESS;
    } catch (const std::bad_alloc &) {
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "out of host memory while importing a pointer");
    }
}

} // namespace gpumem::detail::pool
