// paging-sim: how low can reserved/live go in RMM's random_allocations pattern
// when memory comes in pages (2 MiB on an H100) and a page goes back the
// moment no live block touches it (no slack, no cost)?  A bound for
// gpumem's own pool (docs/semantics.md, "What paging removes"), not a
// benchmark: no allocator of gpumem's runs here.
//
//   g++ -O2 -o paging-sim tools/paging-sim.cpp
//   ./paging-sim CAP_MIB POLICY SEED [PAGE_BYTES]
//
// POLICY 0: best fit, a request at the low end of the smallest free block
//           that holds it (gpumem's placement);
//        1: the free block and end (low or high) that needs the fewest new
//           pages, best fit among equals;
//        2: as 1, low ends only.
// Prints the peak backed bytes over the peak live requested bytes.  The
// pattern is gpumem-bench-pool's part (c): 100,000 steps, sizes uniform in
// [1, 4 MiB], allocate with probability 73% while under the cap, else free a
// random live block; splitmix64 seeded with SEED.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

namespace {

uint64_t g_rng;
uint64_t next_random()
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t g_page = uint64_t(2) << 20;
int g_policy = 0;
std::map<uint64_t, uint64_t> g_free; // address -> size, coalesced
std::vector<uint32_t> g_users;       // live blocks touching each page
uint64_t g_top = 0, g_backed = 0;

void touch(uint64_t at, uint64_t size, int delta)
{
    const uint64_t first = at / g_page, end = (at + size + g_page - 1) / g_page;
    if (end > g_users.size())
        g_users.resize(end + 1024, 0);
    for (uint64_t i = first; i < end; ++i) {
        if (delta > 0 && g_users[i]++ == 0)
            g_backed += g_page;
        if (delta < 0 && --g_users[i] == 0)
            g_backed -= g_page;
    }
}

uint64_t new_pages(uint64_t at, uint64_t size)
{
    uint64_t n = 0;
    for (uint64_t i = at / g_page, end = (at + size + g_page - 1) / g_page; i < end; ++i)
        n += i >= g_users.size() || g_users[i] == 0;
    return n;
}

void free_range(uint64_t at, uint64_t size)
{
    auto it = g_free.lower_bound(at);
    if (it != g_free.end() && it->first == at + size) {
        size += it->second;
        it = g_free.erase(it);
    }
    if (it != g_free.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == at) {
            at = prev->first;
            size += prev->second;
            g_free.erase(prev);
        }
    }
    g_free[at] = size;
}

uint64_t allocate(uint64_t size)
{
    uint64_t best = UINT64_MAX, best_cost = UINT64_MAX, best_size = UINT64_MAX;
    for (const auto &[at, free_size] : g_free) {
        if (free_size < size)
            continue;
        if (g_policy == 0) {
            if (free_size < best_size)
                best_size = free_size, best = at;
            continue;
        }
        const uint64_t ends[2] = {at, at + free_size - size};
        for (int k = 0; k < (g_policy == 2 ? 1 : 2); ++k) {
            const uint64_t cost = new_pages(ends[k], size);
            if (cost < best_cost || (cost == best_cost && free_size < best_size))
                best_cost = cost, best_size = free_size, best = ends[k];
        }
    }
    if (best == UINT64_MAX) { // grow at the top, taking a free tail along
        uint64_t at = g_top;
        if (!g_free.empty()) {
            auto last = std::prev(g_free.end());
            if (last->first + last->second == g_top) {
                at = last->first;
                g_free.erase(last);
            }
        }
        g_top = at + size;
        touch(at, size, 1);
        return at;
    }
    auto it = std::prev(g_free.upper_bound(best));
    const uint64_t from = it->first, free_size = it->second;
    g_free.erase(it);
    if (best > from)
        g_free[from] = best - from;
    if (best + size < from + free_size)
        g_free[best + size] = from + free_size - best - size;
    touch(best, size, 1);
    return best;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s CAP_MIB POLICY SEED [PAGE_BYTES]\n", argv[0]);
        return 2;
    }
    const uint64_t cap = std::strtoull(argv[1], nullptr, 10) << 20;
    g_policy = std::atoi(argv[2]);
    g_rng = std::strtoull(argv[3], nullptr, 10);
    if (argc > 4)
        g_page = std::strtoull(argv[4], nullptr, 0);
    struct Live {
        uint64_t at, size, requested;
    };
    std::vector<Live> live;
    uint64_t live_bytes = 0, peak_live = 0, peak_backed = 0;
    for (long step = 0; step < 100000; ++step) {
        const uint64_t size = 1 + next_random() % (uint64_t(4) << 20);
        const bool alloc = live.empty() || (next_random() % 100 < 73 && live_bytes + size <= cap);
        if (alloc) {
            const uint64_t rounded = (size + 255) / 256 * 256; // gpumem's pool rounds to 256 B
            live.push_back({allocate(rounded), rounded, size});
            live_bytes += size;
            peak_live = std::max(peak_live, live_bytes);
            peak_backed = std::max(peak_backed, g_backed);
        } else {
            const size_t victim = next_random() % live.size();
            touch(live[victim].at, live[victim].size, -1);
            free_range(live[victim].at, live[victim].size);
            live_bytes -= live[victim].requested;
            live[victim] = live.back();
            live.pop_back();
        }
    }
    std::printf("cap %s MiB, policy %d, seed %s, page %llu: peak backed / peak live %.3f\n", argv[1], g_policy,
                argv[3], static_cast<unsigned long long>(g_page), double(peak_backed) / double(peak_live));
    return 0;
}
