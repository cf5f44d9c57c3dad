#!/usr/bin/env bash
# Screenshot of ViTE showing a Paje trace, without a display (Xvfb).
#   scripts/vite-screenshot.sh paje.trace out.png [T0:T1]
# T0:T1 is the time window in milliseconds (default: the whole trace).
# STRATA_VITE_WAIT: seconds to let ViTE load the trace (default 20).
set -euo pipefail
trace=$1 png=$2 window=${3:-}
size=1600x900
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 ${size}x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $vite $xvfb 2>/dev/null || true' EXIT
vite=
sleep 2
args=(-f "$trace")
[ -n "$window" ] && args+=(-t "$window")
DISPLAY=$display vite "${args[@]}" >/dev/null 2>&1 &
vite=$!
sleep "${STRATA_VITE_WAIT:-20}"
kill -0 $vite 2>/dev/null || { echo "vite-screenshot: ViTE exited early" >&2; exit 1; }
DISPLAY=$display xwd -root -silent | xwdtopnm 2>/dev/null | pnmcrop -black 2>/dev/null | pnmtopng >"$png"
echo "vite-screenshot: $png" >&2
