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

// Whether every page of [p, p + n) is mapped readable (`write`: and writable),
// as /proc/self/maps says: false with *bad the first page that is not.  It
// touches no byte of the range, so it suits memory whose bytes other threads
// may be writing (a registration), where cpu_reaches's write check would race.
// Without /proc, only readability is checked (cpu_reaches).
bool cpu_mapped(void *p, size_t n, bool write, uintptr_t *bad);

} // namespace gpumem::detail
