/* A shared library built without frame pointers, for the unwinding tests. Built twice: linked
 * (LIB_PREFIX lib_) and dlopen'ed (LIB_PREFIX dl_). */
#ifndef LIB_PREFIX
#define LIB_PREFIX lib_
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

volatile unsigned long CAT(LIB_PREFIX, sink);

__attribute__((noinline)) void CAT(LIB_PREFIX, leaf)(long n) {
    for (long i = 0; i < n; i++) CAT(LIB_PREFIX, sink) += i * i;
}
__attribute__((noinline)) void CAT(LIB_PREFIX, inner)(long n) {
    CAT(LIB_PREFIX, leaf)(n);
    CAT(LIB_PREFIX, sink)++;
}
__attribute__((noinline)) void CAT(LIB_PREFIX, outer)(long n) {
    CAT(LIB_PREFIX, inner)(n);
    CAT(LIB_PREFIX, sink)++;
}
