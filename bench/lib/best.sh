# Sourced by benches: best() prints the best wall time in ms of "$@" over 3 runs (its output
# discarded).
best() {
    local b=""
    for _ in 1 2 3; do
        local t0 t1; t0=$(date +%s%N); "$@" > /dev/null 2>&1; t1=$(date +%s%N)
        local ms=$(( (t1 - t0) / 1000000 ))
        if [ -z "$b" ] || [ "$ms" -lt "$b" ]; then b=$ms; fi
    done
    echo "$b"
}
