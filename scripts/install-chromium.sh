#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard's browser tests when it is missing (browsers are
# not downloaded by Playwright here). Needs root or sudo; prints where chromium is.
set -euo pipefail
if ! command -v chromium >/dev/null; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q chromium >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
fi
command -v chromium
