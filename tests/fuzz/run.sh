#!/usr/bin/env bash
# run.sh — runs the libFuzzer targets of tests/fuzz/ (the Makefile's fuzz-smoke and fuzz call it).
#
#   tests/fuzz/run.sh probe CC          can CC build and link -fsanitize=fuzzer? (prints why not)
#   tests/fuzz/run.sh smoke TARGET...   each target from its seed corpus for a short fixed budget
#                                       (FUZZ_SMOKE_RUNS inputs or FUZZ_SMOKE_SECONDS, whichever
#                                       comes first), up to `nproc` at a time; new inputs go to a
#                                       scratch dir, the committed corpus is only read
#   tests/fuzz/run.sh long TARGET...    each target for FUZZ_SECONDS, one after the other, growing
#                                       tests/fuzz/corpus/TARGET/ in place
#
# Any crash, leak, timeout or out-of-memory fails the run; the input that did it is saved under
# $FUZZ_BUILD/artifacts/ and the command that replays it is printed. Logs: $FUZZ_BUILD/logs/.
set -uo pipefail
cd "$(dirname "$0")/../.."

FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SMOKE_RUNS=${FUZZ_SMOKE_RUNS:-200000}
FUZZ_SMOKE_SECONDS=${FUZZ_SMOKE_SECONDS:-15}
FUZZ_SECONDS=${FUZZ_SECONDS:-600}

# Longest input per target: a few whole messages, cells or connection files.
max_len() {
    case $1 in
        wire|frame) echo 16384 ;;
        cell) echo 8192 ;;
        expr) echo 1024 ;;
        chain) echo 4096 ;;             # a header and three texts: the chain grows inside
        *) echo 4096 ;;
    esac
}

probe() {
    local cc=${1:-}
    if [ -z "$cc" ]; then
        echo "no clang found (install clang and libclang-rt-dev, e.g. clang-14 libclang-rt-14-dev)"
        return 1
    fi
    local dir
    dir=$(mktemp -d)
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
        > "$dir/probe.c"
    if ! "$cc" -fsanitize=fuzzer,address,undefined "$dir/probe.c" -o "$dir/probe" 2> "$dir/err"; then
        echo "$cc cannot link -fsanitize=fuzzer,address,undefined (is libclang-rt-dev installed?):"
        sed 's/^/    /' "$dir/err" | head -5
        rm -rf "$dir"
        return 1
    fi
    rm -rf "$dir"
}

# The numbers libFuzzer prints at the end (-print_final_stats=1) and its last status line.
summary() {
    local t=$1 log=$2 rc=$3 secs=$4
    local execs cov ft corp
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
    printf '  %-6s %s  execs=%s cov=%s ft=%s corpus=%s time=%ss\n' "$t" \
        "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")" \
        "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$secs"
    if [ "$rc" -ne 0 ]; then
        grep -E 'ERROR: |SUMMARY: |runtime error|property violated|Test unit written|ALARM|deadly signal|out-of-memory' \
            "$log" | head -20 | sed 's/^/      /'
        local art
        art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        [ -n "$art" ] && echo "      reproduce: $FUZZ_BUILD/fuzz_$t $art"
        echo "      full log: $log"
    fi
}

# run_one MODE TARGET: runs one fuzzer, writes its log, prints the summary; returns its status.
run_one() {
    local mode=$1 t=$2
    local bin=$FUZZ_BUILD/fuzz_$t seeds=tests/fuzz/corpus/$t dict=tests/fuzz/$t.dict
    local log=$FUZZ_BUILD/logs/$t.$mode.log
    mkdir -p "$FUZZ_BUILD/logs" "$FUZZ_BUILD/artifacts"
    if [ ! -x "$bin" ]; then
        echo "  $t: $bin is missing (make fuzz-build)"
        return 1
    fi
    local args=(-max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                -detect_leaks=1 -artifact_prefix="$FUZZ_BUILD/artifacts/$t-")
    [ -f "$dict" ] && args+=(-dict="$dict")
    local dirs
    if [ "$mode" = smoke ]; then
        local scratch=$FUZZ_BUILD/smoke-corpus/$t
        rm -rf "$scratch"
        mkdir -p "$scratch"
        args+=(-runs="$FUZZ_SMOKE_RUNS" -max_total_time="$FUZZ_SMOKE_SECONDS")
        dirs=("$scratch" "$seeds")
    else
        mkdir -p "$seeds"
        args+=(-max_total_time="$FUZZ_SECONDS")
        dirs=("$seeds")
    fi
    local start=$SECONDS
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" "${args[@]}" "${dirs[@]}" > "$log" 2>&1
    local rc=$?
    summary "$t" "$log" "$rc" "$((SECONDS - start))"
    return "$rc"
}

cmd=${1:-}
shift || true
case $cmd in
    probe)
        probe "${1:-}"
        ;;
    smoke)
        jobs=$(nproc 2>/dev/null || echo 2)
        echo "fuzz-smoke: ${FUZZ_SMOKE_RUNS} inputs or ${FUZZ_SMOKE_SECONDS} s per target, $jobs at a time"
        start=$SECONDS
        mkdir -p "$FUZZ_BUILD/logs"
        for t in "$@"; do
            rm -f "$FUZZ_BUILD/logs/$t.smoke.rc"
            while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
                wait -n
            done
            # each job prints its own summary (a line, or a block on failure) when it ends
            { run_one smoke "$t"; echo $? > "$FUZZ_BUILD/logs/$t.smoke.rc"; } &
        done
        wait
        failed=0
        for t in "$@"; do
            [ "$(cat "$FUZZ_BUILD/logs/$t.smoke.rc" 2>/dev/null)" = 0 ] || failed=$((failed + 1))
        done
        echo "fuzz-smoke: $# targets, $failed failed, $((SECONDS - start)) s"
        [ "$failed" -eq 0 ]
        ;;
    long)
        echo "fuzz: ${FUZZ_SECONDS} s per target, corpus grows in tests/fuzz/corpus/TARGET/"
        failed=0
        for t in "$@"; do
            run_one long "$t" || failed=$((failed + 1))
        done
        echo "fuzz: $# targets, $failed failed"
        [ "$failed" -eq 0 ]
        ;;
    *)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
