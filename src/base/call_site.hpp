// Which public function the calling thread is in, and who called it: strict
// host mode records it with each allocation so that its fault message can
// say where device memory was made (resolved with dladdr only at fault time).
#pragma once

namespace gpumem::detail {

struct CallSite {
    const char *function = nullptr; // "gpumem_malloc"
    const void *caller = nullptr;   // the return address into the user's code
};

// initial-exec: a plain TLS access on the allocation path, not a call to
// __tls_get_addr (16 bytes of the static TLS space glibc keeps for dlopen).
__attribute__((tls_model("initial-exec"))) inline thread_local CallSite t_call_site;

// Sets the thread's call site for the scope of a public function; restores
// the outer one (a trace callback may call gpumem inside gpumem).
class CallSiteScope {
public:
    CallSiteScope(const char *function, const void *caller) : saved_(t_call_site)
    {
        t_call_site = CallSite{function, caller};
    }
    ~CallSiteScope() { t_call_site = saved_; }
    CallSiteScope(const CallSiteScope &) = delete;
    CallSiteScope &operator=(const CallSiteScope &) = delete;

private:
    CallSite saved_;
};

} // namespace gpumem::detail

// In an allocating extern "C" function, before entry(): one thread-local store.
#define GPUMEM_RECORD_CALL_SITE(name)                                                                        \
    ::gpumem::detail::CallSiteScope gpumem_call_site_scope_(                                               \
        name, __builtin_extract_return_addr(__builtin_return_address(0)))
