#!/bin/sh
# hood diff --reconcile (issue 28, item 4) on real C code nobody here wrote: bzip2 1.0.8, built
# from the sources the bzip2-sys crate bundles (fetched as bench/calls/real.sh fetches them)
# with `-O2 -g -finstrument-functions -fno-omit-frame-pointer`, compressing 4 MiB of generated
# text. Both profilers in one run: `hood calls run --sample` (`hood record --off-cpu -F 2999`
# around `hood calls run`). Prints the reconciliation table (per function over 5 %: the call
# share, the profiler cost taken out of it, the statistical share and the breakdown of their
# difference), the closing count, and `hood annotate mainGtU` (where in the tiny function the
# samples fall); never pass/fail. Needs root (off-CPU tracepoints) and gcc.
# Measured 2026-11-27 (2 vCPUs at a load of 11-20 from other builds, debug hood, release
# libhood_rt.so). Recording A (load 11), reconciled before and after the profiler and entry
# columns: 0 of 6 functions over 5 % agreed within 2 points; now 5 of 5 (net/explained:
# mainSimpleSort 19.3/17.8, mainGtU 15.7/17.4, mainQSort3 28.2/26.9, mainSort 20.6/21.4,
# generateMTFValues 8.4/8.4; sendMTFValues went from 8.4 % of the call profile to 2.4 net
# against 1.1, bsW from 4.0 to 0.1 against 1.4). Recording B (load 15): 4 of 6; mainSimpleSort
# 21.4/17.4 (+3.9) and its tiny callee mainGtU 9.8/13.1 (-3.3) do not, though their sum does
# (31.2/30.5). The hooks cost 2.3 s and 5.4 s in samples under 8.7 M calls (mainGtU 6.6 M, bsW
# 1.8 M), 1.9 s and 5.0 s beyond the calibrated compensation, most of it waits for a CPU inside
# hooks (the load) and clock reads (rdtsc is this VM's hottest line, 11.6 % of A's samples).
# What moves points between mainGtU and its caller, and is left: (a) mainGtU's exit code after
# its exit hook (restoring five registers, returning) runs after the call's last timestamp, so
# the call profile charges it, and the preemptions that hit it, to the caller, while the
# sampler charges it to mainGtU; the entry column moves the entry code (3.5-4.1 points) by the
# address of the entry hook's call, but no address marks where the exit code ends; (b) the
# hooks' excess is split between callee and caller in the calibrated ratio, an assumption: at
# this load most of it is preemption, which falls wherever the hook was when it came.
# 2026-11-27, after the exit column (close2728; debug hood, load 7-15), three recordings: the
# exit column first charged everything after the highest exit-hook call: mainQSort3 calls the
# exit hook of inlined callees in its body and the rule moved 43 points to mainSort (2 of 6,
# 2 of 4, 5 of 7 agreed). Bounded to an epilogue (24 bytes past a call), the third recording
# reconciles 6 of 6 (mainSimpleSort -0.2 with 0.7 points of exit code, mainGtU -0.0,
# mainQSort3 +1.9, mainSort -1.2, sendMTFValues -1.0, generateMTFValues +0.0; without the
# column +0.5 and -0.7 for the first two). The other two were not rerun with the bound.
# 2026-11-27, quiet machine (load 0.5, debug hood, release libhood_rt.so), one recording: 3 of 5;
# mainGtU +5.7 and mainSimpleSort -3.0. The hooks' calibrated compensation exceeded their
# measured cost (-82 ms beyond it), so the call side's net share of mainGtU rose above its
# call share: at load the calibration falls short, quiet it overshoots.
# 2026-11-27, issue 28 (hooks2528), five recordings at load 19-20 (the machine never went below
# 17 that hour), debug hood, release libhood_rt.so with the inlined calls hooks, each
# reconciled with the old rule (the hooks' excess split in the calibrated ratio, comp_self :
# comp_child = 0.41 : 0.59 here) and the new one (the function keeps its calibrated comp_self,
# the excess is its callers'): agreeing functions over 5 %, old -> new: 2/6 -> 2/5, 0/4 -> 1/4,
# 2/7 -> 3/7, 2/7 -> 2/7, 0/6 -> 1/6; mainGtU -11.1 -> -5.8, -12.2 -> -5.0, -14.3 -> -8.3,
# -21.3 -> -13.6, -6.1 -> +4.1 points, mainSimpleSort the mirror image. What is left at this
# load: waits for a CPU charged to mainGtU's own code (19-26 points, against 1-2 points of its
# CPU samples once its entry and exit code go to the caller), which the call profile charges
# to mainSimpleSort; not explained yet (see the notes of issue 28). Five more at load 17-21:
# 2/6 -> 2/6, 2/6 -> 2/5, 3/7 -> 3/7, 2/5 -> 4/5, 3/6 -> 2/6; mainGtU -16.8 -> -10.2, -16.8 ->
# -9.3, -14.4 -> -7.8, -9.9 -> -0.7, -17.1 -> -9.3. On a known split (outer runs the work of
# its 5 M calls of tiny itself; both profilers in one run, load 16) the sampler charges tiny
# 31-43 points of waits for a CPU in its own code against 8 points of its CPU samples and 33
# of the hooks': waits inside the runtime seem to lose its frames in the off-CPU stacks.
# At load 4.6-5.1 (the lowest that hour), new rule only, five recordings: 2/5, 1/4, 1/4, 2/6,
# 2/4; mainGtU -9.4, -13.4, -4.6, -12.9, -4.8 (mainSimpleSort the mirror image). Waits for a CPU
# still dominate the statistical side (mainQSort3 30.5 points against 4.9 sampled, mainGtU 20.6
# against 1.1: 19x where the others are 5-6x).
# 2026-11-27, issue 28 (recon28): the hooks' samples split at the hooks' timestamps, as their
# stacks show (hood_rt::hook::entry_stamped / exit_stamped frames, inlined). The evidence: on a
# known split (outer calls tiny 5 M times, both profilers in one run, load 9-12) 73 % of the
# entry hook's and 53 % of the exit hook's CPU samples fall on the instruction after rdtsc, and
# the waits for a CPU inside the hooks keep the hook frames (suspected cause (b), hook frames
# lost in waits, was not seen: 98 % of the wall time under tiny is in hook frames). The rule
# of the last stop (tiny keeps its calibrated part) charged outer -21.0 / tiny +21.0 points;
# the split at the timestamps -4.2 / +4.2 (about 10 ns a call that the call profile puts
# inside the call beyond what the sampler sees there; not explained). Also fixed: the entry
# sites were learnt from samples in the naked __cyg_profile_func_enter trampoline (no unwind
# info), which once put spin_b's whole body in main's entry column. bzip2, three recordings at
# load 9.1-9.6 (debug hood, release libhood_rt.so), functions over 5 %, net call share /
# explained statistical share +- its sampling error (1 sd) / difference:
#   1: mainSimpleSort 11.1/12.7+-2.4/-1.6, mainQSort3 32.5/31.2+-3.3/+1.3, mainGtU
#      17.6/15.7+-3.6/+1.9, mainSort 18.7/20.4+-3.0/-1.7, sendMTFValues 4.8/5.0+-2.8/-0.2,
#      generateMTFValues 8.7/8.7+-2.0/+0.0: 6 of 6;
#   2: mainSimpleSort 11.5/9.0+-3.9/+2.5, mainQSort3 38.9/42.1+-7.1/-3.2, mainGtU
#      17.0/14.9+-4.6/+2.0, mainSort 17.9/19.0+-6.1/-1.1, generateMTFValues 6.2/6.3+-3.4/-0.1:
#      2 of 5;
#   3: mainSimpleSort 10.8/13.7+-2.9/-2.9, mainQSort3 45.2/38.3+-3.7/+6.9, mainGtU
#      15.1/12.1+-3.1/+3.0, mainSort 11.6/18.7+-2.7/-7.1, sendMTFValues 5.0/5.8+-2.6/-0.8,
#      generateMTFValues 6.2/6.2+-1.4/+0.0: 2 of 6.
# Every miss but recording 3's mainSort (2.6 sd) is within 2 sd of the statistical side's own
# error: at this load 4-5 s of the 8-10 s are waits for a CPU, a few hundred stacks of about
# 8 ms each, so the 2-point tolerance is below what the sampler can tell; a quiet machine
# (no waits) is where the number can be checked. The same hood on a recording made before
# with the old runtime (no such frames: the old rule, said on the Profiler cost line):
# mainSimpleSort -15.7, mainGtU +20.8, 2 of 6.
# 2026-11-27, stop 38: the cause of the disagreement on a quiet machine was hood-reconcile not
# knowing the hooks' current frames: since the hooks jump to a common path per mode, the frame
# under an instrumented function is `hood_rt::calls_enter` / `calls_exit` (or `hook_other`),
# not `__cyg_profile_func_exit` / `hood_rt::entry`, so every hook sample and wait counted on
# the caller's side (mainGtU's profiler column was minus its whole compensation) and no exit
# code was found. With the frames known, the split by the samples' addresses still left
# mainGtU and mainSimpleSort 2-8 points apart (`hood annotate --asm hood_rt::calls_enter`:
# half of each hook's samples fall on the instruction after `rdtsc`, and where in the read the
# counter is latched no address shows); the hooks' CPU time beyond the compensation is now
# spread as the compensation was, and only their waits are split at the timestamps. Three
# recordings (release recorder and runtime; the machine at load 2 from a niced build, two of
# them beside two shell busy loops), functions over 5 %, Δ points, frames unknown -> frames
# known, split by address -> spread as compensated:
#   quiet:  mainGtU +28.9 -> +7.6 -> -0.2, mainSimpleSort -27.0 -> -6.2 -> +1.5: 3/6, 3/5, 5/5;
#   loaded: mainGtU +26.1 -> +2.6 -> +0.6, mainSimpleSort -24.5 -> -2.0 -> +0.2: 3/6, 3/5, 5/5;
#   loaded: mainGtU +32.5 -> +5.8 -> +0.6, mainSimpleSort -30.4 -> -4.7 -> +0.2: 4/8, 5/7, 7/7.
# Three more quiet ones (load 2), frames known, split by address -> spread as compensated:
#   mainGtU +8.8 -> +7.0, mainSimpleSort -7.7 -> -6.7 (4/6 both ways);
#   mainGtU +5.5 -> -0.8, mainSimpleSort -6.9 -> +0.1, mainQSort3 +2.0 both (4/5 -> 4/5);
#   mainGtU +7.3 -> -3.8, mainSimpleSort -4.5 -> +4.4 (3/5 -> 3/5).
# So not settled: over the six, the spread rule's worst pair is 7 points (the address split's
# 8.8), in one run of six; the sampling error of each is about 1.
# 2026-11-28 (issue 28, helper recon28): what is left between mainGtU and mainSimpleSort, and
# between reconcile_tiny's tiny and outer, depends on the call site: the hooks' rdtsc does not
# wait for the caller's instructions still executing (bench/diff/tiny.sh measures it, with
# bzip2 and both runtimes interleaved; shipped runtime, load 3.5-5.9: bzip2 7 of 14 runs with
# every function over 5 % within 2 points).
# Usage: bench/diff/reconcile.sh        HOOD=path/to/hood uses that binary (and the
# libhood_rt.so beside it, or $HOOD_RT_LIB) instead of building the release ones.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/bench/lib/hood.sh"
bench_init
export HOOD_SHM_DIR=$WORK

