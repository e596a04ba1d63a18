// Known answer for uprobes on C++ names (`--probe 'shapes::Square::area'`): built plain
// (-O1). main calls shapes::Square::area() 6 times, twice<int>() 4 times and twice<double>()
// 2 times.
#include <cstdio>

namespace shapes {
struct Square {
    int side;
    __attribute__((noinline)) int area() const;
};
int Square::area() const {
    __asm__ volatile("" ::: "memory");
    return side * side;
}
} // namespace shapes

template <typename T> __attribute__((noinline)) T twice(T x) {
    __asm__ volatile("" ::: "memory");
    return x + x;
}

int main() {
    long s = 0;
    for (int i = 0; i < 6; i++) {
        shapes::Square q{i};
        s += q.area();
    }
    for (int i = 0; i < 4; i++) s += twice<int>(i);
    for (int i = 0; i < 2; i++) s += (long)twice<double>(i);
    std::printf("%ld\n", s);
    return 0;
}
