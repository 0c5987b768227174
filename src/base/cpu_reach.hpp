// Whether the CPU can read or write memory, asked of the kernel, which answers
// EFAULT where an access would fault: memory nobody vouches for is checked so
// before a runtime that would touch it with the CPU sees it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumem::detail {

// Whether the CPU can read (`write`: and write) the first byte of every page
// of [p, p + n): false with *bad the first page that fails.  A write check
// puts back the byte it read, so the caller makes sure nothing else writes
// those bytes meanwhile (the stream's earlier work has finished).
bool cpu_reaches(void *p, size_t n, bool write, uintptr_t *bad);

} // namespace gpumem::detail
