// The table of known vendor bugs (vendor_bugs.def), and the rows in force for
// one runtime.  Shared by the CUDA and HIP backends.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail::gpu {

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
