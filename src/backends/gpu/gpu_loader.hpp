// Loading a GPU vendor library, written once for CUDA and HIP: the feature
// groups of its optional entry points and the process-wide load-once cache.
//
// The vendor's loader (cuda_driver.cpp, hip_runtime.cpp) opens the library,
// resolves the entries of its .def list and starts the runtime; what happens
// around that, and the words of its messages, are the same for both.
#pragma once

#include <map>
#include <mutex>
#include <new>
#include <string>

#include <dlfcn.h>

#include "base/error.hpp"

namespace gpumem::detail::gpu {

// The groups optional entry points belong to (the second column of
// GPUMEM_*_OPTIONAL in the .def lists); `none` for those used on their own.
// batch_copy: the runtime's batched copies; batch_managed: its batched
// prefetches and discards of managed memory; capture: asking a stream what it
// captures and relaxing a thread's capture mode; user_objects: a graph's
// user objects (a callback when the graph is gone); dmabuf: a dma-buf
// descriptor for a range of device memory; stream_priority: streams made with
// flags and a priority, and the runtime's word on them; host_func: functions
// run in stream order; ipc_events: events shared between processes; rows:
// copies and fills of rows and boxes, and pitched allocations (0.5).
enum class Feature : unsigned {
    none,
    host_register,
    managed,
    pools,
    pool_ipc,
    vmm,
    vmm_ipc,
    peer,
    batch_copy,
    batch_managed,
    capture,
    user_objects,
    dmabuf,
    stream_priority,
    host_func,
    ipc_events,
    rows
};

// Which feature groups an API table has: a group is there when every entry
// point of it resolved.  The loader reports each missing entry with lack().
class Features {
public:
    bool has_managed() const { return has(Feature::managed); }
    bool has_host_register() const { return has(Feature::host_register); }
    bool has_pools() const { return has(Feature::pools); }
    bool has_pool_ipc() const { return has(Feature::pool_ipc); }
    bool has_vmm() const { return has(Feature::vmm); }
    bool has_vmm_ipc() const { return has(Feature::vmm_ipc); }
    bool has_peer() const { return has(Feature::peer); }
    bool has_batch_copy() const { return has(Feature::batch_copy); }
    bool has_batch_managed() const { return has(Feature::batch_managed); }
    bool has_capture() const { return has(Feature::capture); }
    bool has_user_objects() const { return has(Feature::user_objects); }
    bool has_dmabuf() const { return has(Feature::dmabuf); }
    bool has_stream_priority() const { return has(Feature::stream_priority); }
    bool has_host_func() const { return has(Feature::host_func); }
    bool has_ipc_events() const { return has(Feature::ipc_events); }
    bool has_rows() const { return has(Feature::rows); }

    void lack(Feature f) { missing_ |= 1u << static_cast<unsigned>(f); }

private:
    bool has(Feature f) const { return !(missing_ & (1u << static_cast<unsigned>(f))); }

    unsigned missing_ = 0;
};

// The vendor's words in the loading messages.
struct LoadWords {
    const char *backend; // "cuda"
    const char *library; // "CUDA driver"
    const char *env;     // "GPUMEM_CUDA_LIBRARY"
    const char *soname;  // "libcuda.so.1": the file named when no library was asked for
    const char *install; // "install the NVIDIA driver": the remedy when none can be loaded
};

// dlopen `name`; where it cannot be loaded, nullptr with dlerror's reason
// (or the name) appended to *tried.
inline void *open_noting(const char *name, std::string *tried)
{
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))
        return lib;
    const char *why = dlerror();
    if (!tried->empty())
        *tried += "; ";
    *tried += why ? why : name;
    return nullptr;
}

// The handle of `name` where the process has already loaded it, else nullptr.
// Takes no reference: the process's own one keeps it loaded.
inline void *already_loaded(const char *name)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h)
        dlclose(h); // drops only the reference RTLD_NOLOAD took
    return h;
}

// The file the entry point `fn` was loaded from (for messages), or
// `requested` where the loader cannot say.
inline std::string loaded_from(const void *fn, const char *requested)
{
    Dl_info info{};
    return fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : requested;
}

// dlopen the vendor library with `open` (which sets *tried to the errors of
// the names it attempted) into api->handle.  Never dlclosed: the vendor's
// threads and atexit handlers outlive any backend.
template <typename Api>
status_t open_into(const char *library, Api *api, void *(*open)(const char *, std::string *), const LoadWords &words)
{
    std::string tried;
    api->handle = open(library, &tried);
    if (!api->handle && library)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the %s backend is unavailable: %s=%s names no %s that can be loaded (%s); point it at the %s's "
                    "%s, or unset it to load %s from the system",
                    words.backend, words.env, library, words.library, tried.c_str(), words.library, words.soname,
                    words.soname);
    if (!api->handle)
        return fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                    "the %s backend is unavailable: cannot load the %s (%s); %s, or set %s to the path of %s",
                    words.backend, words.library, tried.c_str(), words.install, words.env, words.soname);
    return GPUMEM_SUCCESS;
}

// The process's API table for `library` (the environment variable's value, or
// nullptr for the vendor's search), loading and starting it on first use with
// `load`.  One attempt per library asked for is kept for the life of the
// process, failure included, and replayed to later callers.  Once one library
// is loaded, asking for another is refused (two copies of a vendor runtime
// would fight), unless `names_loaded` says it is that same library.
template <typename Api>
status_t load_once(const char *library, const Api **out, const LoadWords &words, status_t (*load)(const char *, Api *),
                   bool (*names_loaded)(const char *, const Api &))
{
    struct Attempt {
        status_t status = GPUMEM_SUCCESS;
        std::string message; // the failure, replayed to later callers
        const Api *api = nullptr;
    };
    // Leaked on purpose: the library stays loaded until the process ends, and
    // no static destructor may run while another thread still uses it.
    static std::mutex *mutex = new std::mutex;
    static auto *attempts = new std::map<std::string, Attempt>;
    static const Api *loaded = nullptr;
    static std::string loaded_key;

    const std::string key = library ? library : "";
    std::lock_guard<std::mutex> lock(*mutex);
    auto it = attempts->find(key);
    if (it == attempts->end()) {
        Attempt attempt;
        if (loaded) {
            if (names_loaded(library, *loaded)) {
                attempt.api = loaded;
            } else {
                attempt.status = fail(GPUMEM_ERROR_BACKEND_UNAVAILABLE,
                                      "the %s backend is unavailable: this process already loaded the %s %s (%s=%s) "
                                      "and can use only one; unset or restore %s",
                                      words.backend, words.library, loaded->library.c_str(), words.env,
                                      loaded_key.empty() ? "(unset)" : loaded_key.c_str(), words.env);
                attempt.message = last_error_message();
            }
        } else {
            Api *api = new (std::nothrow) Api;
            if (!api)
                return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot load the %s: out of host memory", words.library);
            attempt.status = load(library, api);
            if (attempt.status == GPUMEM_SUCCESS) {
                attempt.api = loaded = api;
                loaded_key = key;
            } else {
                // A library that failed to start stays loaded (nothing else
                // is safe), but its table is of no use.
                attempt.message = last_error_message();
                delete api;
            }
        }
        it = attempts->emplace(key, std::move(attempt)).first;
    }
    if (it->second.status != GPUMEM_SUCCESS)
        return fail(it->second.status, "%s", it->second.message.c_str());
    *out = it->second.api;
    return GPUMEM_SUCCESS;
}

} // namespace gpumem::detail::gpu
