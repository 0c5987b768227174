// Micro-benchmark of the pool's hot path: allocate + free of a cached size on
// one stream, straight through pool.hpp (no API layer), against malloc+free
// measured in the same run; then the same with 1..N threads, each on its own
// stream.  Not a test: run it by hand (meson compile bench_pool_internal).
//
//   bench_pool_internal [pairs_per_run] [max_threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "pool_test_util.hpp"

using namespace pool_test;
namespace pool = gpumem::detail::pool;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRuns = 7;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// ns per allocate+free pair on one stream.
double pool_pair_ns(pool::Pool *p, StreamState &s, size_t size, long pairs)
{
    void *ptr = nullptr;
    auto t0 = Clock::now();
    for (long i = 0; i < pairs; ++i) {
        if (pool::allocate(p, size, s, &ptr) != GPUMEM_SUCCESS || pool::deallocate(ptr, s, nullptr) != GPUMEM_SUCCESS)
            std::abort();
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(pairs);
}

double malloc_pair_ns(size_t size, long pairs)
{
    auto t0 = Clock::now();
    for (long i = 0; i < pairs; ++i) {
        void *volatile q = std::malloc(size);
        std::free(q);
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(pairs);
}

// Pairs per second over all threads, each on its own stream.
double threaded_rate(pool::Pool *p, int threads, long pairs)
{
    std::vector<std::thread> workers;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    Clock::time_point t0;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            Stream s;
            void *ptr = nullptr;
            pool::allocate(p, 4096, s, &ptr); // warm the cache and the memo
            pool::deallocate(ptr, s, nullptr);
            ++ready;
            while (!go.load())
                std::this_thread::yield();
            for (long i = 0; i < pairs; ++i) {
                pool::allocate(p, 4096 + size_t(t) * 256, s, &ptr);
                pool::deallocate(ptr, s, nullptr);
            }
        });
    }
    while (ready.load() < threads)
        std::this_thread::yield();
    t0 = Clock::now();
    go = true;
    for (auto &w : workers)
        w.join();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return double(threads) * double(pairs) / seconds;
}

std::string cpu_model()
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0)
            return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

} // namespace

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? std::atol(argv[1]) : 2000000;
    int max_threads = argc > 2 ? std::atoi(argv[2]) : 8;
    std::printf("command: %s %ld %d\n", argv[0], pairs, max_threads);
    std::printf("machine: %s, %u hardware threads\n", cpu_model().c_str(), std::thread::hardware_concurrency());

    auto stats = std::make_shared<UpstreamStats>();
    pool::Pool *p = nullptr;
    if (pool::create(std::make_unique<FakeUpstream>(stats), pool::Config{}, &p) != GPUMEM_SUCCESS)
        return 1;
    Stream s;
    std::printf("\nsingle thread, one stream: median of %d runs of %ld pairs\n", kRuns, pairs);
    std::printf("%10s %14s %14s %8s\n", "size", "pool ns/pair", "malloc ns/pair", "ratio");
    for (size_t size : {256, 4096, 65536, 1 << 20}) {
        pool_pair_ns(p, s, size, pairs / 10); // warm up
        std::vector<double> pool_ns, malloc_ns;
        for (int r = 0; r < kRuns; ++r) {
            pool_ns.push_back(pool_pair_ns(p, s, size, pairs));
            malloc_ns.push_back(malloc_pair_ns(size, pairs));
        }
        double a = median(pool_ns), b = median(malloc_ns);
        std::printf("%10zu %14.1f %14.1f %8.2f\n", size, a, b, a / b);
    }

    std::printf("\nthreads, each on its own stream (4 KiB): median of %d runs\n", kRuns);
    std::printf("%8s %16s %10s\n", "threads", "Mpairs/s", "speedup");
    double one = 0;
    for (int t = 1; t <= max_threads; t *= 2) {
        std::vector<double> rates;
        for (int r = 0; r < kRuns; ++r)
            rates.push_back(threaded_rate(p, t, pairs / 4));
        double rate = median(rates);
        if (t == 1)
            one = rate;
        std::printf("%8d %16.2f %10.2f\n", t, rate / 1e6, rate / one);
    }
    pool::destroy(p);
    return 0;
}
