// C++ at -O2: templates and std::map insert/lookup (red-black tree code in libstdc++ and in the
// instantiations below). Built by bench/unwind/run.sh. Usage: maptmpl UNITS
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

template <typename K> K make_key(unsigned long x);
template <> unsigned long make_key<unsigned long>(unsigned long x) { return x * 2654435761UL % 1000003UL; }
template <> std::string make_key<std::string>(unsigned long x) { return "k" + std::to_string(x * 2654435761UL % 100003UL); }

template <typename K, typename V>
__attribute__((noinline)) void fill(std::map<K, V> &m, unsigned long n, unsigned long seed) {
    for (unsigned long i = 0; i < n; i++) m[make_key<K>(seed + i)] += V(i);
}

template <typename K, typename V>
__attribute__((noinline)) V probe(const std::map<K, V> &m, unsigned long n, unsigned long seed) {
    V acc = V();
    for (unsigned long i = 0; i < n; i++) {
        auto it = m.find(make_key<K>(seed * 7 + i));
        if (it != m.end()) acc += it->second;
    }
    return acc;
}

template <typename K>
__attribute__((noinline)) double round_of(unsigned long seed) {
    std::map<K, double> m;
    fill(m, 20000, seed);
    return probe(m, 40000, seed);
}

int main(int argc, char **argv) {
    long units = argc > 1 ? std::atol(argv[1]) : 10;
    double acc = 0;
    for (long u = 0; u < units * 4; u++) {
        acc += round_of<unsigned long>(u);
        acc += round_of<std::string>(u);
    }
    std::printf("%g\n", acc);
    return 0;
}
