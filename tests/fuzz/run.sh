#!/bin/sh
# run.sh DIR - run each fuzz target in DIR (the build's tests/fuzz) for
# $FUZZ_SECONDS (default 60) seconds, one after the other, and fail if any
# finds a crash, a leak, a sanitizer report or a timeout.
#
# Each target starts from DIR/seeds/<name>/ and keeps what it finds
# interesting in DIR/corpus/<name>/ (reused by the next run); a crashing
# input goes to DIR/artifacts/<name>-crash-<sha1> and the log to
# DIR/fuzz_<name>.log.  The last lines of each log are the figures the README
# records: executions, exec/s, cov: and ft: (coverage), corpus size.
#
# Knobs: FUZZ_SECONDS, FUZZ_TARGETS ("manifest pack gguf seal build ep" by default;
# add ggml, with MOEPACK_GGML_LIB naming ggml's libggml-base.so, for the
# differential target).
set -u
dir=$1
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-manifest pack gguf seal build ep}

# Per target: the largest input worth trying.  pack: the seed pack's header
# and index (42,048 bytes) with room to grow; manifest: the seed manifests
# are ~2.5 KB; gguf: the fixtures are up to 16,000 bytes.
max_len() {
	case $1 in
	manifest) echo 8192 ;;
	pack) echo 65536 ;;
	ep) echo 16384 ;;
	gguf) echo 32768 ;;
	seal) echo 4096 ;;
	build) echo 262144 ;;
	ggml) echo 32768 ;;
	esac
}

[ -d "$dir/seeds" ] || { echo "run.sh: no $dir/seeds (make fuzz first)" >&2; exit 2; }
mkdir -p "$dir/artifacts"
failed=0
for t in $targets; do
	mkdir -p "$dir/corpus/$t"
	log=$dir/fuzz_$t.log
	echo "fuzz_$t: ${seconds}s, -max_len=$(max_len "$t"), log $log"
	"$dir/fuzz_$t" -max_len="$(max_len "$t")" -max_total_time="$seconds" \
		-timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts/$t-" \
		"$dir/corpus/$t" "$dir/seeds/$t" >"$log" 2>&1
	rc=$?
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	echo "fuzz_$t: exit $rc, ${execs:-?} executions, ${speed:-?} exec/s;" \
		"${done_line:-no DONE line}"
	if [ "$rc" -ne 0 ]; then
		failed=1
		echo "fuzz_$t FAILED: the end of its log:" >&2
		tail -n 60 "$log" >&2
		ls -l "$dir/artifacts" >&2
	fi
done
exit "$failed"
