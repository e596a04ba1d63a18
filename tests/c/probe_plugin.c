/* The library tests/c/probe_dlopen.c loads with dlopen (issue 26), built by the test with
 * -shared -fPIC -O1 into libprobe_plugin.so: plugin_work(i) calls plugin_leaf() i % 3 + 1
 * times and returns. */
__attribute__((noinline)) int plugin_leaf(int i) { __asm__ volatile("" ::: "memory"); return i; }

__attribute__((noinline)) int plugin_work(int i) {
    int s = 0;
    for (int k = 0; k <= i % 3; k++)
        s += plugin_leaf(k);
    return s;
}
