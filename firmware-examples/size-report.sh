#!/usr/bin/env bash
# Footprint of a release firmware binary against its budget. The MCU has 64 KiB of flash and 16 KiB
# of RAM; the mission firmware is held to less, to leave room for the application: 48 KiB of flash
# (measured 48 952 B) and 12 KiB of RAM including the stack (measured in each run, ~11.2 KB);
# firmware-examples/README.md's Footprint section says where the flash goes and how it got there:
#   flash = .vector_table + .text + .rodata + .data (its initial values live in flash)
#   RAM   = .data + .bss + .uninit (static) + the stack high-water mark
# The high-water mark is measured at run time: an end-to-end test runs BIN on QEMU against its
# peer to success, and the firmware reports the deepest stack use (painted at reset) on exit.
#
#   firmware-examples/size-report.sh [BIN [TEST]]
#     BIN   firmware binary: mission (default), link_check, mission_embassy (the same flight on
#           embassy-executor, the same budget; its figures are printed against the `nb` mission
#           firmware's)
#     TEST  exact name of the test that runs BIN to success (default: the one for BIN, in
#           tests/tests/firmware_mission.rs or tests/tests/firmware_link.rs)
#
# For the mission firmware it also prints the core's footprint: the mission firmware minus the
# bring-up baseline (link_check: UART, pump, framing, message decoding, telemetry, logging),
# i.e. what the wait engine, the offboard machine, the plan reader and the Client add (with the
# mission's own code and its stored .plan). The core's own target, 48 KiB of flash, is
# checked too.
#
# Needs arm-none-eabi-size and qemu-system-arm (scripts/env.sh installs both). Exits 1 when a
# budget is exceeded or the run fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${1:-mission}"
case "$bin" in
  mission)
    suite=firmware_mission
    default_test=firmware_mission_flies_the_box_mission_through_the_bridge ;;
  link_check)
    suite=firmware_link
    default_test=firmware_link_check_passes_against_a_px4_like_peer_on_a_noisy_line ;;
  mission_embassy)
    suite=firmware_mission
    default_test=firmware_mission_embassy_flies_the_box_mission_through_the_bridge ;;
  *) echo "size-report: unknown firmware '$bin' (mission, link_check, mission_embassy)" >&2; exit 2 ;;
esac
test="${2:-$default_test}"
target_dir="${NEXUS_FIRMWARE_TARGET_DIR:-$root/target/firmware-examples}"
flash_budget=$((64 * 1024))
ram_budget=$((16 * 1024))
if [ "$bin" = mission ]; then
  flash_budget=$((48 * 1024))
  ram_budget=$((12 * 1024))
fi
core_flash_budget=$((48 * 1024))

(cd "$here" && env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_TARGET \
  CARGO_TARGET_DIR="$target_dir" cargo build --quiet --release --bins --target thumbv7em-none-eabihf)
release="$target_dir/thumbv7em-none-eabihf/release"

# Section sizes of ELF $1 into the associative array named $2 (decimal; absent sections 0).
sections() {
  local -n into=$2
  while read -r name size _; do
    case "$name" in .*) into[$name]=$size ;; esac
  done < <(arm-none-eabi-size -A -d "$1")
}
declare -A sec=() base=()
sections "$release/$bin" sec
s() { echo "${sec[$1]:-0}"; }
flash=$(($(s .vector_table) + $(s .text) + $(s .rodata) + $(s .data)))
static_ram=$(($(s .data) + $(s .bss) + $(s .uninit)))

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! (cd "$root" && NEXUS_FIRMWARE_TARGET_DIR="$target_dir" \
  cargo test --quiet -p nexus-tests --test "$suite" -- --exact "$test" --nocapture) >"$log" 2>&1; then
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
echo "firmware $bin (release: opt-level s, mavlink z, inline-threshold 12, machine outliner, ICF, LTO, codegen-units 1, panic abort)"
printf '  flash %6d B (%s) of %s: .vector_table %d + .text %d + .rodata %d + .data %d\n' \
  "$flash" "$(kib "$flash")" "$(kib $flash_budget)" \
  "$(s .vector_table)" "$(s .text)" "$(s .rodata)" "$(s .data)"
printf '  RAM   %6d B (%s) of %s: static %d (.data %d + .bss %d + .uninit %d) + stack high-water %d\n' \
  "$ram" "$(kib "$ram")" "$(kib $ram_budget)" \
  "$static_ram" "$(s .data)" "$(s .bss)" "$(s .uninit)" "$stack"
echo "  stack measured by: cargo test -p nexus-tests --test $suite -- --exact $test"

if [ "$bin" = mission ]; then
  sections "$release/link_check" base
  b() { echo "${base[$1]:-0}"; }
  base_flash=$(($(b .vector_table) + $(b .text) + $(b .rodata) + $(b .data)))
  client=$(sed -n 's/.*core client \([0-9]*\) bytes.*/\1/p' "$log" | head -n 1)
  core_flash=$((flash - base_flash))
  plan_bytes=$(sed -n 's/.*from a \([0-9]*\)-byte \.plan.*/\1/p' "$log" | head -n 1)
  echo "core footprint (engine + offboard machine + plan reader + Client, thumbv7em release):"
  printf '  flash %6d B (%s) of %s = mission %d - link_check baseline %d (includes the %s-byte .plan)\n' \
    "$core_flash" "$(kib "$core_flash")" "$(kib $core_flash_budget)" "$flash" "$base_flash" \
    "${plan_bytes:-?}"
  printf '  RAM   %6s B: size_of the Client<%s> the firmware runs (on its stack)\n' \
    "${client:-?}" "WAITS 2, TEXTS 4, ITEMS 16, STEPS 0"
fi

if [ "$bin" = mission_embassy ]; then
  declare -A nb=()
  sections "$release/mission" nb
  n() { echo "${nb[$1]:-0}"; }
  nb_flash=$(($(n .vector_table) + $(n .text) + $(n .rodata) + $(n .data)))
  nb_static=$(($(n .data) + $(n .bss) + $(n .uninit)))
  echo "against the nb mission firmware (same flight, blocking loop; its stack: size-report.sh mission):"
  printf '  flash %+6d B (%d vs %d), static RAM %+6d B (%d vs %d)\n' \
    $((flash - nb_flash)) "$flash" "$nb_flash" $((static_ram - nb_static)) "$static_ram" "$nb_static"
  echo "  (the flight's state is in the task's future, a static, here; on main's stack there)"
fi

status=0
[ "$flash" -le "$flash_budget" ] || { echo "size-report: $bin flash over budget by $((flash - flash_budget)) B" >&2; status=1; }
[ "$ram" -le "$ram_budget" ] || { echo "size-report: $bin RAM over budget by $((ram - ram_budget)) B" >&2; status=1; }
if [ "$bin" = mission ] && [ "$core_flash" -gt "$core_flash_budget" ]; then
  echo "size-report: core footprint over its 48 KiB target by $((core_flash - core_flash_budget)) B" >&2
  status=1
fi
exit $status
