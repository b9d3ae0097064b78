# Sourced by scripts/test and .ci/run: installs, idempotently, what the tests need.
#  - the thumbv7em-none-eabihf Rust target (firmware, core footprint);
#  - qemu-system-arm and binutils-arm-none-eabi (firmware flight test), from Debian, as root;
#  - chromium (the HTML report's rendering test), from Debian, as root;
#  - a Python virtualenv at .venv with pymavlink and mavsdk (independent MAVLink peers),
#    pyulog (reads the ULogs of --ulog)
#    and mcp (the MCP client of nexus serve's test).
# Exports NEXUS_PYTHON (the venv's python) for the tests that drive Python peers.

if ! rustup target list --installed 2>/dev/null | grep -qx thumbv7em-none-eabihf; then
  rustup target add thumbv7em-none-eabihf
fi

if ! command -v qemu-system-arm >/dev/null || ! command -v arm-none-eabi-size >/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends qemu-system-arm binutils-arm-none-eabi >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq && $SUDO apt-get install -y --no-install-recommends qemu-system-arm binutils-arm-none-eabi; }
fi

if ! command -v chromium >/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq && $SUDO apt-get install -y --no-install-recommends chromium; }
fi

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import pymavlink, mavsdk, mcp, pyulog' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r tests/py/requirements.txt
fi
NEXUS_PYTHON="$(pwd)/.venv/bin/python"
export NEXUS_PYTHON
