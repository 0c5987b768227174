// Every status path of a failed vendor call has a remedy, and the remedy is the call's own: an
// export's is the exporter's, an import's the importer's (a descriptor, or a pointer's export
// data), a rejected pool's, stream's or event's argument names that object, and the memory's
// sizes and alignment only memory calls.  (tests/fakes/test_remedies.c checks the call sites,
// on the fake driver.)
#include <cstdio>
#include <cstring>

#include "backends/gpu/gpu_check.hpp"

using namespace gpumem::detail;
using namespace gpumem::detail::gpu;

namespace {

int failures = 0;
void expect(bool ok, const char *what, const char *remedy)
{
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s: \"%s\"\n", what, remedy ? remedy : "(null)");
        ++failures;
    }
}
bool has(const char *s, const char *w) { return s && std::strstr(s, w) != nullptr; }

const RemedyWords k_words{"the runtime rejected the arguments; check sizes, alignment and pointers",
                          "this device does not support it", "check the device"};

} // namespace

int main()
{
    const status_t statuses[] = {GPUMEM_ERROR_OUT_OF_MEMORY, GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_INVALID_DEVICE,
                                 GPUMEM_ERROR_BUSY,          GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_IPC,
                                 GPUMEM_ERROR_BACKEND};
    const Sharing sides[] = {Sharing::none, Sharing::exporting, Sharing::importing_descriptor,
                             Sharing::importing_pointer};
    const Subject subjects[] = {Subject::memory, Subject::pool, Subject::stream};
    for (status_t status : statuses)
        for (Sharing side : sides)
            for (Subject subject : subjects) {
                // A failed vendor call is IPC exactly when it shares (vcheck).
                if ((status == GPUMEM_ERROR_IPC) != (side != Sharing::none) && status != GPUMEM_ERROR_OUT_OF_MEMORY)
                    continue;
                const char *r = remedy_by_status(status, Advice{side, subject}, k_words);
                expect(r && *r, "every status has a remedy", r);
                const bool exporting_words = has(r, "export only");
                const bool import_words = has(r, "gpumem_ipc_recv_fd") || has(r, "export data");
                if (status == GPUMEM_ERROR_IPC) {
                    expect(side != Sharing::exporting || (exporting_words && !import_words), "an export's remedy", r);
                    expect(side != Sharing::importing_descriptor || (has(r, "gpumem_ipc_recv_fd") && !exporting_words),
                           "a descriptor import's remedy", r);
                    expect(side != Sharing::importing_pointer ||
                               (has(r, "gpumem_pool_export_pointer") && !has(r, "gpumem_ipc_recv_fd")),
                           "a pointer import's remedy", r);
                } else {
                    expect(!exporting_words && !import_words, "sharing words only for sharing failures", r);
                }
                if (status == GPUMEM_ERROR_INVALID_VALUE) {
                    expect(subject != Subject::pool || (has(r, "pool") && !has(r, "sizes, alignment")),
                           "a pool call's rejected argument", r);
                    expect(subject != Subject::stream || (has(r, "stream") && has(r, "event") && !has(r, "sizes")),
                           "a stream or event call's rejected argument", r);
                    expect(subject != Subject::memory || r == k_words.invalid_value, "a memory call's rejected argument",
                           r);
                } else {
                    expect(!has(r, "sizes, alignment"), "sizes and alignment only for rejected arguments", r);
                }
            }
    // The subject of the calls, by the vendors' names (both runtimes).
    const struct {
        const char *call;
        Subject subject;
    } calls[] = {{"cuMemPoolTrimTo", Subject::pool},           {"hipMemPoolSetAttribute", Subject::pool},
                 {"cuMemPoolGetAttribute", Subject::pool},     {"cuMemAllocFromPoolAsync", Subject::pool},
                 {"hipMallocFromPoolAsync", Subject::pool},    {"cuDeviceGetDefaultMemPool", Subject::pool},
                 {"hipMemPoolSetAccess", Subject::pool},       {"cuStreamSynchronize", Subject::stream},
                 {"hipEventRecord", Subject::stream},          {"cuEventElapsedTime", Subject::stream},
                 {"cuGraphLaunch", Subject::stream},           {"hipStreamWaitEvent", Subject::stream},
                 {"cuMemcpyAsync", Subject::memory},           {"hipMemsetD8", Subject::memory},
                 {"cuMemAddressReserve", Subject::memory},     {"cuMemAlloc", Subject::memory},
                 {"cuMemExportToShareableHandle", Subject::memory}};
    for (const auto &c : calls)
        expect(subject_of(c.call) == c.subject, "the subject of a call", c.call);
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
