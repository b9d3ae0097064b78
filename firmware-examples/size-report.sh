#!/usr/bin/env bash
# Footprint of a release firmware binary against the MCU budget (64 KiB flash, 16 KiB RAM
# including the stack):
#   flash = .vector_table + .text + .rodata + .data (its initial values live in flash)
#   RAM   = .data + .bss + .uninit (static) + the stack high-water mark
# The high-water mark is measured at run time: the end-to-end test TEST runs BIN on QEMU against
# its simulated peer, and the firmware reports the deepest stack use (painted at reset) on exit.
#
#   firmware-examples/size-report.sh [BIN [TEST]]
#     BIN   firmware binary (default link_check)
#     TEST  exact name of the test in tests/tests/firmware_link.rs that runs it to success
#
# Needs arm-none-eabi-size and qemu-system-arm (scripts/env.sh installs both). Exits 1 when a
# budget is exceeded or the run fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${1:-link_check}"
test="${2:-firmware_link_check_passes_against_a_px4_like_peer_on_a_noisy_line}"
target_dir="${NEXUS_FIRMWARE_TARGET_DIR:-$root/target/firmware-examples}"
flash_budget=$((64 * 1024))
ram_budget=$((16 * 1024))

(cd "$here" && env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_TARGET \
  CARGO_TARGET_DIR="$target_dir" cargo build --quiet --release --bins --target thumbv7em-none-eabihf)
elf="$target_dir/thumbv7em-none-eabihf/release/$bin"

# Section sizes, decimal; absent sections count 0.
declare -A sec=()
while read -r name size _; do
  case "$name" in .*) sec[$name]=$size ;; esac
done < <(arm-none-eabi-size -A -d "$elf")
s() { echo "${sec[$1]:-0}"; }
flash=$(($(s .vector_table) + $(s .text) + $(s .rodata) + $(s .data)))
static_ram=$(($(s .data) + $(s .bss) + $(s .uninit)))

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! (cd "$root" && NEXUS_FIRMWARE_TARGET_DIR="$target_dir" \
  cargo test --quiet -p nexus-tests --test firmware_link -- --exact "$test" --nocapture) >"$log" 2>&1; then
  cat "$log"
  echo "size-report: the run of $bin ($test) failed" >&2
  exit 1
fi
stack=$(sed -n 's/.*stack: high-water mark \([0-9]*\) of .*/\1/p' "$log" | tail -n 1)
if [ -z "$stack" ]; then
  cat "$log"
  echo "size-report: no stack report in the run's output" >&2
  exit 1
fi
ram=$((static_ram + stack))

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
echo "firmware $bin (release: opt-level s, LTO, codegen-units 1, panic abort)"
printf '  flash %6d B (%s) of %s: .vector_table %d + .text %d + .rodata %d + .data %d\n' \
  "$flash" "$(kib "$flash")" "$(kib $flash_budget)" \
  "$(s .vector_table)" "$(s .text)" "$(s .rodata)" "$(s .data)"
printf '  RAM   %6d B (%s) of %s: static %d (.data %d + .bss %d + .uninit %d) + stack high-water %d\n' \
  "$ram" "$(kib "$ram")" "$(kib $ram_budget)" \
  "$static_ram" "$(s .data)" "$(s .bss)" "$(s .uninit)" "$stack"
echo "  stack measured by: cargo test -p nexus-tests --test firmware_link -- --exact $test"

status=0
[ "$flash" -le "$flash_budget" ] || { echo "size-report: flash over budget" >&2; status=1; }
[ "$ram" -le "$ram_budget" ] || { echo "size-report: RAM over budget" >&2; status=1; }
exit $status
