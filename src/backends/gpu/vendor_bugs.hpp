// The table of known vendor bugs (vendor_bugs.def), and the rows in force for
// one runtime.  Shared by the CUDA and HIP backends.
//
// Design note: vendor bugs as rows of one table
// ----------------------------------------------
// Rationale.  A runtime bug gpumem works around is knowledge with an expiry
// date: it holds for some vendor's versions, it came from somewhere, and a
// user whose program behaves oddly needs to see it (gpumem-info and
// gpumem_workarounds_get list the rows in force).  Scattered through the
// code as `if (hip && version < ...)`, such knowledge is neither listed nor
// retired when a release fixes it.  So every workaround is one row of
// vendor_bugs.def, and no other code tests a vendor or a version for a bug.
//
// Approach.  A row names the bug, the vendor, the inclusive range of runtime
// versions it is known in (k_any_version where no release is known to be
// free of it), the Workaround bit it sets (backends/backend.hpp, named by
// what gpumem does, never by vendor), what the bug is, what gpumem does, and
// the source.  At load the GPU backend keeps the rows for its vendor and
// version (vendor_bugs_in_force) and reports them with their bits
// (Backend::vendor_bugs, Backend::workarounds); it acts on none of them.
// The core applies each bit in the service that owns the behaviour, at one
// place: trim_at_sync and builtin_auto_pools in the pools service
// (core/pools/pools.cpp), no_native_retry and defer_pool_destroy in the
// vendor's pools (core/pools/native_pool.cpp), ask_device_pointer in the
// pinned service (core/pinned.cpp), split_fill_at_seams in the memory
// service's fill (core/memory.cpp), no_batch_copy in the batch service
// (core/batch.cpp).  Two vendors with the same bug are two rows with one bit.
//
// Adding a row.  Give the bug a Workaround bit (or reuse one that does what
// is needed), write the row, and make the owning service test the bit where
// it acts.  Teach the fake runtime (tests/fakes) to reproduce the bug behind
// a <prefix>BUG_* switch, with a fake config of an affected version in
// tests/fakes/meson.build; tests/test_workarounds.c then checks what the
// workaround guarantees, on every backend, so the check passes on the buggy
// fake only because the row holds.  Calibrate against a real device where
// one is available (tools/gpu-suite.sh, with the result in
// docs/gpu-results.md), and narrow the version range once a release is known
// to be fixed.
//
// Limitations.  A range is only as good as its source: rows not measured on
// the vendor's silicon say so in their source column, and an open-ended
// range keeps a workaround after the vendor's fix until a row is narrowed.
// Bits apply per runtime, not per device.  The host backend has no rows.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail::gpu {

// The last version of a row no release is known to be free of.
inline constexpr int64_t k_any_version = INT32_MAX;

struct VendorBug {
    VendorBugInfo info;
    int32_t vendor;       // GPUMEM_BACKEND_*
    int64_t first, last;  // runtime versions, inclusive
    uint32_t workaround;  // Workaround bit
};

inline constexpr VendorBug k_vendor_bugs[] = {
#define VENDOR_BUG(name, vendor, first, last, workaround, bug, what, source)                                           \
    {{#name, bug, what, source, bug "; workaround: " what " (source: " source ")"}, vendor, first, last, workaround},
#include "backends/gpu/vendor_bugs.def"
#undef VENDOR_BUG
};

// The rows for `vendor` at `version`, appended to *out; returns their workaround bits.
inline uint32_t vendor_bugs_in_force(int32_t vendor, int64_t version, std::vector<VendorBugInfo> *out)
{
    uint32_t bits = 0;
    for (const VendorBug &b : k_vendor_bugs) {
        if (b.vendor == vendor && version >= b.first && version <= b.last) {
            out->push_back(b.info);
            bits |= b.workaround;
        }
    }
    return bits;
}

} // namespace gpumem::detail::gpu
