// The table of native-pool allocations: insert, take (with backward-shift
// deletion), interior lookup, against a reference std::map.
#include <cstdio>
#include <map>
#include <random>

#include "core/pools/native_blocks.hpp"

using namespace gpumem::detail;

int main()
{
    NativeBlocks table;
    std::map<uintptr_t, size_t> reference;
    std::mt19937_64 rng(42);
    int failures = 0;
    auto check = [&](bool ok, const char *what) {
        if (!ok && failures++ < 10)
            std::fprintf(stderr, "FAIL: %s\n", what);
    };
    for (int step = 0; step < 200000; ++step) {
        bool insert = reference.size() < 2000 && (reference.empty() || rng() % 100 < 55);
        if (insert) {
            // Clustered keys (256-byte apart) make long probe runs.
            uintptr_t key = 0x100000 + (rng() % 50000) * 256;
            if (reference.count(key))
                continue;
            NativeBlock b;
            b.size = 256;
            b.pool = key * 3;
            table.insert(reinterpret_cast<void *>(key), b);
            reference[key] = 256;
        } else {
            auto it = reference.begin();
            std::advance(it, rng() % reference.size());
            NativeBlock b;
            check(table.take(reinterpret_cast<void *>(it->first), &b), "take of a live key");
            check(b.pool == it->first * 3, "the block taken is the one inserted");
            check(!table.take(reinterpret_cast<void *>(it->first), &b), "second take fails");
            reference.erase(it);
        }
    }
    for (auto &[key, size] : reference) {
        void *base = nullptr;
        NativeBlock b;
        check(table.find_containing(reinterpret_cast<void *>(key + 100), &base, &b) &&
                  base == reinterpret_cast<void *>(key), "interior lookup");
    }
    check(table.take_all().size() == reference.size(), "take_all returns every live block");
    NativeBlock b;
    check(!table.take(nullptr, &b), "NULL is never live");
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