. "$ROOT/bench/lib/c-sources.sh"
BZ=$(crate_dirs "$WORK" bzip2-sys=0.1.13 | awk '$1 == "bzip2-sys" {print $2}')/bzip2-1.0.8
gcc -O2 -g -finstrument-functions -fno-omit-frame-pointer -w -o "$WORK/bzip2" \
    $(bzip2_sources "$BZ")
text_file "$WORK/text" 4
echo "load average before: $(cut -d' ' -f1 /proc/loadavg)"
"$HOOD" calls run --sample="$WORK/prof.data" -o "$WORK/calls.data" -- \
    "$WORK/bzip2" -c -k "$WORK/text" > /dev/null
"$HOOD" diff --reconcile "$WORK/calls.data" "$WORK/prof.data" --width 0 --top 12
# The functions over 5 % with the statistical share's sampling error (one standard deviation).
"$HOOD" diff --reconcile "$WORK/calls.data" "$WORK/prof.data" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
for x in r["rows"]:
    if x["over"]:
        print("%-20s net %5.1f  explained %5.1f +- %.1f  difference %+5.1f" % (x["name"],
              x["net_percent"], x["explained_percent"], x["explained_error_points"],
              x["delta_points"]))'
"$HOOD" annotate -i "$WORK/prof.data" mainGtU | sed -n '1,20p'

echo "load average after: $(cut -d' ' -f1 /proc/loadavg)"
