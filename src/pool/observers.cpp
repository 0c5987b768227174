// The observers of pool growth and chunk release (the core's trace, and its
// pointer directory's memory of freed ranges); chunks.cpp calls them.
#include <atomic>

#include "pool/pool_internal.hpp"

namespace gpumem::detail::pool {

std::atomic<GrowthObserver> g_growth_observer{nullptr};

void set_growth_observer(GrowthObserver observer) { g_growth_observer.store(observer, std::memory_order_release); }

std::atomic<ReleaseObserver> g_release_observer{nullptr};

void set_release_observer(ReleaseObserver observer) { g_release_observer.store(observer, std::memory_order_release); }

} // namespace gpumem::detail::pool
