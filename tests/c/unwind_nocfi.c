/* Code with frame pointers and no call frame information, as V8's builtins in node or
 * hand-written assembly: built -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
 * -fno-asynchronous-unwind-tables -fno-unwind-tables, linked into unwind_fpmix (see there). */
extern volatile unsigned long fpmix_sink;
void fpmix_callback(long n);

/* The local array gives the leaf a frame, so gcc sets up its frame pointer (it leaves it out
 * of a leaf that needs none, whatever -mno-omit-leaf-frame-pointer says). */
__attribute__((noinline)) void nocfi_leaf(long n) {
    volatile long acc[4] = {0};
    for (long i = 0; i < n; i++) acc[i & 3] += i ^ (i >> 5);
    fpmix_sink += acc[0] + acc[3];
}

__attribute__((noinline)) void nocfi_mid(long n) {
    nocfi_leaf(n);
    fpmix_callback(n);
    fpmix_sink++;
}
