// Seeing and debugging memory: kind names, snapshots and the last
// out-of-memory report.  The trace file, GPUMEM_LIMIT and the state of memory
// in OUT_OF_MEMORY messages need no entry point of their own (core/trace,
// core/limit, core/inspect).
#include "api/entry.hpp"
#include "core/inspect.hpp"
#include "core/oom_report.hpp"
#include "core/trace.hpp"

using namespace gpumem::detail;

GPUMEM_EXPORT const char *gpumem_kind_name(int32_t kind) { return public_kind_name(kind); }

GPUMEM_EXPORT gpumem_status_t gpumem_snapshot_take(gpumem_snapshot_t **snapshot)
{
    return entry("gpumem_snapshot_take", [&](Runtime &rt) {
        GPUMEM_REQUIRE(snapshot != nullptr, "snapshot is NULL: pass the address of a gpumem_snapshot_t pointer");
        *snapshot = nullptr;
        return rt.inspect.snapshot_take(snapshot);
    });
}

// A snapshot is plain data that outlives the runtime: no runtime needed.
GPUMEM_EXPORT gpumem_status_t gpumem_snapshot_release(gpumem_snapshot_t *snapshot)
{
    return entry_no_runtime("gpumem_snapshot_release", [&]() -> status_t {
        if (!snapshot)
            return GPUMEM_SUCCESS;
        return inspect::snapshot_release(snapshot);
    });
}

GPUMEM_EXPORT gpumem_status_t gpumem_snapshot_write_json(const gpumem_snapshot_t *snapshot, const char *path)
{
    return entry_no_runtime("gpumem_snapshot_write_json", [&]() -> status_t {
        GPUMEM_REQUIRE(snapshot != nullptr, "snapshot is NULL: pass one from gpumem_snapshot_take");
        GPUMEM_REQUIRE(path != nullptr && *path, "path is NULL or empty: name the file to write");
        return inspect::snapshot_write_json(snapshot, path);
    });
}

// Reads only the calling thread's own record: no runtime needed, so it works
// after gpumem_finalize too.
GPUMEM_EXPORT gpumem_status_t gpumem_last_oom_report(gpumem_oom_report_t *report)
{
    return entry_no_runtime("gpumem_last_oom_report", [&]() -> status_t {
        GPUMEM_REQUIRE_STRUCT(report, gpumem_oom_report_t);
        gpumem_oom_report_t full{};
        oom::last(&full);
        write_struct(report, full);
        return GPUMEM_SUCCESS;
    });
}
