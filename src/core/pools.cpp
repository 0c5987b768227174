// Pool creation: the fallback decision between a native pool and gpumem's own.
#include "base/log.hpp"
#include "core/runtime.hpp"

namespace gpumem::detail {

namespace {
status_t make_builtin(Runtime &rt, const gpumem_pool_props_t &props, pool::Pool **impl);
}

status_t make_pool(Runtime &rt, const gpumem_pool_props_t &props, bool is_default, uint64_t *handle)
{
    DeviceState &dev = *rt.devices[props.device];
    const char *why = rt.disabled(feature_pools) ? "disabled by GPUMEM_DISABLE" : "not supported by the device";
    if (dev.pools_level == GPUMEM_SUPPORT_NONE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "memory pools are %s on device %d and GPUMEM_FALLBACK=deny refuses gpumem's own pool", why,
                    props.device);
    if (props.implementation == GPUMEM_POOL_NATIVE && dev.pools_level != GPUMEM_SUPPORT_NATIVE)
        return fail(GPUMEM_ERROR_NOT_SUPPORTED,
                    "native memory pools are %s on device %d; ask for GPUMEM_POOL_AUTO or GPUMEM_POOL_BUILTIN", why,
                    props.device);
    bool shareable = (props.handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
    if (shareable && !(dev.pool_ipc_types & GPUMEM_HANDLE_POSIX_FD))
        return fail(GPUMEM_ERROR_NOT_SUPPORTED, "POSIX file-descriptor sharing is %s on device %d; create the pool "
                    "with handle_types = GPUMEM_HANDLE_NONE",
                    rt.disabled(feature_ipc) ? "disabled by GPUMEM_DISABLE" : "not supported", props.device);

    // The vendor's pool where the backend has one and it is wanted; else
    // gpumem's own over the backend's chunks (on the host backend that *is*
    // the native implementation; elsewhere it stands in for absent pools).
    void *native = nullptr;
    pool::Pool *impl = nullptr;
    if (rt.backend->native_pools() && dev.pools_level == GPUMEM_SUPPORT_NATIVE &&
        props.implementation != GPUMEM_POOL_BUILTIN) {
        status_t st = is_default ? rt.backend->native_pools()->default_pool(props.device, &native)
                                 : rt.backend->native_pools()->create(props.device, props.handle_types, props.max_size, &native);
        // A property the vendor's pool lacks (max_size on old drivers): AUTO
        // takes gpumem's own pool, which has it.
        if (st == GPUMEM_ERROR_NOT_SUPPORTED && props.implementation == GPUMEM_POOL_AUTO) {
            log(LogLevel::info, "native pool refused (%s); using gpumem's own pool", last_error_message());
            native = nullptr;
            st = make_builtin(rt, props, &impl);
        }
        if (st)
            return st;
    } else if (status_t st = make_builtin(rt, props, &impl)) {
        return st;
    }

    PoolObject *p = pool_table().create(handle);
    p->impl = impl;
    p->native = native;
    p->imported = false;
    p->device = props.device;
    p->handle_types = props.handle_types;
    p->emulated = dev.pools_level == GPUMEM_SUPPORT_EMULATED;
    p->is_default = is_default;
    {
        std::lock_guard<std::mutex> lock(p->mutex);
        p->access.clear();
        p->access[props.device] = GPUMEM_ACCESS_READWRITE;
    }
    if (impl) {
        std::lock_guard<std::mutex> lock(rt.pools_mutex);
        rt.pool_handles[impl] = *handle;
    }
    return GPUMEM_SUCCESS;
}

namespace {
status_t make_builtin(Runtime &rt, const gpumem_pool_props_t &props, pool::Pool **impl)
{
    bool shareable = (props.handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
    std::unique_ptr<PoolUpstream> upstream;
    if (status_t st = rt.backend->pool_upstream(props.device, shareable, props.max_size, &upstream))
        return st;
    pool::Config config;
    config.device = props.device;
    config.max_size = props.max_size;
    return pool::create(std::move(upstream), config, impl);
}
} // namespace

} // namespace gpumem::detail
