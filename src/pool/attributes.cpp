// A pool's attributes (the reuse flags, the release threshold, the usage
// counters and their high-water marks), trimming, and the small questions
// the core asks of one pool (its device, owner, live allocations).
#include <cinttypes>
#include <cstring>
#include <mutex>

#include "base/error.hpp"
#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

const char *attribute_name(int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return "GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES";
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return "GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC";
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return "GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES";
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: return "GPUMEM_POOL_ATTR_RELEASE_THRESHOLD";
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: return "GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT";
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: return "GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH";
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: return "GPUMEM_POOL_ATTR_USED_MEM_CURRENT";
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: return "GPUMEM_POOL_ATTR_USED_MEM_HIGH";
    default: return nullptr;
    }
}

namespace {

int32_t *reuse_flag(Pool &p, int32_t attr)
{
    switch (attr) {
    case GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: return &p.follow_event_dependencies;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: return &p.allow_opportunistic;
    case GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return &p.allow_internal_dependencies;
    default: return nullptr;
    }
}

} // namespace

status_t set_attribute(Pool *p, int32_t attr, const void *value)
{
    const char *name = attribute_name(attr);
    if (!name)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the value for %s is NULL", name);
    std::lock_guard<std::mutex> lock(p->mu);
    if (int32_t *flag = reuse_flag(*p, attr)) {
        int32_t v;
        std::memcpy(&v, value, sizeof v);
        if (v != 0 && v != 1)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s takes an int32_t 0 or 1, not %d", name, v);
        *flag = v;
        if (attr == GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
            p->swept_gen = 0; // completed frees may be free for all now
        return GPUMEM_SUCCESS;
    }
    uint64_t v;
    std::memcpy(&v, value, sizeof v);
    switch (attr) {
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = v; // applies at the next synchronisation, as in CUDA
        return GPUMEM_SUCCESS;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH:
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH:
        if (v != 0)
            return fail(GPUMEM_ERROR_INVALID_VALUE, "%s can only be set to 0 (reset to the current value), not %" PRIu64,
                        name, v);
        if (attr == GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH)
            p->reserved_high = p->reserved;
        else
            p->reset_used_high();
        return GPUMEM_SUCCESS;
    default:
        return fail(GPUMEM_ERROR_INVALID_VALUE, "%s is read-only", name);
    }
}

status_t get_attribute(Pool *p, int32_t attr, void *value)
{
    const char *name = attribute_name(attr);
    if (!name)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "unknown pool attribute %d; use one of GPUMEM_POOL_ATTR_*", attr);
    if (!value)
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the output for %s is NULL", name);
    std::lock_guard<std::mutex> lock(p->mu);
    if (int32_t *flag = reuse_flag(*p, attr)) {
        std::memcpy(value, flag, sizeof *flag);
        return GPUMEM_SUCCESS;
    }
    uint64_t v = 0;
    switch (attr) {
    case GPUMEM_POOL_ATTR_RELEASE_THRESHOLD: v = p->release_threshold; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
    case GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
    case GPUMEM_POOL_ATTR_USED_MEM_CURRENT: v = uint64_t(p->used_now()); break;
    case GPUMEM_POOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
    }
    std::memcpy(value, &v, sizeof v);
    return GPUMEM_SUCCESS;
}

status_t trim_to(Pool *p, size_t min_bytes_to_keep)
{
    std::lock_guard<std::mutex> lock(p->mu);
    p->release_quarantined(0); // the program asks for memory back: it wins over the quarantine
    p->flush_caches(nullptr);
    p->sweep(false);
    p->release_free_chunks(min_bytes_to_keep);
    p->reset_budget();
    return GPUMEM_SUCCESS;
}

status_t grant_access(Pool *p, int32_t device)
{
    std::lock_guard<std::mutex> lock(p->mu); // no page is backed or unbacked meanwhile
    return p->upstream->grant_access(device);
}

size_t outstanding(Pool *p)
{
    std::lock_guard<std::mutex> lock(p->mu);
    return size_t(p->live_now());
}

int32_t device_of(Pool *p) { return p->device; }
void set_owner(Pool *p, uint64_t owner)
{
    p->owner = owner;
    if (owner)
        p->traced_owner = owner;
}
bool is_imported(Pool *p) { return p->imported; }

} // namespace gpumem::detail::pool
