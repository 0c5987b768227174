// Strict host mode: device views, the fault handler, deferred stream work.
#include "backends/host/host_strict.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/host/host_backend.hpp"
#include "base/call_site.hpp"
#include "base/host_fn.hpp"

namespace gpumem::detail::host {

namespace {

// --- The fault handler's table ----------------------------------------------

// Records are pushed at the head and never unlinked: the handler walks the
// list with no lock.  The mutex only orders writers (claim and recycle).
std::atomic<FaultRecord *> g_records{nullptr};
std::mutex g_records_mutex;
std::vector<FaultRecord *> g_spare_records;

FaultRecord *claim_record()
{
    std::lock_guard<std::mutex> lock(g_records_mutex);
    if (!g_spare_records.empty()) {
        FaultRecord *r = g_spare_records.back();
        g_spare_records.pop_back();
        return r;
    }
    FaultRecord *r = new FaultRecord;
    r->next = g_records.load(std::memory_order_relaxed);
    g_records.store(r, std::memory_order_release);
    return r;
}

void recycle_record(FaultRecord *r)
{
    r->base.store(0, std::memory_order_release);
    std::lock_guard<std::mutex> lock(g_records_mutex);
    try {
        g_spare_records.push_back(r);
    } catch (...) {
        // Out of host memory: the record stays unused in the list.
    }
}

// --- Writing one message from a signal handler (no allocation, no stdio) ----

class Line {
public:
    void text(const char *s)
    {
        while (s && *s && len_ < sizeof buf_)
            buf_[len_++] = *s++;
    }
    void hex(uintptr_t v)
    {
        char digits[2 * sizeof v];
        size_t n = 0;
        do {
            digits[n++] = "0123456789abcdef"[v & 0xf];
            v >>= 4;
        } while (v);
        text("0x");
        while (n && len_ < sizeof buf_)
            buf_[len_++] = digits[--n];
    }
    void decimal(uint64_t v)
    {
        char digits[20];
        size_t n = 0;
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v);
        while (n && len_ < sizeof buf_)
            buf_[len_++] = digits[--n];
    }
    void write_to_stderr() const
    {
        size_t done = 0;
        while (done < len_) {
            ssize_t w = ::write(STDERR_FILENO, buf_ + done, len_ - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return;
            done += static_cast<size_t>(w);
        }
    }

private:
    char buf_[2048];
    size_t len_ = 0;
};

// "main+0x1c (/path/prog+0x11c9)": dladdr is not async-signal-safe, but the
// process is about to die and no lock of ours is held.
void describe_code_address(Line &line, const void *addr)
{
    Dl_info info{};
    if (!addr || dladdr(addr, &info) == 0 || !info.dli_fname) {
        line.text("an unknown caller at ");
        line.hex(reinterpret_cast<uintptr_t>(addr));
        return;
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (info.dli_sname && info.dli_saddr) {
        line.text(info.dli_sname);
        line.text("+");
        line.hex(a - reinterpret_cast<uintptr_t>(info.dli_saddr));
        line.text(" (");
    }
    line.text(info.dli_fname);
    line.text("+");
    line.hex(a - reinterpret_cast<uintptr_t>(info.dli_fbase));
    if (info.dli_sname && info.dli_saddr) {
        line.text(")");
    } else {
        // Not an exported symbol (a program's own functions without -rdynamic).
        line.text(" (addr2line -f -e ");
        line.text(info.dli_fname);
        line.text(" ");
        line.hex(a - reinterpret_cast<uintptr_t>(info.dli_fbase) - 1);
        line.text(" names the line)");
    }
}

struct sigaction g_previous[2]; // SIGSEGV, SIGBUS: what was installed before us

int slot_of(int sig) { return sig == SIGBUS ? 1 : 0; }

// Die of `sig` with its default action (a core dump where enabled).
void die_of(int sig)
{
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    // Blocked while this handler runs: delivered when it returns (a real
    // fault would also fault again on return).
    raise(sig);
}

void pass_on(int sig, siginfo_t *info, void *context)
{
    const struct sigaction &prev = g_previous[slot_of(sig)];
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction) {
            prev.sa_sigaction(sig, info, context);
            return;
        }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
        prev.sa_handler(sig);
        return;
    }
    die_of(sig);
}

void on_fault(int sig, siginfo_t *info, void *context)
{
    const int saved_errno = errno;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (FaultRecord *r = g_records.load(std::memory_order_acquire); r; r = r->next) {
        const uintptr_t base = r->base.load(std::memory_order_acquire);
        const size_t size = r->size.load(std::memory_order_relaxed);
        if (!base || addr < base || addr - base >= size)
            continue;
        const char *made_by = r->made_by.load(std::memory_order_relaxed);
        const bool freed = r->freed.load(std::memory_order_relaxed);
        Line line;
        line.text(freed ? "gpumem strict mode: the CPU touched freed device memory at "
                        : "gpumem strict mode: the CPU touched device memory at ");
        line.hex(addr);
        line.text(": inside the ");
        line.decimal(size);
        line.text("-byte ");
        line.text(r->what.load(std::memory_order_relaxed));
        line.text(" at ");
        line.hex(base);
        line.text(" (offset ");
        line.decimal(addr - base);
        line.text("), made by ");
        line.text(made_by ? made_by : "gpumem");
        if (made_by) {
            line.text(" called from ");
            describe_code_address(line, r->caller.load(std::memory_order_relaxed));
        }
        if (freed)
            line.text(", and freed since");
        line.text("\ngpumem strict mode: on a GPU this is an invalid access; copy the bytes to host memory with "
                  "gpumem_memcpy (after synchronising), or allocate memory the CPU may touch (gpumem_host_alloc, "
                  "gpumem_managed_alloc)\n");
        line.write_to_stderr();
        die_of(sig);
        errno = saved_errno;
        return;
    }
    errno = saved_errno;
    pass_on(sig, info, context);
}

void install_fault_handler()
{
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        // Kept for the life of the process (records outlive runtimes); with no
        // live record every fault goes to the previous handler.
        sigaction(SIGSEGV, &sa, &g_previous[0]);
        sigaction(SIGBUS, &sa, &g_previous[1]);
    });
}

} // namespace

