// Known answer: the hot code is a member function template of a class template nested in
// namespaces, instantiated with a long type, so the demangled signature is long; perf-style
// short names drop its parameter list and return type. Usage: templates MILLISECONDS
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace outer {
namespace inner {
template <typename K, typename V> struct Table {
    std::vector<std::pair<K, V>> rows;

    template <typename F>
    __attribute__((noinline)) unsigned long fold(const std::map<K, std::vector<V>> &extra,
                                                 F f) const {
        unsigned long acc = extra.size();
        for (unsigned r = 0; r < 2000; r++)
            for (const auto &row : rows)
                acc = f(acc, row.second + r);
        return acc;
    }
};
} // namespace inner
} // namespace outer

static volatile unsigned long sink;

int main(int argc, char **argv) {
    double ms = argc > 1 ? std::atof(argv[1]) : 1000;
    outer::inner::Table<std::string, unsigned long> t;
    for (unsigned long i = 0; i < 64; i++)
        t.rows.push_back({std::to_string(i), i});
    std::map<std::string, std::vector<unsigned long>> extra;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
    while (std::chrono::steady_clock::now() < end)
        sink += t.fold(extra, [](unsigned long a, unsigned long b) { return a * 31 + b; });
    return 0;
}
