// Functions of gpumem_launch_host_func that gpumem itself calls (the host
// backend runs them with the stream's work; the core's emulation calls them
// after waiting for the stream): they must not call gpumem, which may hold
// locks of the stream's work while they run.  The calling thread says so here,
// and api/entry.hpp refuses a call made from inside one (NOT_SUPPORTED).  A
// function the vendor runtime runs does so on the runtime's own thread, which
// gpumem never sees.
#pragma once

namespace gpumem::detail {

// initial-exec: one byte of static TLS, read only by nested gpumem calls.
__attribute__((tls_model("initial-exec"))) inline thread_local bool t_in_host_fn = false;

// fn(user), with the thread marked as inside a host function.
inline void run_host_fn(void (*fn)(void *), void *user)
{
    const bool outer = t_in_host_fn;
    t_in_host_fn = true;
    fn(user);
    t_in_host_fn = outer;
}

} // namespace gpumem::detail
