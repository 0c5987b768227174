// Rows and boxes: 2-D and 3-D copies, fills of pitched rows and of 16- and
// 32-bit elements (gpumem_memcpy_2d/_3d, gpumem_memset_2d/_d16/_d32).
//
// Design note: checked once, placed once, one call where the runtime can.
// - Every row is checked before anything is enqueued, as gpumem_memcpy checks
//   its one range (Pointers::check_range, Memory::check_unknown_memory).  The
//   common case costs one check per side: the extent from the first row's
//   start to the last row's end lies in one allocation gpumem knows, and so
//   does every row.  Only where it does not (memory gpumem did not make, rows
//   over several allocations, a bad row) is each row checked, and the first
//   bad one is named ("row 17", "row 3 of slice 2").  The write check of host
//   memory nobody knows reads /proc/self/maps (cpu_mapped): it touches no byte
//   between the rows, which other threads may be writing.
// - Placement is the 1-D copy's (core/placement.hpp), decided from each
//   side's owner.  Where every row of each side has the same owner and kind of
//   memory, the rows go to the runtime in one call (RowMemops: the host
//   backend's loop, cuMemcpy2DAsync/3DAsync, hipMemcpy2DAsync/3DAsync...).
//   Otherwise (the runtime lacks the calls, the two sides are two devices'
//   memory, which only a peer copy reaches, or a side's rows lie in
//   allocations of different owners) gpumem makes one copy per row, in stream
//   order, with the 1-D copy's placement per row.
// - A fill runs on the owner of the rows, bridged to the caller's stream of
//   another device as gpumem_memset is (Memory::ordered).  Rows of host
//   memory no runtime knows are filled by the CPU through the kernel, as
//   gpumem_memset fills it.  Without the runtime's 16- and 32-bit fills, an
//   element whose bytes are all alike is one byte fill, and any other one
//   fill of every size-th byte per byte of the element.
// Limits: a side whose base is memory gpumem does not know is taken as one
// kind of memory for all its rows (as the 1-D copy takes its range).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "base/error.hpp"
#include "gpumem/gpumem.h"

namespace gpumem::detail {

class Devices;
class Memory;
class Pointers;
struct StreamState;

class Rows {
public:
    // `runtime`: the backend's rows and boxes, nullptr where it has none (one
    // call per row then); `memory`: the 1-D copies, fills and their checks;
    // `streams`: waits for a stream; `pointers`: the directory; `devices`:
    // checks and what each device can do.
    Rows(RowMemops *runtime, Memory &memory, Streams &streams, Pointers &pointers, const Devices &devices)
        : runtime_(runtime), memory_(memory), streams_(streams), pointers_(pointers), devices_(devices)
    {
    }
    Rows(const Rows &) = delete;
    Rows &operator=(const Rows &) = delete;

    RowMemops *runtime() const { return runtime_; }
    int32_t support_level(int32_t device) const;

    // A copy of `c.depth` slices of `c.height` rows (checked by the caller:
    // non-empty, pitches >= width, no overflow).
    status_t copy(const RowsCopy &c, gpumem_stream_t stream, bool async);
    status_t fill(void *dst, size_t pitch, unsigned char byte, size_t width, size_t height, gpumem_stream_t stream,
                  bool async);
    // `count` elements of `size` bytes (2 or 4; dst aligned, checked by the caller).
    status_t fill_elements(void *dst, uint32_t value, unsigned size, size_t count, gpumem_stream_t stream,
                           bool async);

    // What the checks found of one side of a copy or fill.
    struct Side {
        int32_t owner = GPUMEM_DEVICE_HOST;
        int32_t memory = GPUMEM_POOL_MEMORY_UNKNOWN;
        bool uniform = true; // every row has this owner and memory
    };

private:
    // Every row of one side (`rows` per slice), as check_range checks a range.
    status_t check_side(const void *base, size_t pitch, size_t rows, size_t width, size_t height, size_t depth,
                        bool write, const char *what, Side *out) const;

    RowMemops *runtime_;
    Memory &memory_;
    Streams &streams_;
    Pointers &pointers_;
    const Devices &devices_;
};

} // namespace gpumem::detail