// --- Device views -------------------------------------------------------------

DeviceViews::DeviceViews() { install_fault_handler(); }

DeviceViews::~DeviceViews()
{
    // Live views here were leaked by the program (finalize counted them).
    for (auto &entry : views_) {
        munmap(reinterpret_cast<void *>(entry.first), entry.second.len);
        if (entry.second.alias)
            munmap(entry.second.alias, entry.second.len);
        recycle_record(entry.second.record);
    }
}

status_t DeviceViews::map(size_t len, size_t requested, size_t align, const char *what, void **user)
{
    int fd = make_memfd("gpumem-strict");
    if (fd < 0) {
        int err = errno;
        return fail(alloc_errno_status(err),
                    "cannot allocate %zu bytes of %s: memfd_create failed: %s; close descriptors or raise the "
                    "open-files limit (ulimit -n)",
                    requested, what, std::strerror(err));
    }
    void *reserved = MAP_FAILED, *view = MAP_FAILED, *alias = MAP_FAILED;
    int err = 0;
    const char *call = "ftruncate";
    if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
        err = errno;
    } else if ((reserved = map_aligned(len, align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)) ==
               MAP_FAILED) {
        err = errno;
        call = "mmap";
    } else if ((view = mmap(reserved, len, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0)) == MAP_FAILED) {
        err = errno;
        call = "mmap";
        munmap(reserved, len);
    } else if ((alias = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        err = errno;
        call = "mmap";
        munmap(view, len);
    }
    close(fd); // the mappings keep the memory
    if (err)
        return fail(alloc_errno_status(err), "cannot allocate %zu bytes of %s: %s failed: %s; free memory or allocate less",
                    requested, what, call, std::strerror(err));

    FaultRecord *record = nullptr;
    try {
        record = claim_record();
        std::unique_lock<std::shared_mutex> lock(mutex_);
        views_.emplace(reinterpret_cast<uintptr_t>(view), View{len, static_cast<char *>(alias), record});
    } catch (...) {
        if (record)
            recycle_record(record);
        munmap(view, len);
        munmap(alias, len);
        return fail(GPUMEM_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of %s: out of host memory for its "
                                                "bookkeeping", requested, what);
    }
    const CallSite site = t_call_site;
    record->size.store(requested, std::memory_order_relaxed);
    record->what.store(what, std::memory_order_relaxed);
    record->made_by.store(site.function, std::memory_order_relaxed);
    record->caller.store(site.caller, std::memory_order_relaxed);
    record->freed.store(false, std::memory_order_relaxed);
    record->base.store(reinterpret_cast<uintptr_t>(view), std::memory_order_release);
    *user = view;
    return GPUMEM_SUCCESS;
}

bool DeviceViews::unmap(void *user)
{
    const uintptr_t base = reinterpret_cast<uintptr_t>(user);
    View v;
    uintptr_t evicted = 0;
    View evicted_view{};
    {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        auto it = views_.find(base);
        if (it == views_.end() || !it->second.alias)
            return false;
        v = it->second;
        // Anonymous PROT_NONE over the view: the memfd's pages go with the
        // alias, the addresses stay ours (nothing else is mapped there).
        bool kept = mmap(user, v.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) !=
                    MAP_FAILED;
        if (kept) {
            try {
                freed_.push_back(base);
            } catch (...) {
                kept = false;
            }
        }
        if (kept) {
            it->second.alias = nullptr;
            v.record->freed.store(true, std::memory_order_release);
            if (freed_.size() > k_freed_kept) {
                evicted = freed_.front();
                freed_.pop_front();
                auto old = views_.find(evicted);
                evicted_view = old->second;
                views_.erase(old);
            }
        } else {
            views_.erase(it);
        }
        if (!kept) {
            recycle_record(v.record);
            munmap(user, v.len);
        }
    }
    munmap(v.alias, v.len);
    if (evicted) {
        recycle_record(evicted_view.record);
        munmap(reinterpret_cast<void *>(evicted), evicted_view.len);
    }
    return true;
}

