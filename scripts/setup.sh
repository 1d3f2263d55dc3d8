#!/usr/bin/env bash
# Installs what EcoCompute needs on Debian 12 (only what is missing), then the npm dev/test tools.
# Safe to run again: it does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git ca-certificates
          libjansson-dev libmicrohttpd-dev libsqlite3-dev sqlite3 libpcre2-dev libcmocka-dev
          clang-14 lld-14 libclang-rt-14-dev wasi-libc libclang-rt-14-dev-wasm32
          wrk chromium)
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
scripts/vendor-web.sh
echo "setup: done"
