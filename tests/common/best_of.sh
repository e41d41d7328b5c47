# best_of.sh — sourced by the tests that hold lmshim's defaults to the
# better of LMS_POLICY=none and lru at the same settings, over the
# simulated GPU with a budget of $B MiB (128; a caller may set another
# after sourcing) and an L2 of $L2 MiB (an H200's 50 MiB of L2 against its
# 80 GiB, scaled to the budget); bad is 1 once a cell failed. The
# program prints `step_ms X` and `peak_mib Y` (tests/common/stream_program.h).
B=128
L2=0.08
bad=0
BAR=1.05   # the bar over the better of none and lru; a caller may set another between cells
ratios=()  # every cell's ratio so far (best_cell), for a caller's bar on their mean

# best_run FRAC POLICY [VAR=VALUE...] -- PROGRAM ARGS...: runs PROGRAM
# under POLICY (`defaults`: none set) at LMS_FRAC=FRAC with LMS_THRESHOLD=1M
# (`default`: neither set); prints "step_ms peak_mib", or "x x" when it failed.
best_run() {
    local frac=$1 pol=$2 out
    shift 2
    local envs=(SIMGPU_MEM=$((2 * B))M SIMGPU_L2_MIB=$L2 LMS_LIMIT=${B}M)
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    [ "$frac" != default ] && envs+=(LMS_FRAC=$frac LMS_THRESHOLD=1M)
    [ "$pol" != defaults ] && envs+=(LMS_POLICY=$pol)
    out=$(env -u LMS_POLICY -u LMS_FRAC -u LMS_THRESHOLD "${envs[@]}" "$@") || {
        echo "FAIL: $* frac=$frac $pol: the program failed" >&2
        echo "$out" >&2
        echo "x x"
        return
    }
    echo "$out" | awk '/^step_ms/ {t = $2} /^peak_mib/ {p = $2} END {print t, p}'
}

# best_cell LABEL FRAC [VAR=VALUE...] -- PROGRAM ARGS...: runs the three
# policies, prints one line, and sets bad=1 when the defaults take over
# $BAR x the better of none and lru, a run failed, or a peak passed $B;
# appends the cell's ratio to `ratios`.
best_cell() {
    local label=$1 frac=$2 tn pn tl pl td pd verdict
    shift 2
    read -r tn pn < <(best_run "$frac" none "$@")
    read -r tl pl < <(best_run "$frac" lru "$@")
    read -r td pd < <(best_run "$frac" defaults "$@")
    if [ "$tn" = x ] || [ "$tl" = x ] || [ "$td" = x ]; then
        bad=1
        return
    fi
    verdict=$(awk -v n="$tn" -v l="$tl" -v d="$td" -v b="$B" -v bar="$BAR" -v pn="$pn" -v pl="$pl" -v pd="$pd" 'BEGIN {
        best = n < l ? n : l
        r = d / best
        msg = sprintf("%.3f", r)
        if (r > bar) msg = msg " OVER"
        if (pn > b || pl > b || pd > b) msg = msg " PEAK"
        print msg }')
    printf '%s frac=%-7s none %8.2f lru %8.2f defaults %8.2f ms: %s\n' "$label" "$frac" "$tn" "$tl" "$td" "$verdict"
    ratios+=("${verdict%% *}")
    case $verdict in *OVER* | *PEAK*) bad=1 ;; esac
}

# best_grid KIND SEEDS STREAMS PROGRAM: best_cell over the grid of the
# stream programs (tests/common/stream_program.h): for each seed in SEEDS,
# kernels of different streams one at a time and side by side
# (SIMGPU_CONCURRENT 0, 1), each count of streams in STREAMS, 1.5x and 3x
# the budget, the default LMS_FRAC and 0.5; PROGRAM takes
# RATIO BUDGET_MIB KIND STREAMS SEED.
best_grid() {
    local kind=$1 seeds=$2 streams=$3 prog=$4 seed conc ns ratio frac
    for seed in $seeds; do
        for conc in 0 1; do
            for ns in $streams; do
                for ratio in 1.5 3; do
                    for frac in default 0.5; do
                        best_cell "$(printf '%s %-3s streams=%s concurrent=%s seed=%s' "$kind" "$ratio" "$ns" "$conc" "$seed")" \
                            "$frac" SIMGPU_CONCURRENT=$conc -- "$prog" "$ratio" "$B" "$kind" "$ns" "$seed"
                    done
                done
            done
        done
    done
}

# best_mean LABEL BAR: prints the mean of `ratios`, its cells over 1.05 and
# the worst, and sets bad=1 when the mean is over BAR.
best_mean() {
    local label=$1 bar=$2 mean
    mean=$(printf '%s\n' "${ratios[@]}" | awk '{s += $1; n++} END {printf "%.4f", n ? s / n : 99}')
    echo "$label: mean ratio ${mean} over ${#ratios[@]} cells (bar $bar)"
    printf '%s\n' "${ratios[@]}" | awk -v k="$label" '{if ($1 > 1.05) o++; if ($1 > w) w = $1} END {printf "%s: %d cells over 1.05, the worst %.3f\n", k, o, w}'
    awk -v m="$mean" -v b="$bar" 'BEGIN {exit !(m <= b)}' || bad=1
}