status_t DeviceViews::accessible(const void *p, size_t n, const char *what, void **out) const
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = views_.upper_bound(a);
    if (it == views_.begin() || (--it, a - it->first >= it->second.len)) {
        *out = const_cast<void *>(p);
        return GPUMEM_SUCCESS;
    }
    const View &v = it->second;
    if (!v.alias)
        return fail(GPUMEM_ERROR_INVALID_POINTER,
                    "the %s %p lies in freed device memory (the %zu-byte %s at %p, freed); allocate memory again "
                    "before using it",
                    what, p, v.record->size.load(std::memory_order_relaxed),
                    v.record->what.load(std::memory_order_relaxed), reinterpret_cast<void *>(it->first));
    if (n > v.len - (a - it->first))
        return fail(GPUMEM_ERROR_INVALID_VALUE, "the %s %p + %zu bytes runs past the end of device memory at %p",
                    what, p, n, reinterpret_cast<void *>(it->first));
    *out = v.alias + (a - it->first);
    return GPUMEM_SUCCESS;
}

// --- Deferred stream work -----------------------------------------------------

void DeferredWork::enqueue(const Op &op)
{
    std::lock_guard<std::mutex> lock(mutex_);
    ops_.push_back(op);
    ops_.back().seq = next_seq_++;
}

void DeferredWork::copy(void *stream, bool nonblocking, void *dst, const void *src, size_t n)
{
    if (n == 0 || dst == src)
        return;
    Op op;
    op.stream = stream;
    op.nonblocking = nonblocking;
    op.kind = Kind::copy;
    op.dst = dst;
    op.src = src;
    op.n = n;
    enqueue(op);
}

void DeferredWork::fill(void *stream, bool nonblocking, void *dst, unsigned char byte, size_t n)
{
    fill_elements(stream, nonblocking, dst, byte, 1, n);
}

void DeferredWork::fill_elements(void *stream, bool nonblocking, void *dst, uint32_t value, unsigned size,
                                 size_t count)
{
    if (count == 0)
        return;
    Op op;
    op.stream = stream;
    op.nonblocking = nonblocking;
    op.kind = Kind::fill;
    op.dst = dst;
    op.n = count;
    op.value = value;
    op.size = size;
    enqueue(op);
}

void DeferredWork::host_fn(void *stream, bool nonblocking, void (*fn)(void *), void *user)
{
    Op op;
    op.stream = stream;
    op.nonblocking = nonblocking;
    op.kind = Kind::host_fn;
    op.fn = fn;
    op.user = user;
    enqueue(op);
}

uint64_t DeferredWork::mark()
{
    std::lock_guard<std::mutex> lock(mutex_);
    return next_seq_ - 1;
}

void DeferredWork::run_stream(void *stream, bool nonblocking, uint64_t upto)
{
    std::lock_guard<std::mutex> lock(mutex_);
    // Work on the default stream waits for all earlier work of every stream,
    // and later work of every stream waits for it: running `stream` up to
    // `upto` first runs everything up to its last default-stream op before.
    // A non-blocking stream is ordered with no other stream, nor the default
    // stream with it: its own work alone runs.
    uint64_t everything_upto = stream ? 0 : upto;
    if (stream && !nonblocking)
        for (const Op &op : ops_) {
            if (op.seq > upto)
                break;
            if (!op.stream)
                everything_upto = op.seq;
        }
    for (auto it = ops_.begin(); it != ops_.end() && it->seq <= upto;) {
        const bool own = it->stream == stream;
        if (!own && (it->seq > everything_upto || it->nonblocking || nonblocking)) {
            ++it;
            continue;
        }
        run(*it);
        it = ops_.erase(it);
    }
}

void DeferredWork::run(const Op &op)
{
    switch (op.kind) {
    case Kind::copy: std::memmove(op.dst, op.src, op.n); break;
    case Kind::fill: fill_pattern(op.dst, op.value, op.size, op.n); break;
    case Kind::host_fn: run_host_fn(op.fn, op.user); break;
    }
}

void DeferredWork::run_all()
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Op &op : ops_)
        run(op);
    ops_.clear();
}

} // namespace gpumem::detail::host
