#!/usr/bin/env bash
# Fuzz the safetensors reader for a bounded time: builds tests/io/fuzz_safetensors.cpp with clang's
# libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer from the reader and the file opening
# under it (tally/io/safetensors_reader.cpp and regular_file.cpp, which need
# nothing else of the library), seeds it with valid files
# written by numpy (interop.py) and the malformed catalogue (make_malformed.py), and runs it.
# Exits non-zero on a finding (crash, sanitizer report, uncaught exception, leak, timeout); the
# input that caused it is saved under OUT_DIR/artifacts/.
#
#   tests/io/run_fuzz.sh [OUT_DIR] [SECONDS]        (defaults: build-fuzz, 60)
#
# Needs clang++ and libFuzzer (Debian: clang, libclang-rt-14-dev) and python3 with numpy.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-$root/build-fuzz}" && cd "${1:-$root/build-fuzz}" && pwd)
seconds=${2:-60}
cxx=${CXX_FUZZ:-clang++}
python=${PYTHON:-/usr/bin/python3}

"$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
  -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wno-unknown-warning-option -Werror \
  -I"$root" "$root/tally/io/safetensors_reader.cpp" "$root/tally/io/regular_file.cpp" "$root/tally/io/checksum.cpp" \
  "$root/tests/io/fuzz_safetensors.cpp" -lxxhash -o "$out/fuzz_safetensors"

rm -rf "$out/seeds"
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts"
"$python" "$root/tests/io/interop.py" write "$out/seeds/valid" > /dev/null
"$python" "$root/tests/io/make_malformed.py" "$out/seeds/malformed" > /dev/null
rm -f "$out/seeds/malformed/manifest.tsv" "$out/seeds/valid/expected.json"

# corpus/ keeps what the fuzzer finds interesting between runs; seeds/ is read only.
set +e
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$out/fuzz_safetensors" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$root/tests/io/safetensors.dict" -artifact_prefix="$out/artifacts/" \
  "$out/corpus" "$out/seeds/valid" "$out/seeds/malformed" > "$out/fuzz.log" 2>&1
status=$?
set -e
# The log without the per-input progress lines: the start, any finding, and the final stats.
grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+NEW_FUNC|# Uses: [0-9]+$' "$out/fuzz.log" | tail -n 60 || true
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log")
echo "fuzz_safetensors: exit ${status}, ${runs:-0} inputs executed (time limit ${seconds} s)"
if [ "$status" -ne 0 ] || [ "${runs:-0}" -lt 1000 ]; then
  echo "fuzz_safetensors: FAILED (see $out/fuzz.log and $out/artifacts/)" >&2
  exit 1
fi
