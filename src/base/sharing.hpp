// How far apart data written by different threads must lie.
#pragma once

#include <cstddef>

namespace gpumem::detail {

// x86's L2 spatial prefetcher fetches 64-byte lines in aligned 128-byte
// pairs: two threads writing the two lines of one pair still contend.
inline constexpr std::size_t k_false_sharing_range = 128;

} // namespace gpumem::detail
